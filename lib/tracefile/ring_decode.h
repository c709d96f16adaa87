/*
 * ring_decode.h - the site table and events of a trace, decoded with every
 * length checked (library-internal; used by lib/tracefile/ember_rings.c).
 *
 * Sites are allocated one by one and never move while the table grows (a
 * follower's events point at them); sites of one name share one name
 * pointer, so that span ends find their begins by comparing pointers.
 */
#ifndef EMBER_TRACEFILE_RING_DECODE_H
#define EMBER_TRACEFILE_RING_DECODE_H

#include "ember/trace.h"
#include "ember/tracefile.h"
#include "wire/ring_format.h"

#include "base/strmap.h"

#include <stddef.h>
#include <string.h>

struct ember_sites {
    struct ember_trace_site **sites; /* in table order */
    unsigned n;
    size_t cap;
    struct ember_trace_site **by_id; /* id -> site */
    uint32_t max_id;
    size_t parsed;             /* bytes of the table decoded so far */
    struct ember_strmap names; /* interned names and field names */
    bool names_made;
};

/* Decodes the records of table[sites->parsed, used): the table only grows,
 * so a follower calls this again as it does. -EINVAL if corrupt. */
int ember_sites_update(struct ember_sites *s, const char *table, size_t used);
void ember_sites_release(struct ember_sites *s);

/* Decodes the event at p (n bytes available); returns its size, or 0 if
 * it is not a valid event. String values point into p. Inline: readers
 * call it tens of millions of times a second. */
static inline size_t ember_event_decode(const struct ember_sites *st, const char *p, size_t n,
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
    if (!e->site->nfields)
        return size;
    for (unsigned i = 0; i < e->site->nfields; i++) {
        struct ember_trace_value *v = &e->v[i];
        memset(v, 0, sizeof(*v));
        if (e->site->field_types[i] == EMBER_FT_STR) {
            /* the writer keeps at most EMBER_MAX_STR bytes: longer is corrupt */
            size_t room = size - off < EMBER_MAX_STR + 1 ? size - off : EMBER_MAX_STR + 1;
            const char *nul = off < size ? memchr(p + off, '\0', room) : NULL;
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

/* Ticks to nanoseconds, exactly (floor(dt * 1e9 / ticks_per_sec)), without
 * a division per event: a fixed-point reciprocal m = floor(2^64 * 1e9 /
 * tps) gives the answer or one less; the remainder, below 2 * tps, tells
 * which, and fits in 64 bits. */
struct ember_ns_scale {
    uint64_t tps;
    uint64_t m_hi, m_lo; /* m, 128 bits */
};

static inline void ember_ns_scale_init(struct ember_ns_scale *s, uint64_t ticks_per_sec)
{
    unsigned __int128 m = ticks_per_sec ? ((unsigned __int128)1000000000 << 64) / ticks_per_sec : 0;
    s->tps = ticks_per_sec;
    s->m_hi = (uint64_t)(m >> 64);
    s->m_lo = (uint64_t)m;
}

/* Exact while the result fits in 64 bits and tps < 2^63 (readers refuse
 * rates from 2^62); wraps, never traps, on worse. */
static inline int64_t ember_ticks_to_ns(const struct ember_ns_scale *s, int64_t dt)
{
    uint64_t a = dt < 0 ? -(uint64_t)dt : (uint64_t)dt;
    uint64_t ns = a * s->m_hi + (uint64_t)(((unsigned __int128)a * s->m_lo) >> 64);
    if (a * 1000000000 - ns * s->tps >= s->tps)
        ns++;
    return dt < 0 ? -(int64_t)ns : (int64_t)ns;
}

#endif
