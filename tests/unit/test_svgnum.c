/*
 * test_svgnum.c - a flame graph's numbers without printf are printf's
 * numbers: "%.0f", "%.1f", "%.2f" and "%.15g" byte for byte, ties rounded
 * to even, the value read back as strtod reads it, on random values of
 * every magnitude, exact ties, signs and zeros.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "write/flame/flame_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545F4914F6CDD1DULL;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void check(double v)
{
    char got[64], want[64];
    for (unsigned prec = 0; prec <= 2; prec++) {
        double back;
        size_t n = ember_svg_fixed(got, v, prec, &back);
        snprintf(want, sizeof(want), "%.*f", (int)prec, v);
        if (strcmp(got, want) != 0 || n != strlen(want))
            fail_msg("%.17g with %u decimals: got \"%s\", printf writes \"%s\"", v, prec, got,
                     want);
        if (back != strtod(want, NULL))
            fail_msg("%.17g with %u decimals: read back as %.17g, not %.17g", v, prec, back,
                     strtod(want, NULL));
    }
    ember_svg_g15(got, v);
    snprintf(want, sizeof(want), "%.15g", v);
    if (strcmp(got, want) != 0)
        fail_msg("%.17g: got \"%s\", %%.15g writes \"%s\"", v, got, want);
}

static void test_like_printf(void **state)
{
    (void)state;
    static const double fixed[] = {
        0.0,     -0.0,   0.5,    1.5,     2.5,      0.125, 0.375,      0.25,
        0.75,    1.005,  2.675,  1e15,    1e15 - 1, 1e14,  1e14 - 0.5, 999999999999999.5,
        1e300,   -1e300, 5e-324, -5e-324, 1e-5,     -0.04, -0.05,      -0.051,
        1179.95, 10.05,  10.15,  10.25,   10.35};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        check(fixed[i]);
        check(-fixed[i]);
    }
    for (int i = 0; i < 300000; i++) {
        uint64_t r = next();
        double v;
        switch (i % 5) {
        case 0: /* pixels: 0 to 2000, any bits */
            v = (double)(r >> 11) / (double)(1ULL << 53) * 2000;
            break;
        case 1: /* exact binary fractions: ties at every precision */
            v = (double)(r % 4000000) / 1024;
            break;
        case 2: /* decimal-looking values */
            v = (double)(r % 10000000) / 1000.0;
            break;
        case 3: /* any magnitude */
            v = ldexp((double)(r >> 11), (int)(next() % 120) - 90);
            break;
        default: /* halves and integers, as y coordinates are */
            v = (double)(r % 2000000000000000ULL) / 2;
        }
        check(r & 1 ? v : -v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_like_printf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
