/*
 * trace_time.c - see trace_time.h.
 */
#include "wire/trace_time.h"
#include "base/hash.h"
#include "base/vec.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The largest dur (>= 0) for which ts + dur, in doubles, is at most limit. */
static double fitted_dur(double ts, double limit)
{
    /* ts + (limit - ts) can round above limit, and no dur may give limit
     * exactly: step down a few ulps */
    double dur = limit - ts;
    for (int i = 0; i < 64 && dur > 0 && ts + dur > limit; i++)
        dur = nextafter(dur, -INFINITY);
    return dur > 0 ? dur : 0;
}

uint64_t ember_trace_name_hash(const char *name, size_t len, const char *suffix)
{
    uint64_t h = ember_hash_bytes(name, len, 0);
    return *suffix ? ember_hash_bytes(suffix, strlen(suffix), h) : h;
}

int ember_trace_starts_add(struct ember_trace_starts *s, const char *ts, uint64_t name)
{
    if (EMBER_VEC_RESERVE(s->v, s->cap, s->n + 1) < 0)
        return -ENOMEM;
    s->v[s->n++] = (struct ember_trace_start){strtod(ts, NULL), name};
    return 0;
}

static int by_time_name(const void *a, const void *b)
{
    const struct ember_trace_start *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

void ember_trace_starts_seal(struct ember_trace_starts *s)
{
    if (s->n > 1)
        qsort(s->v, s->n, sizeof(*s->v), by_time_name);
}

static bool starts_has(const struct ember_trace_starts *s, double at, uint64_t name)
{
    struct ember_trace_start key = {at, name};
    return s->n && bsearch(&key, s->v, s->n, sizeof(*s->v), by_time_name) != NULL;
}

void ember_trace_starts_release(struct ember_trace_starts *s)
{
    free(s->v);
    *s = (struct ember_trace_starts){0};
}

double ember_trace_viewer_dur(const struct ember_trace_starts *s,
                              const struct ember_trace_viewed *up, uint64_t name, double at,
                              double dur, double end, double t0)
{
    double limit = end - t0;
    if (starts_has(s, end, name))
        limit = nextafter(limit, -INFINITY);
    if (up && up->end < limit)
        limit = up->end;
    double d = at + dur > limit ? fitted_dur(at, limit) : dur;
    return up && up->at == at && d > up->dur ? up->dur : d;
}
