/*
 * latency.c - durations as HdrHistogram's "classic" percentile table and
 * a bar chart (see latency.h).
 *
 * The table's rows are HdrHistogram's percentile iterator's ticks: 5 per
 * halving of the distance left to 100% (0, 10, ..., 50, 55, ..., 75, 77.5,
 * ...), each the value at that percentile by nearest rank and how many
 * values do not exceed it, until the largest value, shown at 100%. A tick
 * is kept as the exact fraction 20 * k / 2^m percent (every step is 20 /
 * 2^m), so its rank is exact too. HdrHistogram shows a bucket's highest
 * value; here each is a duration measured.
 */
#include "traceview/latency.h"

#include <stdio.h>

/* 3 decimals of a microsecond: nanoseconds, exact. */
#define US(ns) ((double)(ns) / 1000.0)

/* The next tick after p: p + 100 / (5 * 2^(floor(log2(100 / (100 - p))) + 1)). */
static struct ember_percent next_tick(struct ember_percent p)
{
    uint64_t whole = 100 * p.den, left = whole - p.num;
    int halvings = 0;
    while (left && left << (halvings + 1) <= whole)
        halvings++;
    uint64_t step_den = (uint64_t)1 << (halvings + 1); /* step = 20 / step_den */
    while (p.den < step_den) {
        p.num *= 2;
        p.den *= 2;
    }
    p.num += 20 * (p.den / step_den);
    return p;
}

void ember_latency_table(struct ember_writer *w, const struct ember_values *s)
{
    ember_writer_printf(w, "%12s %12s %12s %12s\n\n", "Value", "Percentile", "TotalCount",
                        "1/(1-Percentile)");
    for (struct ember_percent p = {0, 1};; p = next_tick(p)) {
        int64_t value = ember_percentile(s, p);
        size_t count = ember_values_at_most(s, value);
        if (count == s->n) {
            ember_writer_printf(w, "%12.3f %12f %12zu %12s\n", US(value), 1.0, count, "inf");
            break;
        }
        double f = (double)p.num / (double)p.den / 100.0;
        ember_writer_printf(w, "%12.3f %12f %12zu %12.2f\n", US(value), f, count, 1.0 / (1.0 - f));
    }
    ember_writer_printf(w, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n",
                        US(ember_values_mean(s)), US(ember_values_stddev(s)));
    ember_writer_printf(w, "#[Max     = %12.3f, Total count    = %12zu]\n", US(ember_values_max(s)),
                        s->n);
}

void ember_put_duration(struct ember_writer *w, double ns)
{
    if (ns < 1e3)
        ember_writer_printf(w, " %9.0fns", ns);
    else if (ns < 1e6)
        ember_writer_printf(w, " %9.3fus", ns / 1e3);
    else if (ns < 1e9)
        ember_writer_printf(w, " %9.3fms", ns / 1e6);
    else
        ember_writer_printf(w, " %9.3fs ", ns / 1e9);
}

/* 0 and 1 count in the lowest range, [1, 2). */
static int power_of_two(int64_t v)
{
    return v > 1 ? 63 - __builtin_clzll((unsigned long long)v) : 0;
}

void ember_latency_chart(struct ember_writer *w, const struct ember_values *s)
{
    uint64_t bins[64] = {0}, most = 0;
    for (size_t i = 0; i < s->n; i++)
        bins[power_of_two(s->v[i])]++;
    for (int k = 0; k < 64; k++)
        most = bins[k] > most ? bins[k] : most;
    ember_writer_puts(w, "\n      duration from  count\n");
    int lo = power_of_two(ember_values_min(s)), hi = power_of_two(ember_values_max(s));
    for (int k = lo; k <= hi; k++) {
        ember_put_duration(w, (double)(1ULL << k));
        int width = (int)((double)bins[k] * 50 / (double)most + 0.5);
        ember_writer_printf(w, " %9llu |", (unsigned long long)bins[k]);
        for (int x = 0; x < width; x++)
            ember_writer_puts(w, "#");
        ember_writer_puts(w, "\n");
    }
}
