/*
 * strmap.c - string-keyed open-addressing map (see strmap.h).
 */
#include "strmap.h"
#include "hash.h"

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
    if ((m->count + 1) * 2 > m->mask + 1) {
        size_t nmask = m->mask * 2 + 1;
        struct strmap_slot *ns = calloc(nmask + 1, sizeof(*ns));
        if (!ns)
            return -ENOMEM;
        for (size_t i = 0; i <= m->mask; i++)
            if (m->slots[i].key)
                *find(ns, nmask, m->slots[i].key, m->slots[i].len) = m->slots[i];
        free(m->slots);
        m->slots = ns;
        m->mask = nmask;
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
    for (size_t i = 0; i <= m->mask; i++)
        if (m->slots[i].key)
            out[n++] = m->slots[i];
    qsort(out, n, sizeof(*out), slot_cmp);
    return out;
}
