/*
 * hdr.h - HdrHistogram: a histogram of integer values (nanoseconds here)
 * with a fixed number of significant digits over a wide range, in fixed
 * memory, and its percentile output in HdrHistogram's "classic" format.
 * (HdrHistogram_c is not packaged in Debian; this follows its bucket
 * layout and iterators so the numbers and the table read the same.)
 *
 * Where HdrHistogram_c reports a bucket's highest equivalent value, which
 * can exceed every value recorded (one span of 96,613 ns has a p50 of
 * 96,639 there), values here are clamped to [min, max], which are exact:
 * the true percentile lies in both ranges. The mean and standard deviation
 * are those of the values (exact integer sums), not of bucket midpoints.
 */
#ifndef EMBER_UTIL_HDR_H
#define EMBER_UTIL_HDR_H

#include "io/writer.h"

#include <stdbool.h>
#include <stdint.h>

struct ember_hdr {
    int64_t lowest, highest;
    int sigfigs;
    int unit_magnitude;
    int sub_bucket_half_count_magnitude;
    int32_t sub_bucket_count, sub_bucket_half_count;
    int64_t sub_bucket_mask;
    int32_t bucket_count, counts_len;
    int64_t total, min, max;
    unsigned __int128 sum, sumsq; /* exact while total * highest^2 < 2^128:
                                    2^40 values of up to an hour in ns */
    int64_t *counts;
};

/* Values from lowest (>= 1) to highest, with sigfigs (1..5) digits. */
int ember_hdr_init(struct ember_hdr *h, int64_t lowest, int64_t highest, int sigfigs);
void ember_hdr_release(struct ember_hdr *h);
/* false when value is out of range (it is then not recorded). */
bool ember_hdr_record(struct ember_hdr *h, int64_t value);
/* Adds src's values to dst (same geometry). */
void ember_hdr_add(struct ember_hdr *dst, const struct ember_hdr *src);
/* Within [min, max], and within the precision of the exact percentile. */
int64_t ember_hdr_value_at_percentile(const struct ember_hdr *h, double percentile);
double ember_hdr_mean(const struct ember_hdr *h);
double ember_hdr_stddev(const struct ember_hdr *h);

/* The percentile table, values divided by scale (1000: ns shown as us). */
void ember_hdr_print_classic(const struct ember_hdr *h, struct ember_writer *w, int ticks_per_half,
                             double scale);

#endif
