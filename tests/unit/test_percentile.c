/*
 * test_percentile.c - the one percentile behind `ember trace stats`,
 * `latency` and `gc-stats` (base/percentile.h): by nearest rank, exact for
 * percentiles such as 99.9 that a double cannot hold, equal to the
 * definition (the smallest value that at least p% of the values do not
 * exceed) on random sets; mean and standard deviation those of the
 * values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "unit_random.h"
#include "base/percentile.h"

#include <math.h>
#include <stdlib.h>

/* The definition, by counting: the smallest value v with
 * 100 * #(values <= v) >= p * n (p = num/den), the smallest for p = 0. */
static int64_t by_definition(const struct ember_values *s, struct ember_percent p)
{
    for (size_t i = 0; i < s->n; i++) {
        size_t at_most = ember_values_at_most(s, s->v[i]);
        if ((unsigned __int128)at_most * 100 * p.den >= (unsigned __int128)p.num * s->n)
            return s->v[i];
    }
    return s->v[s->n - 1];
}

static void test_ranks(void **state)
{
    (void)state;
    const struct {
        struct ember_percent p;
        size_t n, rank;
    } cases[] = {
        {{999, 10}, 1000, 999}, /* the double 99.9 is above 99.9: 1000 */
        {{90, 1}, 10, 9},
        {{90, 1}, 688, 620},
        {{0, 1}, 5, 1},
        {{100, 1}, 5, 5},
        {{50, 1}, 1, 1},
        {{50, 1}, 2, 1},
        {{999999, 10000}, 1000000, 999999},
        {{7, 1}, 100, 7},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(ember_percentile_rank(cases[i].p, cases[i].n), cases[i].rank);
}

static void test_random_sets(void **state)
{
    (void)state;
    uint64_t seed = 0x2545f4914f6cdd1d;
    const struct ember_percent ps[] = {{0, 1},  {1, 10},   {1, 1},      {25, 1},  {50, 1}, {90, 1},
                                       {99, 1}, {999, 10}, {9999, 100}, {100, 1}, {775, 8}};
    for (int round = 0; round < 300; round++) {
        struct ember_values s = {0};
        size_t n = 1 + next_random(&seed) % (round % 10 == 0 ? 5 : 3000);
        int shift = 4 + (int)(next_random(&seed) % 36);
        long double sum = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t v = (int64_t)(next_random(&seed) >> (64 - shift));
            sum += v;
            assert_int_equal(ember_values_add(&s, v), 0);
        }
        ember_values_sort(&s);
        for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++)
            assert_int_equal(ember_percentile(&s, ps[k]), by_definition(&s, ps[k]));
        long double mean = sum / n, sq = 0;
        for (size_t i = 0; i < n; i++)
            sq += (s.v[i] - mean) * (s.v[i] - mean);
        assert_true(fabsl(ember_values_mean(&s) - mean) <= mean * 1e-12L);
        assert_true(fabsl(ember_values_stddev(&s) - sqrtl(sq / n)) <= mean * 1e-9L + 1e-9L);
        ember_values_release(&s);
    }
}

static void test_merge(void **state)
{
    (void)state;
    struct ember_values a = {0}, b = {0};
    for (int64_t v = 1; v <= 3; v++)
        assert_int_equal(ember_values_add(&a, 10 * v), 0);
    assert_int_equal(ember_values_add(&b, 5), 0);
    assert_int_equal(ember_values_merge(&a, &b), 0);
    ember_values_sort(&a);
    assert_int_equal(a.n, 4);
    assert_int_equal(ember_values_min(&a), 5);
    assert_int_equal(ember_percentile(&a, (struct ember_percent){50, 1}), 10);
    assert_int_equal(ember_values_max(&a), 30);
    ember_values_release(&a);
    ember_values_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranks),
        cmocka_unit_test(test_random_sets),
        cmocka_unit_test(test_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
