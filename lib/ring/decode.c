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
            rec.nfields > EMBER_MAX_FIELDS || rec.name_len > EMBER_NAME_MAX ||
            rec.kind < EMBER_EV_BEGIN || rec.kind > EMBER_EV_EVENT)
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
