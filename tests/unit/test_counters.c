/*
 * test_counters.c - a profile's counters over time (lib/model/counters.c):
 * points kept in time order (an earlier point refused), names and units
 * copied, bad indexes refused, and counters carried to a transform's
 * result with the meta (ember_profile_meta_like).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/profile_impl.h"

#include <errno.h>
#include <string.h>

static void test_points_in_order(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new();
    unsigned heap, other;
    char name[8];
    strcpy(name, "heap");
    assert_int_equal(ember_profile_counter_count(p), 0);
    assert_int_equal(ember_profile_counter_new(p, name, "bytes", &heap), 0);
    assert_int_equal(ember_profile_counter_new(p, "rss", "bytes", &other), 0);
    strcpy(name, "xxxx"); /* the profile keeps its own copy */
    assert_string_equal(ember_profile_counter_name(p, heap), "heap");
    assert_string_equal(ember_profile_counter_unit(p, other), "bytes");
    assert_null(ember_profile_counter_name(p, 2));
    for (int i = 0; i < 1000; i++)
        assert_int_equal(ember_profile_counter_add(p, heap, (uint64_t)i / 2, i * 10), 0);
    assert_int_equal(ember_profile_counter_add(p, heap, 3, 1), -EINVAL);
    assert_int_equal(ember_profile_counter_add(p, 7, 3, 1), -EINVAL);
    const uint64_t *t;
    const int64_t *v;
    assert_int_equal(ember_profile_counter_points(p, heap, &t, &v), 1000);
    assert_int_equal(t[999], 499);
    assert_int_equal(v[999], 9990);
    assert_int_equal(ember_profile_counter_points(p, other, &t, &v), 0);
    assert_int_equal(ember_profile_counter_points(p, 9, &t, &v), 0);
    assert_null(t);
    ember_profile_free(p);
}

static void test_carried_with_meta(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new(), *q = ember_profile_new();
    unsigned heap;
    assert_int_equal(ember_profile_counter_new(p, "heap", "bytes", &heap), 0);
    assert_int_equal(ember_profile_counter_add(p, heap, 5, 42), 0);
    assert_int_equal(ember_profile_counter_add(p, heap, 9, 7), 0);
    assert_int_equal(ember_profile_meta_like(q, p), 0);
    const uint64_t *t;
    const int64_t *v;
    assert_int_equal(ember_profile_counter_count(q), 1);
    assert_int_equal(ember_profile_counter_points(q, 0, &t, &v), 2);
    assert_int_equal(t[0], 5);
    assert_int_equal(v[1], 7);
    ember_profile_free(p);
    ember_profile_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_points_in_order),
        cmocka_unit_test(test_carried_with_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
