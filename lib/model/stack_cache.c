/*
 * stack_cache.c - whole stacks to trie nodes (see stack_cache.h).
 */
#include "stack_cache.h"
#include "util/table.h"

#include <errno.h>
#include <stdlib.h>

struct stack_slot {
    uint64_t lo, hi;
    uint32_t node; /* 0: empty slot (the root is never a stack's node) */
};

/* At most 2^21 stacks cached (48 MiB of slots at half load). */
enum { STACK_CACHE_MAX = 1 << 21 };

int ember_stack_cache_init(struct ember_stack_cache *c)
{
    c->slots = calloc(1024, sizeof(*c->slots));
    c->mask = 1023;
    c->count = 0;
    return c->slots ? 0 : -ENOMEM;
}

void ember_stack_cache_release(struct ember_stack_cache *c)
{
    free(c->slots);
    c->slots = NULL;
}

static int walk_trie(struct ember_profile *p, uint32_t root, const uint32_t *frames, size_t n,
                     uint32_t *node)
{
    uint32_t at;
    int err = ember_profile_child_fast(p, EMBER_ROOT, root, &at);
    for (size_t i = n; i-- > 0 && !err;)
        err = ember_profile_child_fast(p, at, frames[i], &at);
    *node = at;
    return err;
}

static uint64_t slot_hash(const void *slot)
{
    return ((const struct stack_slot *)slot)->lo;
}

static bool slot_used(const void *slot)
{
    return ((const struct stack_slot *)slot)->node != 0;
}

static struct stack_slot *find(const struct ember_stack_cache *c, uint64_t lo, uint64_t hi)
{
    for (uint32_t i = (uint32_t)lo & c->mask;; i = (i + 1) & c->mask) {
        struct stack_slot *s = &c->slots[i];
        if (!s->node || (s->lo == lo && s->hi == hi))
            return s;
    }
}

bool ember_stack_cache_get(const struct ember_stack_cache *c, uint64_t lo, uint64_t hi,
                           uint32_t *node)
{
    const struct stack_slot *s = find(c, lo, hi);
    *node = s->node;
    return s->node != 0;
}

void ember_stack_cache_put(struct ember_stack_cache *c, uint64_t lo, uint64_t hi, uint32_t node)
{
    if (node == EMBER_ROOT || c->count >= STACK_CACHE_MAX)
        return;
    if ((c->count + 1) * 2 > c->mask + 1 &&
        ember_table_grow((void **)&c->slots, &c->mask, sizeof(*c->slots), slot_hash, slot_used) < 0)
        return; /* only a cache */
    struct stack_slot *s = find(c, lo, hi);
    if (!s->node)
        c->count++;
    *s = (struct stack_slot){lo, hi, node};
}

int ember_stack_cache_node(struct ember_stack_cache *c, struct ember_profile *p, uint32_t root,
                           const uint32_t *frames, size_t n, uint32_t *node)
{
    XXH128_hash_t h = XXH3_128bits_withSeed(frames, n * sizeof(*frames), root);
    if (ember_stack_cache_get(c, h.low64, h.high64, node))
        return 0;
    int err = walk_trie(p, root, frames, n, node);
    if (!err)
        ember_stack_cache_put(c, h.low64, h.high64, *node);
    return err;
}
