/*
 * name_cache.c - names to frame ids, a slot per name (see name_cache.h).
 */
#include "model/name_cache.h"
#include "base/table.h"

#include <errno.h>
#include <stdlib.h>

/* At most 2^17 names remembered (8 to 16 MiB of slots). */
enum { NAME_CACHE_MAX = 1 << 17 };

int ember_name_cache_init(struct ember_name_cache *c)
{
    *c = (struct ember_name_cache){.slots = ember_table_calloc(1024, sizeof(*c->slots)),
                                   .mask = 1023};
    return c->slots ? 0 : -ENOMEM;
}

void ember_name_cache_release(struct ember_name_cache *c)
{
    free(c->slots);
    *c = (struct ember_name_cache){0};
}

static uint64_t slot_hash(const void *slot)
{
    return ((const struct ember_name_slot *)slot)->hash;
}

static bool slot_used(const void *slot)
{
    return ((const struct ember_name_slot *)slot)->id != 0;
}

void ember_name_cache_put(struct ember_name_cache *c, const char *s, size_t n, uint64_t h,
                          uint32_t id)
{
    if (n > UINT16_MAX || c->count >= NAME_CACHE_MAX)
        return;
    /* at most 3/4 full: a lookup mostly reads one slot */
    if ((uint64_t)(c->count + 1) * 4 > (uint64_t)(c->mask + 1) * 3 &&
        ember_table_grow((void **)&c->slots, &c->mask, sizeof(*c->slots), slot_hash, slot_used) < 0)
        return; /* only a memo */
    uint32_t i = (uint32_t)h & c->mask;
    while (c->slots[i].id)
        i = (i + 1) & c->mask;
    struct ember_name_slot *e = &c->slots[i];
    e->hash = h;
    e->id = id + 1;
    e->len = (uint16_t)n;
    memcpy(e->text, s, n < EMBER_NAME_INLINE ? n : EMBER_NAME_INLINE);
    c->count++;
}
