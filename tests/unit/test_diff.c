/*
 * test_diff.c - the differential profile made in place
 * (lib/transform/diff.c): ember_profile_diff_into gives what
 * ember_profile_diff gives, and refuses frames with places, leaving the
 * profiles as they were.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ember/transform.h"
#include "unit_profile.h"

#include <errno.h>

/* BEFORE made the differential profile in place is the profile
 * ember_profile_diff makes: the same nodes, weights, totals, decimals and
 * values, from BEFORE's selected value (not its first), normalized too. */
static void test_diff_into_is_diff(void **state)
{
    (void)state;
    for (int normalize = 0; normalize < 2; normalize++) {
        struct ember_profile *before = two_values(3), *after = two_values(5), *want;
        struct ember_diff_opts o = {.normalize = normalize};
        /* AFTER's frame spelled with its place, as its views show it */
        struct ember_frame f = {.name = "f1",
                                .name_len = 2,
                                .file = "g.c",
                                .file_len = 3,
                                .line = 9,
                                .module = EMBER_NO_MODULE,
                                .place_in_name = true};
        uint32_t id, node;
        assert_int_equal(ember_profile_intern_frame(after, &f, &id), 0);
        assert_int_equal(ember_profile_child(after, EMBER_ROOT, id, &node), 0);
        assert_int_equal(ember_profile_add(after, node, 1, 11), 0);
        assert_int_equal(ember_profile_diff(before, after, &o, &want), 0);
        assert_int_equal(ember_profile_diff_into(before, after, &o), 0);
        const struct ember_profile *got = before;
        assert_true(ember_profile_is_differential(got));
        assert_int_equal(ember_profile_values(got), 2);
        assert_int_equal(ember_profile_selected(got), ember_profile_selected(want));
        assert_int_equal(ember_profile_decimals(got), ember_profile_decimals(want));
        assert_string_equal(ember_profile_sample_type(got), ember_profile_sample_type(want));
        assert_string_equal(ember_profile_unit(got), ember_profile_unit(want));
        assert_int_equal(ember_profile_node_count(got), ember_profile_node_count(want));
        for (unsigned v = 0; v < 2; v++) {
            assert_string_equal(ember_profile_value_type(got, v),
                                ember_profile_value_type(want, v));
            assert_int_equal(ember_profile_total(got, v), ember_profile_total(want, v));
            for (uint32_t n = 0; n < ember_profile_node_count(got); n++)
                assert_int_equal(ember_profile_self(got, n, v), ember_profile_self(want, n, v));
        }
        for (uint32_t n = 1; n < ember_profile_node_count(got); n++) {
            size_t la, lb;
            const char *a = ember_profile_frame_name(got, ember_profile_node_frame(got, n), &la);
            const char *b = ember_profile_frame_name(want, ember_profile_node_frame(want, n), &lb);
            assert_int_equal(la, lb);
            assert_memory_equal(a, b, la);
            assert_int_equal(ember_profile_node_parent(got, n), ember_profile_node_parent(want, n));
        }
        ember_profile_free(before);
        ember_profile_free(after);
        ember_profile_free(want);
    }
}

/* Frames with places are copied by name alone into a difference: BEFORE
 * is left as it is, for ember_profile_diff to do. */
static void test_diff_into_refuses_places(void **state)
{
    (void)state;
    struct ember_profile *before = two_values(1), *after = two_values(1);
    struct ember_frame f = {.name = "g",
                            .name_len = 1,
                            .file = "g.c",
                            .file_len = 3,
                            .line = 9,
                            .module = EMBER_NO_MODULE};
    uint32_t id, node;
    assert_int_equal(ember_profile_intern_frame(before, &f, &id), 0);
    assert_int_equal(ember_profile_child(before, EMBER_ROOT, id, &node), 0);
    uint32_t count = ember_profile_node_count(before);
    struct ember_diff_opts o = {0};
    assert_int_equal(ember_profile_diff_into(before, after, &o), -EINVAL);
    o.strip_hex = true;
    assert_int_equal(ember_profile_diff_into(after, before, &o), -EINVAL);
    assert_false(ember_profile_is_differential(before));
    assert_false(ember_profile_is_differential(after));
    assert_int_equal(ember_profile_values(before), 2);
    assert_int_equal(ember_profile_node_count(before), count);
    ember_profile_free(before);
    ember_profile_free(after);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_into_is_diff),
        cmocka_unit_test(test_diff_into_refuses_places),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
