/*
 * u64map.h - a map from 64-bit keys to 32-bit values (library-internal),
 * for the readers that number things by ids they do not choose: callgrind's
 * name ids, call graph edges, Chrome's node and profile ids.
 *
 * Open addressing with linear probing; a slot is used when its `used` byte
 * is set, so every key (0 included) can be stored. The table doubles at half
 * full, which keeps probes short whatever the keys.
 */
#ifndef EMBER_BASE_U64MAP_H
#define EMBER_BASE_U64MAP_H

#include "base/hash.h"
#include "base/table.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct ember_u64slot {
    uint64_t key;
    uint32_t value;
    uint32_t used;
};

struct ember_u64map {
    struct ember_u64slot *slots;
    uint32_t mask;
    uint32_t count;
};

static inline uint64_t ember_u64slot_hash(const void *slot)
{
    return ember_hash_u64(((const struct ember_u64slot *)slot)->key);
}

static inline bool ember_u64slot_used(const void *slot)
{
    return ((const struct ember_u64slot *)slot)->used != 0;
}

static inline int ember_u64map_init(struct ember_u64map *m)
{
    m->mask = 63;
    m->count = 0;
    m->slots = calloc((size_t)m->mask + 1, sizeof(*m->slots));
    return m->slots ? 0 : -ENOMEM;
}

static inline void ember_u64map_release(struct ember_u64map *m)
{
    free(m->slots);
    m->slots = NULL;
}

/* Whether a slot holds a key. A new key's slot is published by its used,
 * written last: other threads may look keys up while one thread adds keys
 * that grow nothing (perf_data_raw.c's pd_raw_room). */
static inline bool ember_u64slot_taken(const struct ember_u64slot *s)
{
    return __atomic_load_n(&s->used, __ATOMIC_ACQUIRE) != 0;
}

/* The slot of key: the one holding it, or the free one where it belongs;
 * for the thread that adds keys (another may add one there meanwhile). */
static inline struct ember_u64slot *ember_u64map_slot(const struct ember_u64map *m, uint64_t key)
{
    for (uint32_t i = (uint32_t)ember_hash_u64(key) & m->mask;; i = (i + 1) & m->mask)
        if (!ember_u64slot_taken(&m->slots[i]) || m->slots[i].key == key)
            return &m->slots[i];
}

/* The slot key's probe starts at: to prefetch for a lookup soon, as a
 * large table's lookups are cache misses one after the other (prefetched
 * where the lookup's loop is: GCC drops a call to a function that only
 * prefetches, as it does nothing). */
static inline const struct ember_u64slot *ember_u64map_home(const struct ember_u64map *m,
                                                            uint64_t key)
{
    return &m->slots[(uint32_t)ember_hash_u64(key) & m->mask];
}

/* Each slot's used is read once: read again after the probe, it could
 * say taken where another thread has just added another key to the free
 * slot the probe ended on, and answer that key's value. */
static inline bool ember_u64map_get(const struct ember_u64map *m, uint64_t key, uint32_t *value)
{
    for (uint32_t i = (uint32_t)ember_hash_u64(key) & m->mask;; i = (i + 1) & m->mask) {
        const struct ember_u64slot *s = &m->slots[i];
        if (!ember_u64slot_taken(s))
            return false;
        if (s->key == key) {
            *value = s->value;
            return true;
        }
    }
}

/* Room for n keys more, made now: adding them then grows nothing (so
 * that other threads may look keys up meanwhile). */
static inline int ember_u64map_reserve(struct ember_u64map *m, size_t n)
{
    while (((size_t)m->count + n) * 2 > (size_t)m->mask + 1)
        if (ember_table_grow((void **)&m->slots, &m->mask, sizeof(*m->slots), ember_u64slot_hash,
                             ember_u64slot_used) < 0)
            return -ENOMEM;
    return 0;
}

/* Sets key's value, adding the key if it is new. */
static inline int ember_u64map_put(struct ember_u64map *m, uint64_t key, uint32_t value)
{
    struct ember_u64slot *s = ember_u64map_slot(m, key);
    if (!s->used) {
        if ((m->count + 1) * 2 > m->mask + 1) {
            int err = ember_table_grow((void **)&m->slots, &m->mask, sizeof(*m->slots),
                                       ember_u64slot_hash, ember_u64slot_used);
            if (err)
                return err;
            s = ember_u64map_slot(m, key);
        }
        s->key = key;
        s->value = value;
        __atomic_store_n(&s->used, 1, __ATOMIC_RELEASE);
        m->count++;
        return 0;
    }
    s->value = value;
    return 0;
}

#endif
