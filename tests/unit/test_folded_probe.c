/*
 * test_folded_probe.c - one rule for a folded line without a count,
 * wherever it is: detection takes an input whose lines are mostly
 * "stack COUNT" (one bad line among the first ones no longer makes it
 * "unknown", and other formats are not taken for folded), and reading
 * skips such lines and says once, at the first, how many there were.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ember/read.h"
#include "ember/base.h"
#include "ember/model.h"
#include "read/read_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum ember_probe probe(const char *text)
{
    return ember_format_folded.probe(text, strlen(text));
}

static void test_probe(void **state)
{
    (void)state;
    assert_int_equal(probe("a;b 1\nc 2\n"), EMBER_PROBE_YES);
    /* a bad line first, in the middle, or last: still folded */
    assert_int_equal(probe("no count\na;b 1\nc 2\n"), EMBER_PROBE_MAYBE);
    assert_int_equal(probe("a;b 1\nno count\nc 2\n"), EMBER_PROBE_MAYBE);
    assert_int_equal(probe("a;b 1\nno count\n"), EMBER_PROBE_MAYBE);
    /* comments say nothing; mostly other text is not folded */
    assert_int_equal(probe("# from a tool\n# 2 columns\na;b 1\n"), EMBER_PROBE_YES);
    assert_int_equal(probe("one\ntwo\na;b 1\n"), EMBER_PROBE_NO);
    /* perf script and DTrace are not folded stacks */
    assert_int_equal(probe("prog 12 1.5: 1 cycles:\n\t4005b1 main (/bin/prog)\n\n"),
                     EMBER_PROBE_NO);
    assert_int_equal(probe("CPU ID FUNCTION:NAME\n 0 1 :tick\n\n  libc`f+0x1\n  12\n"),
                     EMBER_PROBE_NO);
    /* a count too large for 63 bits is a count: folded, and an error to read */
    assert_int_equal(probe("a 99999999999999999999\n"), EMBER_PROBE_YES);
}

static void test_census(void **state)
{
    (void)state;
    const char *text = "# c\na 1\n\nb\nc 2\nd\n";
    struct ember_folded_census c;
    ember_folded_census(text, strlen(text), &c);
    assert_int_equal(c.good, 2);
    assert_int_equal(c.bad, 2);
    assert_int_equal(c.first_bad, 4);
    assert_int_equal(c.bad_len, 1);
    assert_memory_equal(c.bad_text, "b", 1);
}

struct warned {
    unsigned n;
    struct ember_diag d;
};

static void warn_cb(void *ctx, const struct ember_diag *d)
{
    struct warned *w = ctx;
    w->n++;
    w->d = *d;
}

/* Detected and read from memory, threads readers; the warnings in w. */
static int read_text(const char *text, unsigned threads, struct warned *w, struct ember_diag *d)
{
    struct ember_input *in;
    struct ember_profile *p = ember_profile_new();
    const struct ember_format *fmt = NULL;
    struct ember_read_opts o;
    struct ember_read_stats st;
    memset(&o, 0, sizeof(o));
    memset(&st, 0, sizeof(st));
    o.threads = threads;
    o.warn = warn_cb;
    o.warn_ctx = w;
    assert_int_equal(ember_input_open_memory(&in, text, strlen(text), "x.folded", d), 0);
    int err = ember_format_detect(in, &fmt, d);
    if (!err)
        assert_ptr_equal(fmt, &ember_format_folded);
    if (!err)
        err = ember_format_read(fmt, p, in, &o, &st, d);
    if (!err)
        assert_int_equal(st.skipped, w->n ? 2 : 0);
    ember_input_close(in);
    ember_profile_free(p);
    return err;
}

static void test_skipped_lines_said_once(void **state)
{
    (void)state;
    for (unsigned threads = 1; threads <= 2; threads++) {
        struct warned w = {0};
        struct ember_diag d;
        assert_int_equal(read_text("a;b 1\nfirst bad\nc 2\nsecond bad\nd 3\n", threads, &w, &d), 0);
        assert_int_equal(w.n, 1);
        assert_string_equal(w.d.file, "x.folded");
        assert_int_equal(w.d.line, 2);
        assert_non_null(strstr(w.d.msg, "ignored 2 lines with invalid format"));
        assert_non_null(strstr(w.d.msg, "\"first bad\""));
    }
}

/* Where detection refuses, it never quotes a valid line. */
static void test_unknown_names_a_bad_line(void **state)
{
    (void)state;
    struct warned w = {0};
    struct ember_diag d;
    assert_int_equal(read_text("a;b 1\nnot one\nnor this\n", 1, &w, &d), -EINVAL);
    assert_int_equal(d.line, 2);
    assert_non_null(strstr(d.msg, "\"not one\""));
    assert_non_null(strstr(d.msg, "only 1 of the first 3 lines"));
}

static void test_huge_count_is_an_error(void **state)
{
    (void)state;
    struct warned w = {0};
    struct ember_diag d;
    assert_int_equal(read_text("a 1\nb 9223372036854775808\n", 1, &w, &d), -ERANGE);
    assert_int_equal(d.line, 2);
    assert_int_equal(read_text("a 9223372036854775807\n", 1, &w, &d), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_census),
        cmocka_unit_test(test_skipped_lines_said_once),
        cmocka_unit_test(test_unknown_names_a_bad_line),
        cmocka_unit_test(test_huge_count_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
