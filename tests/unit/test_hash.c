/*
 * test_hash.c - the hash of long texts (lib/base/hash.h, hash_long.c) is
 * XXH3 itself, at every length and alignment around the switch to it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/hash.h"
#include "unit_profile.h"

/* The dispatching hash of long texts is XXH3 itself, at every length and
 * alignment around the switch to it. */
static void test_hash_text128(void **state)
{
    (void)state;
    char buf[2100];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (char)below(256);
    for (size_t n = 0; n < 2048; n += n < 300 ? 1 : 37)
        for (size_t at = 0; at < 3; at++) {
            uint64_t got[2];
            ember_hash_text128(buf + at, n, got);
            XXH128_hash_t want = XXH3_128bits(buf + at, n);
            assert_true(got[0] == want.low64 && got[1] == want.high64);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_text128),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
