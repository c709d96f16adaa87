/*
 * counters.c - a profile's counters over time (the heap in use of a heap
 * recording or a memtrace trace): named tracks of (time, value) points
 * that writers with a time axis draw and summaries take peaks from.
 *
 * Invariants: a counter's points are in time order (equal times allowed);
 * names and units live in the extra's arena; points are the reader's to
 * bound (a point per change would grow with the input).
 */
#include "model/profile_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ember_profile_counter_new(struct ember_profile *p, const char *name, const char *unit,
                              unsigned *index)
{
    struct ember_profile_extra *x = ember_profile_extra(p);
    if (!x || EMBER_VEC_RESERVE(x->counters, x->kcap, x->ncounters + 1) < 0)
        return -ENOMEM;
    struct ember_counter *c = &x->counters[x->ncounters];
    memset(c, 0, sizeof(*c));
    c->name = ember_arena_strndup(&x->arena, name, strlen(name));
    c->unit = ember_arena_strndup(&x->arena, unit, strlen(unit));
    if (!c->name || !c->unit)
        return -ENOMEM;
    *index = x->ncounters++;
    return 0;
}

int ember_profile_counter_add(struct ember_profile *p, unsigned counter, uint64_t time_ns,
                              int64_t value)
{
    if (!p->extra || counter >= p->extra->ncounters)
        return -EINVAL;
    struct ember_counter *c = &p->extra->counters[counter];
    if (c->n && time_ns < c->times[c->n - 1])
        return -EINVAL;
    size_t cap = c->cap;
    if (EMBER_VEC_RESERVE(c->times, cap, c->n + 1) < 0 ||
        EMBER_VEC_RESERVE(c->values, c->cap, c->n + 1) < 0)
        return -ENOMEM;
    c->times[c->n] = time_ns;
    c->values[c->n++] = value;
    return 0;
}

unsigned ember_profile_counter_count(const struct ember_profile *p)
{
    return p->extra ? p->extra->ncounters : 0;
}

const char *ember_profile_counter_name(const struct ember_profile *p, unsigned counter)
{
    return counter < ember_profile_counter_count(p) ? p->extra->counters[counter].name : NULL;
}

const char *ember_profile_counter_unit(const struct ember_profile *p, unsigned counter)
{
    return counter < ember_profile_counter_count(p) ? p->extra->counters[counter].unit : NULL;
}

size_t ember_profile_counter_points(const struct ember_profile *p, unsigned counter,
                                    const uint64_t **times, const int64_t **values)
{
    if (counter >= ember_profile_counter_count(p)) {
        *times = NULL;
        *values = NULL;
        return 0;
    }
    const struct ember_counter *c = &p->extra->counters[counter];
    *times = c->times;
    *values = c->values;
    return c->n;
}

int ember_profile_counters_like(struct ember_profile *dst, const struct ember_profile *src)
{
    for (unsigned k = 0; k < ember_profile_counter_count(src); k++) {
        const struct ember_counter *c = &src->extra->counters[k];
        unsigned to;
        int err = ember_profile_counter_new(dst, c->name, c->unit, &to);
        for (size_t i = 0; i < c->n && !err; i++)
            err = ember_profile_counter_add(dst, to, c->times[i], c->values[i]);
        if (err)
            return err;
    }
    return 0;
}

void ember_profile_counters_free(struct ember_profile_extra *x)
{
    for (unsigned k = 0; k < x->ncounters; k++) {
        free(x->counters[k].times);
        free(x->counters[k].values);
    }
    free(x->counters);
}
