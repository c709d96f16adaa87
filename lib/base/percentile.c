/*
 * percentile.c - exact percentiles by nearest rank (see percentile.h).
 * Ranks are computed in 128-bit integers from the percentile's fraction;
 * the mean from the exact sum, the standard deviation from each value's
 * distance to it (no sum of squares to overflow: values may be near
 * INT64_MAX in a damaged file).
 */
#include "base/percentile.h"

#include "base/vec.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int ember_values_add(struct ember_values *s, int64_t value)
{
    if (EMBER_VEC_RESERVE(s->v, s->cap, s->n + 1) < 0)
        return -ENOMEM;
    s->v[s->n++] = value;
    return 0;
}

int ember_values_merge(struct ember_values *dst, const struct ember_values *src)
{
    if (!src->n)
        return 0;
    if (EMBER_VEC_RESERVE(dst->v, dst->cap, dst->n + src->n) < 0)
        return -ENOMEM;
    memcpy(dst->v + dst->n, src->v, src->n * sizeof(*src->v));
    dst->n += src->n;
    return 0;
}

static int by_value(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void ember_values_sort(struct ember_values *s)
{
    if (s->n > 1)
        qsort(s->v, s->n, sizeof(*s->v), by_value);
}

void ember_values_release(struct ember_values *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

size_t ember_percentile_rank(struct ember_percent p, size_t n)
{
    unsigned __int128 want = (unsigned __int128)p.num * n, per = (unsigned __int128)p.den * 100;
    unsigned __int128 rank = (want + per - 1) / per;
    return rank < 1 ? 1 : rank > n ? n : (size_t)rank;
}

int64_t ember_percentile(const struct ember_values *s, struct ember_percent p)
{
    return s->v[ember_percentile_rank(p, s->n) - 1];
}

/* The first index whose value exceeds value (values sorted). */
size_t ember_values_at_most(const struct ember_values *s, int64_t value)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->v[mid] <= value)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int64_t ember_values_min(const struct ember_values *s)
{
    return s->v[0];
}

int64_t ember_values_max(const struct ember_values *s)
{
    return s->v[s->n - 1];
}

static long double mean_of(const struct ember_values *s)
{
    __int128 sum = 0;
    for (size_t i = 0; i < s->n; i++)
        sum += s->v[i];
    return (long double)sum / (long double)s->n;
}

double ember_values_mean(const struct ember_values *s)
{
    return s->n ? (double)mean_of(s) : 0;
}

double ember_values_stddev(const struct ember_values *s)
{
    if (!s->n)
        return 0;
    long double mean = mean_of(s), sq = 0;
    for (size_t i = 0; i < s->n; i++)
        sq += ((long double)s->v[i] - mean) * ((long double)s->v[i] - mean);
    return (double)sqrtl(sq / (long double)s->n);
}
