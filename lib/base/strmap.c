/*
 * strmap.c - string-keyed open-addressing map (see strmap.h).
 */
#include "base/strmap.h"
#include "base/hash.h"
#include "base/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ember_strmap_init(struct ember_strmap *m)
{
    ember_arena_init(&m->arena);
    m->slots = calloc(64, sizeof(*m->slots));
    m->mask = 63;
    m->count = 0;
    return m->slots ? 0 : -ENOMEM;
}

void ember_strmap_release(struct ember_strmap *m)
{
    free(m->slots);
    m->slots = NULL;
    ember_arena_release(&m->arena);
}

static struct strmap_slot *find(struct strmap_slot *slots, size_t mask, const char *key, size_t len)
{
    for (size_t i = (size_t)ember_hash_bytes(key, len, 0) & mask;; i = (i + 1) & mask) {
        struct strmap_slot *s = &slots[i];
        if (!s->key || (s->len == len && memcmp(s->key, key, len) == 0))
            return s;
    }
}

static uint64_t slot_hash(const void *slot)
{
    const struct strmap_slot *s = slot;
    return ember_hash_bytes(s->key, s->len, 0);
}

static bool slot_used(const void *slot)
{
    return ((const struct strmap_slot *)slot)->key != NULL;
}

void *ember_strmap_get(const struct ember_strmap *m, const char *key, size_t len)
{
    struct strmap_slot *s = find(m->slots, m->mask, key, len);
    return s->key ? s->value : NULL;
}

int ember_strmap_put(struct ember_strmap *m, const char *key, size_t len, void *value)
{
    struct strmap_slot *s = find(m->slots, m->mask, key, len);
    if (s->key) {
        s->value = value;
        return 0;
    }
    if ((m->count + 1) * 2 > (size_t)m->mask + 1) {
        if (ember_table_grow((void **)&m->slots, &m->mask, sizeof(*m->slots), slot_hash,
                             slot_used) < 0)
            return -ENOMEM;
        s = find(m->slots, m->mask, key, len);
    }
    char *k = ember_arena_strndup(&m->arena, key, len);
    if (!k)
        return -ENOMEM;
    *s = (struct strmap_slot){k, len, value};
    m->count++;
    return 0;
}

static int slot_cmp(const void *va, const void *vb)
{
    const struct strmap_slot *a = va, *b = vb;
    int c = memcmp(a->key, b->key, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

struct strmap_slot *ember_strmap_sorted(const struct ember_strmap *m)
{
    struct strmap_slot *out = malloc((m->count + 1) * sizeof(*out));
    if (!out)
        return NULL;
    size_t n = 0;
    for (uint32_t i = 0; i <= m->mask; i++)
        if (m->slots[i].key)
            out[n++] = m->slots[i];
    qsort(out, n, sizeof(*out), slot_cmp);
    return out;
}
