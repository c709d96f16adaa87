/*
 * decode.c - site records and events (see decode.h and format.h).
 */
#include "decode.h"
#include "ember/trace.h"
#include "format.h"
#include "util/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ember_sites_update(struct ember_sites *st, const char *table, size_t used)
{
    size_t off = st->parsed;
    while (off + sizeof(struct ember_site_record) <= used) {
        struct ember_site_record rec;
        memcpy(&rec, table + off, sizeof(rec));
        if (rec.size < sizeof(rec) || rec.size % 8 || rec.size > used - off ||
            rec.nfields > EMBER_MAX_FIELDS || rec.kind < EMBER_EV_BEGIN ||
            rec.kind > EMBER_EV_EVENT)
            return -EINVAL;
        const char *p = table + off + sizeof(rec), *end = table + off + rec.size;
        if (rec.name_len > end - p || EMBER_VEC_RESERVE(st->sites, st->cap, st->n + 1) < 0)
            return rec.name_len > end - p ? -EINVAL : -ENOMEM;
        struct ember_trace_site *s = &st->sites[st->n];
        memset(s, 0, sizeof(*s));
        s->id = (uint32_t)(off / 8 + 1);
        s->kind = rec.kind;
        s->name = strndup(p, rec.name_len);
        p += rec.name_len;
        s->nfields = rec.nfields;
        int err = s->name ? 0 : -ENOMEM;
        for (unsigned i = 0; i < rec.nfields && !err; i++) {
            if (end - p < 2 || (unsigned char)p[1] > end - p - 2) {
                err = -EINVAL;
                break;
            }
            s->field_types[i] = (unsigned char)p[0];
            if (s->field_types[i] < EMBER_FT_I64 || s->field_types[i] > EMBER_FT_STR)
                err = -EINVAL;
            else if (!(s->field_names[i] = strndup(p + 2, (unsigned char)p[1])))
                err = -ENOMEM;
            p += 2 + (unsigned char)p[1];
        }
        st->n++; /* counted even when failing, so that release frees it */
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
        st->by_id[st->sites[i].id] = &st->sites[i];
    return 0;
}

void ember_sites_release(struct ember_sites *st)
{
    for (unsigned i = 0; i < st->n; i++) {
        free((char *)st->sites[i].name);
        for (unsigned k = 0; k < st->sites[i].nfields; k++)
            free((char *)st->sites[i].field_names[k]);
    }
    free(st->sites);
    free(st->by_id);
    memset(st, 0, sizeof(*st));
}

size_t ember_event_decode(const struct ember_sites *st, const char *p, size_t n,
                          struct ember_trace_event *e)
{
    if (n < EMBER_EVENT_HEADER)
        return 0;
    uint32_t id, size;
    memcpy(&id, p, 4);
    memcpy(&size, p + 4, 4);
    memcpy(&e->ticks, p + 8, 8);
    if (size < EMBER_EVENT_HEADER || size % 8 || size > n || id == 0 || id > st->max_id ||
        !st->by_id[id])
        return 0;
    e->site = st->by_id[id];
    size_t off = EMBER_EVENT_HEADER;
    for (unsigned i = 0; i < e->site->nfields; i++) {
        struct ember_trace_value *v = &e->v[i];
        memset(v, 0, sizeof(*v));
        if (e->site->field_types[i] == EMBER_FT_STR) {
            const char *nul = off < size ? memchr(p + off, '\0', size - off) : NULL;
            if (!nul)
                return 0;
            v->s = p + off;
            off += ((size_t)(nul - (p + off)) + 1 + 7) / 8 * 8;
        } else {
            if (off + 8 > size)
                return 0;
            uint64_t raw;
            memcpy(&raw, p + off, 8);
            if (e->site->field_types[i] == EMBER_FT_F64)
                memcpy(&v->f, &raw, 8);
            else
                v->i = (int64_t)raw;
            off += 8;
        }
    }
    return off <= size ? size : 0;
}
