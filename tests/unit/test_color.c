/*
 * test_color.c - flamegraph.pl's colours, value for value: the name-seeded
 * default (Perl's drand48 seeded with the sum of code points), --hash's
 * namehash, every palette, and the differential scale.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "write/flame/color.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void rgb(const char *palette, enum ember_color_mode mode, const char *name, const char *want)
{
    char got[32];
    struct ember_rgb c = ember_color(palette, mode, name, strlen(name), EMBER_FRAME_USER, NULL);
    snprintf(got, sizeof(got), "rgb(%d,%d,%d)", c.r, c.g, c.b);
    assert_string_equal(got, want);
}

static void test_name_rand(void **state)
{
    (void)state;
    /* Perl: srand(sum of code points); rand() */
    assert_true(fabs(ember_name_rand("", 0) - 0.17082803610628972) < 1e-16);
    assert_true(fabs(ember_name_rand("main", 4) - 0.77859998431904742) < 1e-16);
    assert_true(fabs(ember_name_rand("foo", 3) - 0.31077604375696311) < 1e-16);
    assert_true(fabs(ember_name_rand("\xc3\xa9", 2) - 0.067765955188409777) < 1e-16);
    assert_true(fabs(ember_name_rand("\xe6\x97\xa5\xe6\x9c\xac", 6) - 0.6796260535056753) < 1e-15);
}

static void test_namehash(void **state)
{
    (void)state;
    assert_true(fabs(ember_namehash("a", 1) - 0.61111111111111116) < 1e-15);
    assert_true(fabs(ember_namehash("main", 4) - 0.36335138216015961) < 1e-15);
    assert_true(fabs(ember_namehash("libc.so`malloc", 14) - 0.4890282131661442) < 1e-15);
    assert_true(fabs(ember_namehash("`x", 2) - 0.49382716049382713) < 1e-15);
}

static void test_palettes(void **state)
{
    (void)state;
    rgb("hot", EMBER_COLOR_NAME, "main", "rgb(243,179,42)");
    rgb("mem", EMBER_COLOR_NAME, "main", "rgb(0,228,163)");
    rgb("io", EMBER_COLOR_NAME, "main", "rgb(126,126,232)");
    rgb("red", EMBER_COLOR_NAME, "main", "rgb(242,112,112)");
    rgb("java", EMBER_COLOR_NAME, "java/lang/Thread.run", "rgb(79,227,79)");
    rgb("java", EMBER_COLOR_NAME, "do_syscall_64_[k]", "rgb(204,104,0)");
    rgb("java", EMBER_COLOR_NAME, "std::vector<int>::push_back", "rgb(219,219,66)");
    rgb("js", EMBER_COLOR_NAME, "LazyCompile:~foo /a/b.js:1", "rgb(102,248,102)");
    rgb("perl", EMBER_COLOR_NAME, "Perl_pp_entersub", "rgb(107,252,107)");
    rgb("chain", EMBER_COLOR_NAME, "x_[w]", "rgb(64,178,178)");
    rgb("chain", EMBER_COLOR_NAME, "main", "rgb(126,126,243)");
    rgb("hot", EMBER_COLOR_HASH, "main", "rgb(247,83,46)");
    rgb("hot", EMBER_COLOR_HASH, "", "rgb(255,230,55)");
    rgb("hot", EMBER_COLOR_NAME, "\xe6\x97\xa5\xe6\x9c\xac", "rgb(238,156,37)");
}

static void test_scale(void **state)
{
    (void)state;
    struct ember_rgb c = ember_color_scale(10, 10);
    assert_int_equal(c.r, 255);
    assert_int_equal(c.g, 0);
    c = ember_color_scale(-4, 10);
    assert_int_equal(c.r, 126);
    assert_int_equal(c.b, 255);
    c = ember_color_scale(0, 10);
    assert_int_equal(c.g, 255);
}

/* A frame's record decides its colour as its annotation would: a kernel
 * frame is orange in the java palette whatever its name. */
static void test_kind(void **state)
{
    (void)state;
    struct ember_rgb k = ember_color("java", EMBER_COLOR_NAME, "f", 1, EMBER_FRAME_KERNEL, NULL);
    assert_int_equal(k.b, 0); /* orange: (190.., 90.., 0) */
    assert_true(k.r >= 190 && k.g >= 90 && k.g < 156);
    struct ember_rgb j = ember_color("java", EMBER_COLOR_NAME, "f", 1, EMBER_FRAME_JIT, NULL);
    assert_true(j.g >= 200 && j.r == j.b); /* green */
    struct ember_rgb u = ember_color("java", EMBER_COLOR_NAME, "f", 1, EMBER_FRAME_USER, NULL);
    assert_true(u.r >= 200 && u.g == u.b); /* red */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_rand), cmocka_unit_test(test_namehash),
        cmocka_unit_test(test_palettes),  cmocka_unit_test(test_scale),
        cmocka_unit_test(test_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
