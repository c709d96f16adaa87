/*
 * test_latency.c - the latency table of `ember trace latency`
 * (lib/traceview/latency.c) on the values 1..1000 ns: mean and standard
 * deviation those of the values, the maximum and count in its footer, and
 * each row the value at its tick (the percentiles themselves are
 * test_percentile.c's).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "traceview/latency.h"
#include "base/percentile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The table of 1..1000 ns: the row at each tick p holds rank ceil(p * 10)
 * of 1000, so the value is that rank; the last row is the maximum at 1. */
static void test_latency_table(void **state)
{
    (void)state;
    struct ember_values s = {0};
    for (int64_t v = 1000; v >= 1; v--)
        assert_int_equal(ember_values_add(&s, v), 0);
    ember_values_sort(&s);
    struct buffer *b = calloc(1, sizeof(*b));
    struct ember_writer *w = malloc(sizeof(*w));
    assert_non_null(b);
    assert_non_null(w);
    struct ember_sink sink = {to_buffer, b};
    ember_writer_init(w, &sink);
    ember_latency_table(w, &s);
    assert_int_equal(ember_writer_flush(w), 0);
    double mean, stddev;
    assert_int_equal(
        sscanf(strstr(b->text, "#[Mean"), "#[Mean = %lf, StdDeviation = %lf]", &mean, &stddev), 2);
    assert_true(fabs(mean - 0.5005) <= 0.0005 && fabs(stddev - 0.288675) <= 0.0005);
    assert_non_null(strstr(b->text, "#[Max     =        1.000, Total count    =         1000]"));
    int rows = 0;
    double last = -1;
    for (char *line = strtok(b->text, "\n"); line; line = strtok(NULL, "\n")) {
        double value, p;
        long long count;
        if (sscanf(line, "%lf %lf %lld", &value, &p, &count) != 3)
            continue;
        assert_true(p > last);
        last = p;
        int64_t ns = llround(value * 1000);
        assert_int_equal(ns, p < 1 ? (int64_t)ceil(p * 1000 - 1e-9) + (p == 0) : 1000);
        assert_int_equal(count, ns);
        rows++;
    }
    assert_true(rows > 20);
    assert_true(last == 1.0);
    free(w);
    free(b);
    ember_values_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latency_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
