/*
 * test_hdr.c - the HdrHistogram behind `ember trace stats` and `latency`:
 * every percentile it reports lies in [min, max] of the values recorded
 * and within the histogram's precision of the exact percentile; the mean
 * and standard deviation are those of the values; the classic table
 * never shows a value outside [min, max].
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/hdr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The value of rank ceil(p% of n) (at least the first), as HdrHistogram
 * counts ranks. */
static int64_t exact_percentile(const int64_t *sorted, size_t n, double p)
{
    int64_t want = (int64_t)((p / 100.0) * (double)n + 0.5);
    if (want < 1)
        want = 1;
    return sorted[want - 1];
}

static void test_one_value(void **state)
{
    (void)state;
    const int64_t values[] = {1, 2, 791, 2049, 6249, 96613, 1000000007, 3600LL * 1000000000};
    for (size_t k = 0; k < sizeof(values) / sizeof(values[0]); k++) {
        struct ember_hdr h;
        assert_int_equal(ember_hdr_init(&h, 1, 3600LL * 1000000000, 3), 0);
        assert_true(ember_hdr_record(&h, values[k]));
        for (double p = 0; p <= 100; p += 12.5)
            assert_int_equal(ember_hdr_value_at_percentile(&h, p), values[k]);
        assert_true(ember_hdr_mean(&h) == (double)values[k]);
        assert_true(ember_hdr_stddev(&h) == 0.0);
        ember_hdr_release(&h);
    }
}

static void test_random_sets(void **state)
{
    (void)state;
    uint64_t seed = 0x2545f4914f6cdd1d;
    const double ps[] = {0, 0.1, 1, 25, 50, 90, 99, 99.9, 99.99, 100};
    for (int round = 0; round < 300; round++) {
        size_t n = 1 + next_random(&seed) % (round % 10 == 0 ? 5 : 3000);
        int shift = 4 + (int)(next_random(&seed) % 36);
        int64_t *v = malloc(n * sizeof(*v));
        assert_non_null(v);
        struct ember_hdr h;
        assert_int_equal(ember_hdr_init(&h, 1, 3600LL * 1000000000, 3), 0);
        long double sum = 0;
        for (size_t i = 0; i < n; i++) {
            v[i] = 1 + (int64_t)(next_random(&seed) >> (64 - shift));
            sum += v[i];
            assert_true(ember_hdr_record(&h, v[i]));
        }
        qsort(v, n, sizeof(*v), cmp_i64);
        for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
            int64_t got = ember_hdr_value_at_percentile(&h, ps[k]);
            int64_t exact = exact_percentile(v, n, ps[k]);
            assert_true(got >= v[0] && got <= v[n - 1]);
            /* 3 significant digits: within 1/1024 above the exact value */
            assert_true(got >= exact && got <= exact + exact / 1024 + 1);
        }
        long double mean = sum / n, sq = 0;
        for (size_t i = 0; i < n; i++)
            sq += (v[i] - mean) * (v[i] - mean);
        assert_true(fabsl(ember_hdr_mean(&h) - mean) <= mean * 1e-12L);
        assert_true(fabsl(ember_hdr_stddev(&h) - sqrtl(sq / n)) <= mean * 1e-6L);
        assert_true(ember_hdr_mean(&h) >= v[0] && ember_hdr_mean(&h) <= v[n - 1]);
        ember_hdr_release(&h);
        free(v);
    }
}

struct buffer {
    char text[1 << 16];
    size_t len;
};

static int to_buffer(void *ctx, const char *buf, size_t len)
{
    struct buffer *b = ctx;
    assert_true(b->len + len < sizeof(b->text));
    memcpy(b->text + b->len, buf, len);
    b->len += len;
    b->text[b->len] = '\0';
    return 0;
}

/* Every value in the table and its Max line lie in [min, max]. */
static void test_classic_table_in_range(void **state)
{
    (void)state;
    const int64_t sets[][3] = {{96613, 0, 0}, {6249, 6251, 0}, {1, 2049, 2050}};
    for (size_t k = 0; k < sizeof(sets) / sizeof(sets[0]); k++) {
        struct ember_hdr h;
        assert_int_equal(ember_hdr_init(&h, 1, 3600LL * 1000000000, 3), 0);
        for (int i = 0; i < 3 && sets[k][i]; i++)
            ember_hdr_record(&h, sets[k][i]);
        struct buffer *b = calloc(1, sizeof(*b));
        assert_non_null(b);
        struct ember_sink sink = {to_buffer, b};
        struct ember_writer *w = malloc(sizeof(*w));
        assert_non_null(w);
        ember_writer_init(w, &sink);
        ember_hdr_print_classic(&h, w, 5, 1000.0);
        assert_int_equal(ember_writer_flush(w), 0);
        double lo = (double)h.min / 1000.0, hi = (double)h.max / 1000.0;
        int rows = 0;
        for (char *line = strtok(b->text, "\n"); line; line = strtok(NULL, "\n")) {
            double value, p;
            double mean, max;
            if (sscanf(line, "%lf %lf", &value, &p) == 2) {
                assert_true(value >= lo - 0.0005 && value <= hi + 0.0005);
                rows++;
            } else if (sscanf(line, "#[Max = %lf", &max) == 1) {
                assert_true(fabs(max - hi) < 0.0005);
            } else if (sscanf(line, "#[Mean = %lf", &mean) == 1) {
                assert_true(mean >= lo - 0.0005 && mean <= hi + 0.0005);
            }
        }
        assert_true(rows > 0);
        free(w);
        free(b);
        ember_hdr_release(&h);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_value),
        cmocka_unit_test(test_random_sets),
        cmocka_unit_test(test_classic_table_in_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
