/*
 * test_text.c - control characters in text (lib/base/text.c): found
 * wherever they lie in a word, or across two (C1 in UTF-8), and escaped as
 * "\xNN", cut to whole escapes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/text.h"
#include "unit_profile.h"

/* Found wherever it lies in a word, or across two; cut to whole escapes. */
static void test_text_controls(void **state)
{
    (void)state;
    char s[24], buf[16];
    for (size_t at = 0; at < sizeof(s); at++)
        for (unsigned c = 0; c < 256; c++) {
            memset(s, 'a', sizeof(s));
            s[at] = (char)c;
            bool ctl = c < 0x20 || c == 0x7f;
            assert_int_equal(ember_text_has_ctl(s, sizeof(s)), ctl);
            if (at + 1 < sizeof(s)) {
                s[at] = '\xc2';
                s[at + 1] = (char)c;
                assert_int_equal(ember_text_has_ctl(s, sizeof(s)), ctl || (c >= 0x80 && c <= 0x9f));
            }
        }
    assert_int_equal(ember_text_escape("ab\x1b\x1b", 4, buf, 8), 10);
    assert_string_equal(buf, "ab\\x1b");
    assert_int_equal(ember_text_escape("ab\x1b", 3, buf, sizeof(buf)), 6);
    assert_string_equal(buf, "ab\\x1b");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_controls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
