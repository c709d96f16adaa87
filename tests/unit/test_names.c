/*
 * test_names.c - the names-only views of a profile (lib/model/names.c):
 * the folded view makes frames whose spelling is one text ("x;y" and "x:y",
 * a newline and its escape) one frame; the exports' view keeps the names
 * as read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ember/transform.h"
#include "unit_profile.h"

/* The folded view makes "x;y" and "x:y" one frame, "x:y"; the exports'
 * view keeps the names as read. */
static void test_names_view_spells_semicolons(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new(), *v = NULL;
    uint32_t semi, colon, n1, n2;
    assert_int_equal(ember_profile_intern(p, "x;y", 3, &semi), 0);
    assert_int_equal(ember_profile_intern(p, "x:y", 3, &colon), 0);
    assert_int_equal(ember_profile_add_stack(p, &semi, 1, EMBER_ROOT_FIRST, (int64_t[]){2}, &n1),
                     0);
    assert_int_equal(ember_profile_add_stack(p, &colon, 1, EMBER_ROOT_FIRST, (int64_t[]){3}, &n2),
                     0);
    assert_false(ember_profile_is_names(p));
    assert_int_equal(ember_profile_function_names(p, &v), 0);
    assert_null(v);
    assert_int_equal(ember_profile_names(p, &v), 0);
    assert_non_null(v);
    assert_true(ember_profile_is_names(v));
    uint32_t one = ember_profile_child_lookup(v, EMBER_ROOT, 0);
    size_t len;
    assert_int_equal(ember_profile_frame_count(v), 1);
    assert_string_equal(ember_profile_frame_name(v, 0, &len), "x:y");
    assert_int_equal(ember_profile_self(v, one, 0), 5);
    ember_profile_free(v);
    ember_profile_free(p);
}

/* The folded view makes a name with a newline and the text of its
 * spelling one frame; a names-only profile whose one odd name has no ';'
 * gets a view too. */
static void test_names_view_escapes_controls(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new(), *v = NULL;
    uint32_t raw, spelled, n1, n2;
    assert_int_equal(ember_profile_intern(p, "a\nb", 3, &raw), 0);
    assert_int_equal(ember_profile_intern(p, "a\\x0ab", 6, &spelled), 0);
    assert_int_equal(ember_profile_add_stack(p, &raw, 1, EMBER_ROOT_FIRST, (int64_t[]){2}, &n1), 0);
    assert_int_equal(ember_profile_add_stack(p, &spelled, 1, EMBER_ROOT_FIRST, (int64_t[]){3}, &n2),
                     0);
    assert_false(ember_profile_is_names(p));
    assert_int_equal(ember_profile_names(p, &v), 0);
    assert_non_null(v);
    size_t len;
    assert_int_equal(ember_profile_frame_count(v), 1);
    assert_string_equal(ember_profile_frame_name(v, 0, &len), "a\\x0ab");
    assert_int_equal(ember_profile_self(v, ember_profile_child_lookup(v, EMBER_ROOT, 0), 0), 5);
    ember_profile_free(v);
    ember_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_view_spells_semicolons),
        cmocka_unit_test(test_names_view_escapes_controls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
