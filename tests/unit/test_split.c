/*
 * test_split.c - the separator scan of lib/model/split.h against a byte
 * loop, at every density and length around its 64-byte blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/split.h"
#include "unit_profile.h"

/* ember_split against a byte loop: separators anywhere, runs of them,
 * more than eight in a 64-byte block, texts ending on and off a block;
 * each text in a buffer of its exact size, so that ASan sees a read past
 * it. */
static void test_split(void **state)
{
    (void)state;
    const char alphabet[] = ";;;ab:\\0x";
    for (unsigned round = 0; round < 3000; round++) {
        size_t n = below(300), from = n ? below((uint32_t)n) : 0;
        char *s = malloc(n ? n : 1);
        unsigned dense = below(4);
        for (size_t i = 0; i < n; i++)
            s[i] = dense == 0 ? ';' : alphabet[below(dense == 1 ? 3 : sizeof(alphabet) - 1)];
        size_t *ends = malloc((n - from + EMBER_SPLIT_SLACK) * sizeof(*ends));
        size_t k = ember_split(s, from, n, ';', ends), want = 0;
        for (size_t i = from; i < n; i++)
            if (s[i] == ';')
                assert_int_equal(ends[want++], i);
        assert_int_equal(ends[want++], n);
        assert_int_equal(k, want);
        free(ends);
        free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
