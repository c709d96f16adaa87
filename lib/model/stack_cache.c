/*
 * stack_cache.c - whole stacks to trie nodes (see stack_cache.h).
 */
#include "model/stack_cache.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

/* At most 2^21 stacks cached (48 MiB of slots at half load). */
enum { STACK_CACHE_MAX = 1 << 21 };

int ember_stack_cache_init(struct ember_stack_cache *c)
{
    *c = (struct ember_stack_cache){.slots = calloc(1024, sizeof(*c->slots)), .mask = 1023};
    return c->slots ? 0 : -ENOMEM;
}

void ember_stack_cache_release(struct ember_stack_cache *c)
{
    free(c->slots);
    free(c->path);
    free(c->nodes);
    *c = (struct ember_stack_cache){0};
}

/* The trie's node for root, frames[n-1] .. frames[0], starting below the
 * frames it shares with the previous stack. */
static int walk_trie(struct ember_stack_cache *c, struct ember_profile *p, uint32_t root,
                     const uint32_t *frames, size_t n, uint32_t *node)
{
    size_t len = n + 1, same = 0;
    if (EMBER_VEC_RESERVE(c->path, c->pcap, len) < 0 ||
        EMBER_VEC_RESERVE(c->nodes, c->ncap, len) < 0)
        return -ENOMEM;
    if (c->plen > 0 && c->path[0] == root)
        for (same = 1; same < c->plen && same < len && c->path[same] == frames[n - same];)
            same++;
    c->path[0] = root;
    for (size_t i = same > 1 ? same : 1; i < len; i++)
        c->path[i] = frames[n - i];
    c->plen = same;
    int err = ember_profile_child_path(p, same ? c->nodes[same - 1] : EMBER_ROOT, c->path + same,
                                       len - same, 1, c->nodes + same, node);
    if (!err)
        c->plen = len;
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
    /* The root is mixed in after hashing the frames, not given as XXH3's
     * seed: on short inputs the seed cancels out against a related change
     * of the data (root 1 with frames 2,3,1,5 and root 0 with 2,3,0,5 hash
     * the same), which gave one stack another's node. */
    uint64_t h[2];
    ember_hash_text128(frames, n * sizeof(*frames), h);
    h[0] ^= ember_hash_u64((uint64_t)root * 0x9E3779B97F4A7C15ULL + 1);
    h[1] ^= ember_hash_u64((uint64_t)root * 0xC2B2AE3D27D4EB4FULL + 2);
    if (ember_stack_cache_get(c, h[0], h[1], node))
        return 0;
    int err = walk_trie(c, p, root, frames, n, node);
    if (!err)
        ember_stack_cache_put(c, h[0], h[1], *node);
    return err;
}
