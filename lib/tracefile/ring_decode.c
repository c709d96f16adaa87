/*
 * ring_decode.c - site records and events (see ring_decode.h and wire/ring_format.h).
 */
#include "tracefile/ring_decode.h"
#include "ember/trace.h"
#include "wire/ring_format.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The one copy of a name: every site of that name points at it. */
static const char *intern(struct ember_sites *st, const char *p, size_t n)
{
    if (!st->names_made) {
        if (ember_strmap_init(&st->names) < 0)
            return NULL;
        st->names_made = true;
    }
    char *s = ember_strmap_get(&st->names, p, n);
    if (s)
        return s;
    s = ember_arena_strndup(&st->names.arena, p, n);
    return s && ember_strmap_put(&st->names, p, n, s) == 0 ? s : NULL;
}

/* Decodes the record at off (rec read from it) into a new site. */
static int decode_site(struct ember_sites *st, const char *table, size_t off,
                       const struct ember_site_record *rec)
{
    const char *p = table + off + sizeof(*rec), *end = table + off + rec->size;
    if (rec->name_len > end - p)
        return -EINVAL;
    struct ember_trace_site *s = calloc(1, sizeof(*s));
    if (!s || EMBER_VEC_RESERVE(st->sites, st->cap, st->n + 1) < 0) {
        free(s);
        return -ENOMEM;
    }
    st->sites[st->n++] = s;
    s->id = (uint32_t)(off / 8 + 1);
    s->kind = rec->kind;
    if (!(s->name = intern(st, p, rec->name_len)))
        return -ENOMEM;
    p += rec->name_len;
    s->nfields = rec->nfields;
    for (unsigned i = 0; i < rec->nfields; i++) {
        if (end - p < 2 || (unsigned char)p[1] > end - p - 2)
            return -EINVAL;
        s->field_types[i] = (unsigned char)p[0];
        if (s->field_types[i] < EMBER_FT_I64 || s->field_types[i] > EMBER_FT_STR)
            return -EINVAL;
        if (!(s->field_names[i] = intern(st, p + 2, (unsigned char)p[1])))
            return -ENOMEM;
        p += 2 + (unsigned char)p[1];
    }
    return 0;
}

int ember_sites_update(struct ember_sites *st, const char *table, size_t used)
{
    size_t off = st->parsed;
    while (off + sizeof(struct ember_site_record) <= used) {
        struct ember_site_record rec;
        memcpy(&rec, table + off, sizeof(rec));
        if (rec.size < sizeof(rec) || rec.size % 8 || rec.size > used - off ||
            rec.nfields > EMBER_MAX_FIELDS || rec.name_len > EMBER_NAME_MAX ||
            rec.kind < EMBER_EV_BEGIN || rec.kind > EMBER_EV_EVENT)
            return -EINVAL;
        int err = decode_site(st, table, off, &rec);
        if (err)
            return err;
        off += rec.size;
    }
    st->parsed = off;
    uint32_t max_id = (uint32_t)(off / 8 + 1);
    struct ember_trace_site **by_id = realloc(st->by_id, ((size_t)max_id + 1) * sizeof(*by_id));
    if (!by_id)
        return -ENOMEM;
    memset(by_id, 0, ((size_t)max_id + 1) * sizeof(*by_id));
    st->by_id = by_id;
    st->max_id = max_id;
    for (unsigned i = 0; i < st->n; i++)
        st->by_id[st->sites[i]->id] = st->sites[i];
    return 0;
}

void ember_sites_release(struct ember_sites *st)
{
    for (unsigned i = 0; i < st->n; i++)
        free(st->sites[i]);
    free(st->sites);
    free(st->by_id);
    if (st->names_made)
        ember_strmap_release(&st->names);
    memset(st, 0, sizeof(*st));
}
