/*
 * decode.h - the site table and events of a trace, decoded with every
 * length checked (library-internal; used by the reader and the follower).
 */
#ifndef EMBER_RING_DECODE_H
#define EMBER_RING_DECODE_H

#include "ember/tracefile.h"

#include <stddef.h>

struct ember_sites {
    struct ember_trace_site *sites;
    unsigned n;
    size_t cap;
    struct ember_trace_site **by_id; /* id -> site */
    uint32_t max_id;
    size_t parsed; /* bytes of the table decoded so far */
};

/* Decodes the records of table[sites->parsed, used): the table only grows,
 * so a follower calls this again as it does. -EINVAL if corrupt. */
int ember_sites_update(struct ember_sites *s, const char *table, size_t used);
void ember_sites_release(struct ember_sites *s);

/* Decodes the event at p (n bytes available); returns its size, or 0 if
 * it is not a valid event. String values point into p. */
size_t ember_event_decode(const struct ember_sites *s, const char *p, size_t n,
                          struct ember_trace_event *e);

/* Ticks to nanoseconds, exactly (floor(dt * 1e9 / ticks_per_sec)), without
 * a 128-bit division per event: a fixed-point reciprocal, then a correction
 * of the last unit. */
struct ember_ns_scale {
    uint64_t tps;
    unsigned __int128 m; /* floor(2^64 * 1e9 / tps) */
};

static inline void ember_ns_scale_init(struct ember_ns_scale *s, uint64_t ticks_per_sec)
{
    s->tps = ticks_per_sec;
    s->m = ((unsigned __int128)1000000000 << 64) / ticks_per_sec;
}

static inline int64_t ember_ticks_to_ns(const struct ember_ns_scale *s, int64_t dt)
{
    uint64_t a = dt < 0 ? -(uint64_t)dt : (uint64_t)dt;
    unsigned __int128 ns = (unsigned __int128)a * (uint64_t)(s->m >> 64) +
                           (((unsigned __int128)a * (uint64_t)s->m) >> 64);
    unsigned __int128 want = (unsigned __int128)a * 1000000000;
    while ((ns + 1) * s->tps <= want)
        ns++;
    return dt < 0 ? -(int64_t)ns : (int64_t)ns;
}

#endif
