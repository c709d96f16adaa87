/*
 * percentile.h - the one definition of a percentile in ember, that every
 * tool that prints one (trace stats, latency, gc-stats) computes here:
 * nearest rank, exact. The pth percentile of n values is the
 * ceil(p/100 * n)-th smallest (the smallest for p = 0): the smallest value
 * that at least p% of the values do not exceed, always a value measured,
 * never interpolated. HdrHistogram defines it so too, within its buckets;
 * here every value is kept (8 bytes each), so nothing is bucketed.
 *
 * A percentile is a fraction num/den (in percent), so that ranks are exact:
 * 99.9% of 1000 values is rank 999, which the double 99.9 (a little above)
 * would make 1000.
 */
#ifndef EMBER_BASE_PERCENTILE_H
#define EMBER_BASE_PERCENTILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* num/den percent; den > 0, num <= 100 * den. */
struct ember_percent {
    uint64_t num, den;
};

/* Values (durations in ns here), every one kept; sorted by
 * ember_values_sort before percentiles, min or max are asked. */
struct ember_values {
    int64_t *v;
    size_t n, cap;
};

int ember_values_add(struct ember_values *s, int64_t value); /* 0 or -ENOMEM */
/* Appends src's values to dst. */
int ember_values_merge(struct ember_values *dst, const struct ember_values *src);
void ember_values_sort(struct ember_values *s);
void ember_values_release(struct ember_values *s);

/* The 1-based rank of percentile p among n > 0 values: ceil(p/100 * n),
 * at least 1. */
size_t ember_percentile_rank(struct ember_percent p, size_t n);
/* Sorted, n > 0: the value at p by nearest rank. */
int64_t ember_percentile(const struct ember_values *s, struct ember_percent p);
/* Sorted: how many values are <= value. */
size_t ember_values_at_most(const struct ember_values *s, int64_t value);
/* Sorted, n > 0. */
int64_t ember_values_min(const struct ember_values *s);
int64_t ember_values_max(const struct ember_values *s);
/* Their mean and (population) standard deviation; 0 without values. */
double ember_values_mean(const struct ember_values *s);
double ember_values_stddev(const struct ember_values *s);

#endif
