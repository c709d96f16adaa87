/*
 * memtrace_live.h - what the memtrace profile keeps between an allocation
 * and its collection (library-internal): the sampled blocks not collected
 * yet, by allocation id, and the heap-over-time counter they make.
 *
 * Invariants: the ring and the table together hold exactly the
 * allocations seen and not yet collected, each once (memory grows with what the traced program
 * holds, never with the events read); the counter gets at most two points per millisecond (the
 * millisecond's last value, and before it the moment a new peak was reached in it), so the peak and
 * the last value are always exact.
 */
#ifndef EMBER_READ_MEMTRACE_LIVE_H
#define EMBER_READ_MEMTRACE_LIVE_H

#include "ember/model.h"

#include <stdbool.h>
#include <stdint.h>

/* A block allocated and not yet collected. node: its stack's node, or
 * UINT32_MAX when the allocation is outside the window read. */
struct mt_live_obj {
    uint64_t id;
    uint64_t nsamples, words;
    uint32_t node;
    uint32_t used;
};

/* The young blocks in a ring by the low bits of their id (most die young,
 * and a ring keeps those alive together side by side), older ones pushed
 * out of it into a hash table. */
enum { MT_LIVE_RING = 1 << 16 };
struct mt_live {
    struct mt_live_obj *ring;
    uint64_t in_ring;
    struct mt_live_obj *slots; /* the hash table */
    uint64_t mask, count;
};

int mt_live_init(struct mt_live *t);
void mt_live_release(struct mt_live *t);
int mt_live_put(struct mt_live *t, const struct mt_live_obj *o);
/* Removes id's block into *o: false when it is not held. */
bool mt_live_take(struct mt_live *t, uint64_t id, struct mt_live_obj *o);
/* How many blocks are held; copies them all into out (room for that many). */
uint64_t mt_live_count(const struct mt_live *t);
void mt_live_all(const struct mt_live *t, struct mt_live_obj *out);

/* The live sampled bytes over time, as a profile counter. */
struct mt_heap_track {
    struct ember_profile *p;
    unsigned counter;
    int64_t value, peak;
    uint64_t bucket, last_time; /* the current millisecond; the latest change's time (ns) */
    bool changed;               /* value changed within the current millisecond */
    bool peaked;                /* a new peak was reached within it ... */
    uint64_t peak_time;         /* ... at this time */
};

int mt_heap_track_init(struct mt_heap_track *h, struct ember_profile *p);
/* The heap changes by delta bytes at time_ns (an earlier time than the
 * last is taken as the last). */
int mt_heap_track_add(struct mt_heap_track *h, uint64_t time_ns, int64_t delta);
/* The last millisecond's points. */
int mt_heap_track_end(struct mt_heap_track *h);

#endif
