/*
 * memtrace_live.c - the blocks a memtrace trace has not collected yet (an
 * open-addressing table by allocation id, entries removed with backward
 * shifting so that no tombstones pile up over millions of short-lived
 * blocks), and the heap counter bounded to the millisecond.
 */
#include "read/memtrace/memtrace_live.h"
#include "base/hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { MT_MS = 1000000 };

int mt_live_init(struct mt_live *t)
{
    t->mask = 1023;
    t->count = t->in_ring = 0;
    t->slots = calloc(t->mask + 1, sizeof(*t->slots));
    t->ring = calloc(MT_LIVE_RING, sizeof(*t->ring));
    return t->slots && t->ring ? 0 : -ENOMEM;
}

void mt_live_release(struct mt_live *t)
{
    free(t->slots);
    free(t->ring);
    t->slots = t->ring = NULL;
}

/* A hash of the id: ids grouped in runs were tried (blocks alive together
 * side by side) and lost on real traces, whose long-lived blocks make the
 * runs collide. */
static uint64_t home(const struct mt_live *t, uint64_t id)
{
    return ember_hash_u64(id) & t->mask;
}

static int hash_put(struct mt_live *t, const struct mt_live_obj *o);

static int grow(struct mt_live *t)
{
    struct mt_live old = *t;
    t->mask = old.mask * 2 + 1;
    t->count = 0;
    if (!(t->slots = calloc(t->mask + 1, sizeof(*t->slots)))) {
        *t = old;
        return -ENOMEM;
    }
    for (uint64_t i = 0; i <= old.mask; i++)
        if (old.slots[i].used)
            hash_put(t, &old.slots[i]);
    free(old.slots);
    return 0;
}

static int hash_put(struct mt_live *t, const struct mt_live_obj *o)
{
    if ((t->count + 1) * 2 > t->mask + 1 && grow(t) < 0)
        return -ENOMEM;
    uint64_t i = home(t, o->id);
    while (t->slots[i].used && t->slots[i].id != o->id)
        i = (i + 1) & t->mask;
    t->count += !t->slots[i].used;
    t->slots[i] = *o;
    t->slots[i].used = 1;
    return 0;
}

/* A block goes to its ring slot; the older one there, if any, to the
 * table (ids may come in any order: a ring slot says whose it is). */
int mt_live_put(struct mt_live *t, const struct mt_live_obj *o)
{
    struct mt_live_obj *r = &t->ring[o->id & (MT_LIVE_RING - 1)];
    if (r->used && r->id != o->id) {
        int err = hash_put(t, r);
        if (err)
            return err;
    }
    t->in_ring += !r->used;
    *r = *o;
    r->used = 1;
    return 0;
}

uint64_t mt_live_count(const struct mt_live *t)
{
    return t->in_ring + t->count;
}

void mt_live_all(const struct mt_live *t, struct mt_live_obj *out)
{
    for (size_t i = 0; i < MT_LIVE_RING; i++)
        if (t->ring[i].used)
            *out++ = t->ring[i];
    for (uint64_t i = 0; i <= t->mask; i++)
        if (t->slots[i].used)
            *out++ = t->slots[i];
}

static bool hash_take(struct mt_live *t, uint64_t id, struct mt_live_obj *o);

bool mt_live_take(struct mt_live *t, uint64_t id, struct mt_live_obj *o)
{
    struct mt_live_obj *r = &t->ring[id & (MT_LIVE_RING - 1)];
    if (!r->used || r->id != id)
        return hash_take(t, id, o);
    *o = *r;
    r->used = 0;
    t->in_ring--;
    return true;
}

static bool hash_take(struct mt_live *t, uint64_t id, struct mt_live_obj *o)
{
    uint64_t i = home(t, id);
    while (t->slots[i].used && t->slots[i].id != id)
        i = (i + 1) & t->mask;
    if (!t->slots[i].used)
        return false;
    *o = t->slots[i];
    /* backward shift: move up each later entry of the run that may sit at i */
    for (uint64_t j = (i + 1) & t->mask; t->slots[j].used; j = (j + 1) & t->mask) {
        uint64_t h = home(t, t->slots[j].id);
        if (((j - h) & t->mask) >= ((j - i) & t->mask)) {
            t->slots[i] = t->slots[j];
            i = j;
        }
    }
    t->slots[i].used = 0;
    t->count--;
    return true;
}

int mt_heap_track_init(struct mt_heap_track *h, struct ember_profile *p)
{
    memset(h, 0, sizeof(*h));
    h->p = p;
    int err = ember_profile_counter_new(p, "heap", "bytes", &h->counter);
    return err ? err : ember_profile_counter_add(p, h->counter, 0, 0);
}

/* The points of the millisecond that ends: the new peak's moment, if any
 * (before the last change), then the last value. */
static int flush(struct mt_heap_track *h)
{
    int err = 0;
    if (h->peaked && h->peak_time < h->last_time)
        err = ember_profile_counter_add(h->p, h->counter, h->peak_time, h->peak);
    if (!err && h->changed)
        err = ember_profile_counter_add(h->p, h->counter, h->last_time, h->value);
    h->changed = h->peaked = false;
    return err;
}

int mt_heap_track_add(struct mt_heap_track *h, uint64_t time_ns, int64_t delta)
{
    int err = 0;
    /* v3 domains' packets interleave: each domain's times go forward, the
     * file's need not; the counter keeps the file's order */
    if (time_ns < h->last_time)
        time_ns = h->last_time;
    if (time_ns / MT_MS != h->bucket) {
        err = flush(h);
        h->bucket = time_ns / MT_MS;
    }
    h->value += delta;
    h->last_time = time_ns;
    h->changed = true;
    if (h->value > h->peak) {
        h->peak = h->value;
        h->peak_time = time_ns;
        h->peaked = true;
    }
    return err;
}

int mt_heap_track_end(struct mt_heap_track *h)
{
    return flush(h);
}
