/*
 * test_escape.c - the protocols written once (base/utf8, base/escape,
 * wire/trace_event, wire/protobuf): UTF-8 decoded strictly (maximal
 * subparts) and laxly (flamegraph.pl's colours), JSON strings in both
 * writers' spellings, XML text, Trace Event times, varints both ways.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "wire/protobuf.h"
#include "base/writer.h"
#include "base/escape.h"
#include "wire/trace_event.h"
#include "base/utf8.h"

#include <string.h>

struct out {
    char b[256];
    size_t n;
};

static int put(void *ctx, const char *s, size_t n)
{
    struct out *o = ctx;
    memcpy(o->b + o->n, s, n);
    o->n += n;
    o->b[o->n] = '\0';
    return 0;
}

/* What escaping in (NUL-terminated) writes: JSON with flags, or XML
 * (quotes too) when xml. */
static void escaped(const char *in, bool xml, unsigned flags, const char *want)
{
    static struct ember_writer w;
    struct out o = {.n = 0};
    struct ember_sink sink = {put, &o};
    ember_writer_init(&w, &sink);
    if (xml)
        ember_escape_xml(&w, in, strlen(in), true);
    else
        ember_escape_json(&w, in, strlen(in), flags);
    assert_int_equal(ember_writer_flush(&w), 0);
    assert_string_equal(o.b, want);
}

static void test_utf8(void **state)
{
    (void)state;
    unsigned cp;
    assert_int_equal(ember_utf8_decode("\xc3\xa9", 2, &cp, false), 2);
    assert_int_equal(cp, 0xe9);
    assert_int_equal(ember_utf8_decode("\xf0\x9f\x94\xa5", 4, &cp, false), 4);
    assert_int_equal(cp, 0x1f525);
    assert_int_equal(ember_utf8_decode("\xe2\x82", 2, &cp, false), -2);     /* cut */
    assert_int_equal(ember_utf8_decode("\xe0\x80\x80", 3, &cp, false), -1); /* overlong */
    assert_int_equal(ember_utf8_decode("\xed\xa0\x80", 3, &cp, false), -1); /* surrogate */
    assert_int_equal(ember_utf8_decode("\xc0\x80", 2, &cp, true), 2);       /* lax: decodes */
    assert_int_equal(cp, 0);
    assert_int_equal(ember_utf8_decode("\xe2\x82", 2, &cp, true), -1);
    assert_int_equal(cp, 0xe2);
    size_t i = 0;
    assert_int_equal(ember_utf8_next("\xff"
                                     "a",
                                     2, &i),
                     0xff);
    assert_int_equal(i, 1);
}

static void test_json(void **state)
{
    (void)state;
    escaped("a\"b\\c\n\x01", false, EMBER_JSON_SHORT, "a\\\"b\\\\c\\n\\u0001");
    escaped("a\"b\\c\n\x01", false, 0, "a\\\"b\\\\c\\u000a\\u0001");
    escaped("caf\xc3\xa9 \x7f", false, EMBER_JSON_SHORT, "caf\xc3\xa9 \x7f");
    /* a cut sequence: one U+FFFD for the maximal subpart, or one a byte */
    escaped("\xe2\x82x", false, EMBER_JSON_SHORT, "\xef\xbf\xbdx");
    escaped("\xe2\x82x", false, EMBER_JSON_FFFD_BYTES, "\xef\xbf\xbd\xef\xbf\xbdx");
}

static void test_xml(void **state)
{
    (void)state;
    escaped("<a & \"b\">", true, 0, "&lt;a &amp; &quot;b&quot;&gt;");
    escaped("\x01\t\xc3\xa9\xe2\x82", true, 0, "\xef\xbf\xbd\t\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd");
}

static void test_trace_time(void **state)
{
    (void)state;
    char buf[EMBER_TRACE_EVENT_TIME_MAX];
    ember_trace_event_time(buf, 1234567, false);
    assert_string_equal(buf, "1234.567");
    ember_trace_event_time(buf, 1500, true);
    assert_string_equal(buf, "-1.500");
    ember_trace_event_time(buf, 500, true); /* the sign below a microsecond too */
    assert_string_equal(buf, "-0.500");
    ember_trace_event_time(buf, 0, true);
    assert_string_equal(buf, "0.000");
}

static void test_varint(void **state)
{
    (void)state;
    static const uint64_t values[] = {0, 1, 127, 128, 300, UINT64_MAX};
    for (size_t k = 0; k < sizeof(values) / sizeof(values[0]); k++) {
        uint8_t b[EMBER_PROTOBUF_VARINT_MAX];
        size_t n = ember_protobuf_varint_encode(values[k], b);
        const uint8_t *p = b;
        uint64_t v = 0;
        assert_int_equal(ember_protobuf_varint_decode(&p, b + n, &v), EMBER_PROTOBUF_OK);
        assert_true(v == values[k] && p == b + n);
        p = b;
        if (n > 1)
            assert_int_equal(ember_protobuf_varint_decode(&p, b + n - 1, &v), EMBER_PROTOBUF_SHORT);
    }
    static const uint8_t eleven[11] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                       0x80, 0x80, 0x80, 0x80, 0x01};
    const uint8_t *p = eleven;
    uint64_t v;
    assert_int_equal(ember_protobuf_varint_decode(&p, eleven + 11, &v), EMBER_PROTOBUF_LONG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8),   cmocka_unit_test(test_json),
        cmocka_unit_test(test_xml),    cmocka_unit_test(test_trace_time),
        cmocka_unit_test(test_varint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
