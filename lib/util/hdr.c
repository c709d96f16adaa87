/*
 * hdr.c - HdrHistogram (see hdr.h).
 *
 * Values are counted in buckets of 2^k-wide sub-buckets: bucket b holds
 * values [2^(b + m) ... 2^(b + m + 1)) in sub_bucket_half_count steps, so
 * every value is recorded within its significant digits. Values reported
 * (percentiles, the table) stay within [min, max] of what was recorded;
 * min, max, mean and standard deviation are exact.
 */
#include "hdr.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int count_leading_zeros(int64_t v)
{
    return __builtin_clzll((unsigned long long)v);
}

int ember_hdr_init(struct ember_hdr *h, int64_t lowest, int64_t highest, int sigfigs)
{
    if (lowest < 1 || sigfigs < 1 || sigfigs > 5 || highest < 2 * lowest)
        return -EINVAL;
    memset(h, 0, sizeof(*h));
    h->lowest = lowest;
    h->highest = highest;
    h->sigfigs = sigfigs;
    int64_t largest_single_unit = 2 * (int64_t)pow(10, sigfigs);
    int32_t sub_bucket_count_magnitude = (int32_t)ceil(log((double)largest_single_unit) / log(2));
    h->sub_bucket_half_count_magnitude =
        (sub_bucket_count_magnitude > 1 ? sub_bucket_count_magnitude : 1) - 1;
    h->unit_magnitude = (int)floor(log((double)lowest) / log(2));
    h->sub_bucket_count = (int32_t)pow(2, h->sub_bucket_half_count_magnitude + 1);
    h->sub_bucket_half_count = h->sub_bucket_count / 2;
    h->sub_bucket_mask = ((int64_t)h->sub_bucket_count - 1) << h->unit_magnitude;
    int64_t smallest_untrackable = (int64_t)h->sub_bucket_count << h->unit_magnitude;
    int32_t buckets = 1;
    while (smallest_untrackable <= highest) {
        if (smallest_untrackable > INT64_MAX / 2) {
            buckets++;
            break;
        }
        smallest_untrackable <<= 1;
        buckets++;
    }
    h->bucket_count = buckets;
    h->counts_len = (buckets + 1) * (h->sub_bucket_count / 2);
    h->counts = calloc((size_t)h->counts_len, sizeof(*h->counts));
    h->min = INT64_MAX;
    return h->counts ? 0 : -ENOMEM;
}

void ember_hdr_release(struct ember_hdr *h)
{
    free(h->counts);
    h->counts = NULL;
}

static int32_t bucket_index(const struct ember_hdr *h, int64_t v)
{
    int32_t pow2ceiling = 64 - count_leading_zeros(v | h->sub_bucket_mask);
    return pow2ceiling - h->unit_magnitude - (h->sub_bucket_half_count_magnitude + 1);
}

static int32_t sub_bucket_index(const struct ember_hdr *h, int64_t v, int32_t b)
{
    return (int32_t)(v >> (b + h->unit_magnitude));
}

static int32_t counts_index(const struct ember_hdr *h, int32_t b, int32_t sb)
{
    int32_t base = (b + 1) << h->sub_bucket_half_count_magnitude;
    return base + sb - h->sub_bucket_half_count;
}

static int64_t value_from_index(const struct ember_hdr *h, int32_t b, int32_t sb)
{
    return (int64_t)sb << (b + h->unit_magnitude);
}

static int64_t value_at_index(const struct ember_hdr *h, int32_t index)
{
    int32_t b = (index >> h->sub_bucket_half_count_magnitude) - 1;
    int32_t sb = (index & (h->sub_bucket_half_count - 1)) + h->sub_bucket_half_count;
    if (b < 0) {
        sb -= h->sub_bucket_half_count;
        b = 0;
    }
    return value_from_index(h, b, sb);
}

static int64_t size_of_equivalent_range(const struct ember_hdr *h, int64_t v)
{
    int32_t b = bucket_index(h, v);
    int32_t sb = sub_bucket_index(h, v, b);
    int32_t adjusted = sb >= h->sub_bucket_count ? b + 1 : b;
    return (int64_t)1 << (h->unit_magnitude + adjusted);
}

static int64_t lowest_equivalent(const struct ember_hdr *h, int64_t v)
{
    int32_t b = bucket_index(h, v);
    return value_from_index(h, b, sub_bucket_index(h, v, b));
}

static int64_t highest_equivalent(const struct ember_hdr *h, int64_t v)
{
    return lowest_equivalent(h, v) + size_of_equivalent_range(h, v) - 1;
}

bool ember_hdr_record(struct ember_hdr *h, int64_t v)
{
    if (v < 0)
        return false;
    int32_t b = bucket_index(h, v);
    int32_t idx = counts_index(h, b, sub_bucket_index(h, v, b));
    if (idx < 0 || idx >= h->counts_len || v > h->highest)
        return false;
    h->counts[idx]++;
    h->total++;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->sum += (unsigned __int128)v;
    h->sumsq += (unsigned __int128)v * (unsigned __int128)v;
    return true;
}

void ember_hdr_add(struct ember_hdr *dst, const struct ember_hdr *src)
{
    for (int32_t i = 0; i < dst->counts_len && i < src->counts_len; i++)
        dst->counts[i] += src->counts[i];
    dst->total += src->total;
    dst->min = src->min < dst->min ? src->min : dst->min;
    dst->max = src->max > dst->max ? src->max : dst->max;
    dst->sum += src->sum;
    dst->sumsq += src->sumsq;
}

/* A bucket's highest equivalent value, brought into [min, max]: the value
 * at a percentile is in both ranges, and min and max are exact. */
static int64_t in_range(const struct ember_hdr *h, int64_t v)
{
    return v > h->max ? h->max : v < h->min ? h->min : v;
}

int64_t ember_hdr_value_at_percentile(const struct ember_hdr *h, double p)
{
    double requested = p < 100.0 ? p : 100.0;
    int64_t want = (int64_t)((requested / 100.0) * (double)h->total + 0.5);
    if (want < 1)
        want = 1;
    int64_t seen = 0;
    for (int32_t i = 0; i < h->counts_len; i++) {
        seen += h->counts[i];
        if (seen >= want)
            return in_range(h, highest_equivalent(h, value_at_index(h, i)));
    }
    return 0;
}

/* From the exact sums: HdrHistogram's mean of bucket midpoints can lie
 * outside [min, max] (one value of 96,613 ns has a mean of 96,608). */
double ember_hdr_mean(const struct ember_hdr *h)
{
    return h->total ? (double)((long double)h->sum / (long double)h->total) : 0;
}

/* The population's, as HdrHistogram's: E[x^2] - E[x]^2 from exact sums,
 * in long double (one value gives exactly 0: both terms round alike). */
double ember_hdr_stddev(const struct ember_hdr *h)
{
    if (!h->total)
        return 0;
    long double n = (long double)h->total, mean = (long double)h->sum / n;
    long double var = (long double)h->sumsq / n - mean * mean;
    return var > 0 ? (double)sqrtl(var) : 0;
}

/* HdrHistogram's percentile iterator: report points get denser towards
 * 100%, ticks_per_half steps per halving of the remaining distance. */
void ember_hdr_print_classic(const struct ember_hdr *h, struct ember_writer *w, int ticks_per_half,
                             double scale)
{
    ember_writer_printf(w, "%12s %12s %12s %12s\n\n", "Value", "Percentile", "TotalCount",
                        "1/(1-Percentile)");
    int64_t seen = 0;
    double next = 0.0;
    bool done = false;
    for (int32_t i = 0; i < h->counts_len && !done && h->total; i++) {
        if (!h->counts[i])
            continue;
        seen += h->counts[i];
        int64_t value = in_range(h, highest_equivalent(h, value_at_index(h, i)));
        double current = 100.0 * (double)seen / (double)h->total;
        while (current >= next && !done) {
            double p = next / 100.0;
            if (seen == h->total) {
                p = 1.0;
                done = true;
            }
            if (p < 1.0)
                ember_writer_printf(w, "%12.*f %12f %12lld %12.2f\n", h->sigfigs,
                                    (double)value / scale, p, (long long)seen, 1.0 / (1.0 - p));
            else
                ember_writer_printf(w, "%12.*f %12f %12lld %12s\n", h->sigfigs,
                                    (double)value / scale, 1.0, (long long)seen, "inf");
            if (next >= 100.0)
                break;
            double ticks = ticks_per_half * pow(2, floor(log2(100.0 / (100.0 - next))) + 1);
            next += 100.0 / ticks;
        }
    }
    ember_writer_printf(w, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n",
                        ember_hdr_mean(h) / scale, ember_hdr_stddev(h) / scale);
    ember_writer_printf(w, "#[Max     = %12.3f, Total count    = %12lld]\n",
                        (double)(h->total ? h->max : 0) / scale, (long long)h->total);
    ember_writer_printf(w, "#[Buckets = %12d, SubBuckets     = %12d]\n", h->bucket_count,
                        h->sub_bucket_count);
}
