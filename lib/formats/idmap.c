/*
 * idmap.c - ids to values (see idmap.h): open addressing, linear probing,
 * at most half full so that probes stay short.
 */
#include "idmap.h"
#include "util/hash.h"
#include "util/table.h"

#include <errno.h>
#include <stdlib.h>

static uint64_t slot_hash(const void *slot)
{
    return ember_hash_u64(((const struct ember_idmap_slot *)slot)->key);
}

static bool slot_used(const void *slot)
{
    return ((const struct ember_idmap_slot *)slot)->used != 0;
}

void ember_idmap_release(struct ember_idmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->mask = 0;
    m->count = 0;
}

static struct ember_idmap_slot *find(const struct ember_idmap *m, uint64_t key)
{
    for (uint32_t i = (uint32_t)ember_hash_u64(key) & m->mask;; i = (i + 1) & m->mask)
        if (!m->slots[i].used || m->slots[i].key == key)
            return &m->slots[i];
}

bool ember_idmap_get(const struct ember_idmap *m, uint64_t key, uint32_t *value)
{
    if (!m->slots)
        return false;
    struct ember_idmap_slot *s = find(m, key);
    if (!s->used)
        return false;
    *value = s->value;
    return true;
}

int ember_idmap_put(struct ember_idmap *m, uint64_t key, uint32_t value)
{
    if (!m->slots) {
        m->slots = calloc(64, sizeof(*m->slots));
        if (!m->slots)
            return -ENOMEM;
        m->mask = 63;
    } else if (2 * (m->count + 1) > (size_t)m->mask + 1) {
        void *slots = m->slots;
        int err = ember_table_grow(&slots, &m->mask, sizeof(*m->slots), slot_hash, slot_used);
        if (err)
            return err;
        m->slots = slots;
    }
    struct ember_idmap_slot *s = find(m, key);
    if (!s->used)
        m->count++;
    *s = (struct ember_idmap_slot){key, value, 1};
    return 0;
}
