/*
 * test_decode.c - the ring reader's arithmetic (lib/tracefile/ring_decode.h): ticks
 * to nanoseconds exactly, against 128-bit division, at clock rates of
 * every size and for times before and after the origin.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tracefile/ring_decode.h"
#include "unit_random.h"

static int64_t slow_ns(uint64_t tps, int64_t dt)
{
    uint64_t a = dt < 0 ? -(uint64_t)dt : (uint64_t)dt;
    uint64_t ns = (uint64_t)((unsigned __int128)a * 1000000000 / tps);
    return dt < 0 ? -(int64_t)ns : (int64_t)ns;
}

static void test_ticks_to_ns_exact(void **state)
{
    (void)state;
    const uint64_t rates[] = {1,          3,           1000000,        999999999,
                              1000000000, 2399987654,  3000000000,     4294967297,
                              1ull << 34, 18446744073, 123456789012345};
    uint64_t seed = 0x9e3779b97f4a7c15;
    for (size_t k = 0; k < sizeof(rates) / sizeof(rates[0]); k++) {
        struct ember_ns_scale s;
        ember_ns_scale_init(&s, rates[k]);
        for (int i = 0; i < 200000; i++) {
            uint64_t r = next_random(&seed);
            int64_t dt = (int64_t)(r >> (1 + i % 40));
            if (i % 7 == 0)
                dt = -dt;
            if (i % 11 == 0)
                dt = (int64_t)(r % (rates[k] * 2 + 1)); /* near whole seconds */
            unsigned __int128 exact =
                (unsigned __int128)(dt < 0 ? -(uint64_t)dt : (uint64_t)dt) * 1000000000 / rates[k];
            if (exact >> 63)
                continue; /* beyond what a time can hold */
            assert_int_equal(ember_ticks_to_ns(&s, dt), slow_ns(rates[k], dt));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ticks_to_ns_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
