/*
 * test_ranges.c - address ranges searched by bisection (lib/symbol/ranges.c)
 * against a scan of every range: the range holding an address that starts
 * last (the innermost, when ranges nest), of those that start at one
 * address the first added; empty ranges ignored; an address outside every
 * range, and an empty table, not found. On random sets of nested,
 * overlapping and disjoint ranges.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "symbol/ranges.h"
#include "unit_random.h"

#include <errno.h>
#include <stdbool.h>

struct ref_range {
    uint64_t lo, hi, value;
};

/* The ranges a table keeps: not empty, the first added of those that
 * start at one address. Returns how many, moved to the front of all. */
static size_t ref_keep(struct ref_range *all, size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        bool first = all[i].hi > all[i].lo;
        for (size_t k = 0; k < kept && first; k++)
            first = all[k].lo != all[i].lo;
        if (first)
            all[kept++] = all[i];
    }
    return kept;
}

/* What ember_ranges_find must say, by a scan of the kept ranges. */
static int ref_find(const struct ref_range *kept, size_t n, uint64_t addr, uint64_t *value)
{
    const struct ref_range *best = NULL;
    for (size_t i = 0; i < n; i++)
        if (addr >= kept[i].lo && addr < kept[i].hi && (!best || kept[i].lo > best->lo))
            best = &kept[i];
    if (!best)
        return -ENOENT;
    *value = best->value;
    return 0;
}

static void test_against_a_scan(void **state)
{
    (void)state;
    enum { MAX = 200, SPAN = 1000 };
    uint64_t seed = 0x9e3779b97f4a7c15;
    for (int round = 0; round < 300; round++) {
        struct ember_ranges r;
        struct ref_range all[MAX];
        uint64_t starts[MAX];
        ember_ranges_init(&r);
        size_t n = next_random(&seed) % MAX;
        for (size_t i = 0; i < n; i++) {
            uint64_t lo = next_random(&seed) % SPAN,
                     len = next_random(&seed) % (round % 3 ? 40 : 400);
            all[i] = (struct ref_range){lo, i % 17 == 0 ? lo : lo + len, i};
            starts[i] = lo;
            assert_int_equal(ember_ranges_add(&r, all[i].lo, all[i].hi, all[i].value), 0);
        }
        assert_int_equal(ember_ranges_finish(&r), 0);
        n = ref_keep(all, n);
        for (uint64_t addr = 0; addr < SPAN + 450; addr++) {
            uint64_t got = UINT64_MAX, start = UINT64_MAX, want = UINT64_MAX;
            int err = ref_find(all, n, addr, &want);
            assert_int_equal(ember_ranges_find(&r, addr, &got, &start), err);
            if (err == 0) {
                assert_int_equal(got, want);
                assert_int_equal(start, starts[want]);
            }
        }
        ember_ranges_release(&r);
    }
}

static void test_empty(void **state)
{
    (void)state;
    struct ember_ranges r;
    uint64_t value, start;
    ember_ranges_init(&r);
    assert_int_equal(ember_ranges_add(&r, 5, 5, 1), 0); /* empty: ignored */
    assert_int_equal(ember_ranges_finish(&r), 0);
    assert_int_equal(ember_ranges_find(&r, 5, &value, &start), -ENOENT);
    ember_ranges_release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_against_a_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
