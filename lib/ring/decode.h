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

#endif
