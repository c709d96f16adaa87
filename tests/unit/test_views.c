/*
 * test_views.c - the lines `ember trace dump` prints (lib/traceview/views.c)
 * against printf: times, values and escapes; names with a newline, a tab
 * or a backslash stay one line that says what the bytes were.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ember/trace.h"
#include "ember/traceview.h"
#include "unit_random.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ember_trace_site site_with(const char *name, int kind, unsigned n,
                                         const char *const *names, const int *types)
{
    struct ember_trace_site s;
    memset(&s, 0, sizeof(s));
    s.name = name;
    s.kind = kind;
    s.nfields = n;
    for (unsigned i = 0; i < n; i++) {
        s.field_names[i] = names[i];
        s.field_types[i] = types[i];
    }
    return s;
}

static void test_times_against_printf(void **state)
{
    (void)state;
    struct ember_trace_site site = site_with("tick", EMBER_EV_INSTANT, 0, NULL, NULL);
    struct ember_trace_event e;
    memset(&e, 0, sizeof(e));
    e.site = &site;
    e.tid = 42;
    uint64_t seed = 12345;
    for (int i = 0; i < 300000; i++) {
        int64_t ns = (int64_t)(next_random(&seed) >> (1 + i % 60));
        if (i % 5 == 0)
            ns = -ns;
        e.ns = ns;
        char got[256], want[256];
        ember_trace_event_line(&e, "main", false, got, sizeof(got));
        uint64_t a = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
        snprintf(want, sizeof(want), "%s%llu.%09llu 42 main instant tick\n", ns < 0 ? "-" : "",
                 (unsigned long long)(a / 1000000000), (unsigned long long)(a % 1000000000));
        assert_string_equal(got, want);
    }
    e.ticks = UINT64_MAX;
    char got[256];
    ember_trace_event_line(&e, "", true, got, sizeof(got));
    assert_string_equal(got, "18446744073709551615 42 - instant tick\n");
}

static void test_values_and_escapes(void **state)
{
    (void)state;
    const char *names[] = {"n", "x", "s"};
    const int types[] = {EMBER_FT_I64, EMBER_FT_F64, EMBER_FT_STR};
    struct ember_trace_site site = site_with("req", EMBER_EV_BEGIN, 3, names, types);
    struct ember_trace_event e;
    memset(&e, 0, sizeof(e));
    e.site = &site;
    e.tid = 7;
    e.ns = 1500000000;
    e.v[0].i = INT64_MIN;
    e.v[1].f = 0.1;
    e.v[2].s = "a\"b\\c\n\x7f";
    char got[256];
    size_t n = ember_trace_event_line(&e, "worker", false, got, sizeof(got));
    const char *want =
        "1.500000000 7 worker begin req n=-9223372036854775808 x=0.10000000000000001 "
        "s=\"a\\\"b\\\\c\\x0a\\x7f\"\n";
    assert_string_equal(got, want);
    assert_int_equal(n, strlen(want));
    /* cut to the buffer, still terminated */
    n = ember_trace_event_line(&e, "worker", false, got, 12);
    assert_int_equal(n, 11);
    assert_string_equal(got, "1.500000000");
}

/* Names (of events, fields and threads) with a newline, a tab or a
 * backslash: one event is one line, and the text says what the bytes were. */
static void test_names_escaped(void **state)
{
    (void)state;
    const char *names[] = {"a\nb", "why\tnot"};
    const int types[] = {EMBER_FT_I64, EMBER_FT_STR};
    struct ember_trace_site site =
        site_with("two\nlines \\ back\x7f", EMBER_EV_INSTANT, 2, names, types);
    struct ember_trace_event e;
    memset(&e, 0, sizeof(e));
    e.site = &site;
    e.tid = 9;
    e.ns = 2;
    e.v[0].i = 5;
    e.v[1].s = "ok";
    char got[512];
    ember_trace_event_line(&e, "bad\rthread", false, got, sizeof(got));
    assert_string_equal(got, "0.000000002 9 bad\\x0dthread instant two\\x0alines \\\\ back\\x7f "
                             "a\\x0ab=5 why\\x09not=\"ok\"\n");
    /* a name of 255 control bytes fits, escaped */
    char longname[256];
    memset(longname, '\n', 255);
    longname[255] = '\0';
    site = site_with(longname, EMBER_EV_INSTANT, 0, NULL, NULL);
    char *line = malloc(4096);
    assert_non_null(line);
    size_t n = ember_trace_event_line(&e, "t", false, line, 4096);
    assert_int_equal(n, strlen("0.000000002 9 t instant ") + 255 * 4 + 1);
    assert_non_null(strstr(line, "\\x0a\\x0a"));
    assert_ptr_equal(strchr(line, '\n'), line + n - 1);
    free(line);

    char buf[16];
    assert_int_equal(ember_trace_escape("a\\b\n", buf, sizeof(buf)), 8);
    assert_string_equal(buf, "a\\\\b\\x0a");
    assert_int_equal(ember_trace_escape("\n\n\n\n\n", buf, 8), 20); /* cut, terminated */
    assert_string_equal(buf, "\\x0a");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_times_against_printf),
        cmocka_unit_test(test_values_and_escapes),
        cmocka_unit_test(test_names_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
