/*
 * test_name_cache.c - the name memo (lib/model/name_cache.h): names alike
 * in their first bytes, or differing only in length, are told apart, and
 * each gets the frame table's id, even when all hashes collide.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/name_cache.h"
#include "model/profile_impl.h"
#include "unit_profile.h"

/* The name memo keeps a name's first bytes: names alike there, or
 * differing only in length, are still told apart, and every name gets
 * the id the frame table gives it, even when all hashes collide (every
 * other round gives one hash for all). */
static void test_name_cache(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new();
    struct ember_name_cache c;
    assert_int_equal(ember_name_cache_init(&c), 0);
    char name[200];
    memset(name, 'x', sizeof(name));
    for (int round = 0; round < 4; round++)
        for (size_t n = 0; n < sizeof(name); n += 1 + n / 20)
            for (char last = 'a'; last <= 'c'; last++) {
                if (n)
                    name[n - 1] = last;
                uint32_t id, want;
                uint64_t h = round % 2 ? 42 : ember_name_hash(name, n);
                assert_int_equal(ember_name_cache_intern(&c, &p->frames, name, n, h, &id), 0);
                assert_int_equal(ember_profile_intern(p, name, n, &want), 0);
                assert_int_equal(id, want);
                if (n)
                    name[n - 1] = 'x';
            }
    ember_name_cache_release(&c);
    ember_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
