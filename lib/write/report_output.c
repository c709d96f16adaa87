/*
 * report_output.c - how the text reports write what they show: weights in
 * their units, totals in sentences, names as CSV or TSV fields.
 *
 * Invariants: a CSV field is quoted whenever it must be; a TSV field never
 * holds a tab or a line break; counts are exact, times and sizes rounded.
 */
#include "write/report_output.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A weight in a text column: times and sizes in their units ("42.5 ms"),
 * counts exact. */
void ember_report_put_weight(struct ember_writer *w, const struct ember_profile *p, int64_t v,
                             int width)
{
    char buf[64];
    if (!ember_unit_format(buf, sizeof(buf), (double)v / pow(10, ember_profile_decimals(p)),
                           ember_profile_unit(p)))
        ember_weight_format(buf, v, ember_profile_decimals(p));
    ember_writer_printf(w, "%*s", width, buf);
}

/* A total in a sentence: "75 ms of cpu", "2303 samples", "1.2e6 cycles";
 * the type as read, its control characters escaped as names are. */
void ember_report_total_text(char *buf, size_t cap, const struct ember_profile *p, int64_t v)
{
    char num[64], type[64];
    const char *read = ember_profile_sample_type(p);
    ember_text_escape(read, strlen(read), type, sizeof(type));
    if (ember_unit_format(num, sizeof(num), (double)v / pow(10, ember_profile_decimals(p)),
                          ember_profile_unit(p))) {
        snprintf(buf, cap, "%s of %s", num, type);
        return;
    }
    ember_weight_format(num, v, ember_profile_decimals(p));
    snprintf(buf, cap, "%s %s", num, type);
}

enum { PEAKS_SHOWN = 5 };

struct peak {
    int64_t value;
    uint64_t time;
    unsigned counter;
};

/* Counter k's highest point, the first time it was reached; false: no point. */
static bool counter_peak(const struct ember_profile *p, unsigned k, struct peak *pk)
{
    const uint64_t *times;
    const int64_t *values;
    size_t n = ember_profile_counter_points(p, k, &times, &values), top = 0;
    for (size_t i = 1; i < n; i++)
        top = values[i] > values[top] ? i : top;
    *pk = (struct peak){n ? values[top] : 0, n ? times[top] : 0, k};
    return n > 0;
}

static int by_peak(const void *a, const void *b)
{
    const struct peak *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? 1 : -1;
    return x->counter < y->counter ? -1 : x->counter > y->counter;
}

/* "peak heap 12.5 MiB at 1.234 s" for the counters over time with the
 * highest peaks (ns from the recording's start, shown in seconds to the
 * millisecond): at most PEAKS_SHOWN of them (a recording of a shell
 * pipeline has a counter per process), then how many more there are. */
void ember_report_peaks(struct ember_writer *w, const struct ember_profile *p)
{
    unsigned count = ember_profile_counter_count(p), n = 0;
    struct peak *peaks = count ? malloc(count * sizeof(*peaks)) : NULL;
    for (unsigned k = 0; k < count && peaks; k++)
        n += counter_peak(p, k, &peaks[n]);
    if (peaks)
        qsort(peaks, n, sizeof(*peaks), by_peak);
    for (unsigned i = 0; i < n && i < PEAKS_SHOWN; i++) {
        char v[64];
        const char *unit = ember_profile_counter_unit(p, peaks[i].counter);
        if (!ember_unit_format(v, sizeof(v), (double)peaks[i].value, unit))
            snprintf(v, sizeof(v), "%lld", (long long)peaks[i].value);
        ember_writer_printf(w, "peak %s %s at %.3f s\n",
                            ember_profile_counter_name(p, peaks[i].counter), v,
                            (double)peaks[i].time / 1e9);
    }
    if (n > PEAKS_SHOWN)
        ember_writer_printf(w, "(%u more counters with lower peaks)\n", n - PEAKS_SHOWN);
    free(peaks);
}

/* A name as a CSV field (quoted when it must be) or a TSV one (tabs and
 * line breaks, which TSV cannot hold, become spaces). */
void ember_report_put_field(struct ember_writer *w, enum ember_table fmt, const char *s, size_t n)
{
    if (fmt == EMBER_TABLE_TSV) {
        for (size_t i = 0; i < n; i++)
            ember_writer_put(w, s[i] == '\t' || s[i] == '\n' || s[i] == '\r' ? " " : s + i, 1);
        return;
    }
    if (!memchr(s, ',', n) && !memchr(s, '"', n) && !memchr(s, '\n', n) && !memchr(s, '\r', n)) {
        ember_writer_put(w, s, n);
        return;
    }
    ember_writer_put(w, "\"", 1);
    for (size_t i = 0; i < n; i++)
        ember_writer_put(w, s[i] == '"' ? "\"\"" : s + i, 1 + (s[i] == '"'));
    ember_writer_put(w, "\"", 1);
}

/* Numbers of a CSV/TSV row: ",weight,percent". */
void ember_report_put_cells(struct ember_writer *w, const struct ember_profile *p,
                            enum ember_table fmt, int64_t v, int64_t total)
{
    char buf[32], sep = fmt == EMBER_TABLE_TSV ? '\t' : ',';
    ember_weight_format(buf, v, ember_profile_decimals(p));
    ember_writer_printf(w, "%c%s%c%.4f", sep, buf, sep, ember_report_percent(v, total));
}

bool ember_report_name_is(const struct ember_profile *p, uint32_t f, const char *name)
{
    size_t len;
    const char *s = ember_profile_frame_name(p, f, &len);
    return len == strlen(name) && memcmp(s, name, len) == 0;
}
