/*
 * test_folded_ranges.c - folded input read by threads in byte ranges
 * (folded_threads.c) against one thread reading it: random texts of
 * stacks sharing prefixes, repeated lines, blank lines, CRLF, lines
 * without a count, a last line without its '\n', read in ranges of 1 to
 * 64 bytes (so that ranges start inside lines, at their ends, inside
 * CRLF, and hold no line start) on 1 to 4 threads, must give the same
 * frames, nodes, weights and totals, sample and skipped counts, and the
 * same warning at the same line. Lines that change the profile's values
 * or end the read (a differential line, a fraction, a cut last line, a
 * count too large) must leave the profile untouched for one thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/profile_impl.h"
#include "read/read_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "unit_random.h"

enum { LINES = 300, TEXT = 64 << 10 };

/* A random folded text of LINES lines into buf; its length. */
static size_t make_text(char *buf, uint64_t *seed, bool last_newline)
{
    size_t n = 0;
    for (unsigned i = 0; i < LINES; i++) {
        uint64_t kind = next_random(seed) % 20;
        if (kind == 0) {
            n += (size_t)snprintf(buf + n, TEXT - n, "\n");
            continue;
        }
        if (kind == 1) {
            n += (size_t)snprintf(buf + n, TEXT - n, "no count %u here\n", i);
            continue;
        }
        unsigned depth = 1 + (unsigned)(next_random(seed) % 8);
        for (unsigned d = 0; d < depth; d++)
            n += (size_t)snprintf(buf + n, TEXT - n, "%sf%u", d ? ";" : "",
                                  (unsigned)(next_random(seed) % (d < 2 ? 3 : 12)));
        n += (size_t)snprintf(buf + n, TEXT - n, " %u%s\n", (unsigned)(next_random(seed) % 50),
                              kind == 2 ? "\r" : "");
    }
    if (!last_newline) /* the last line has a count: it is not cut */
        n += (size_t)snprintf(buf + n, TEXT - n, "f1;f2 7");
    return n;
}

struct warned {
    unsigned n;
    struct ember_diag d;
};

static void warn(void *ctx, const struct ember_diag *d)
{
    struct warned *w = ctx;
    w->n++;
    w->d = *d;
}

/* text read by one thread, or by `threads` in ranges of `range` bytes:
 * its profile, stats and warning; the reader's result. */
static int read_text(const char *text, size_t len, unsigned threads, uint64_t range,
                     struct ember_profile **out, struct ember_read_stats *st, struct warned *w)
{
    struct ember_input *in;
    struct ember_diag d;
    assert_int_equal(ember_input_open_memory(&in, text, len, "t.folded", &d), 0);
    struct ember_read_opts o = {.threads = threads, .warn = warn, .warn_ctx = w};
    *out = ember_profile_new();
    memset(st, 0, sizeof(*st));
    memset(w, 0, sizeof(*w));
    int err = range ? ember_folded_read_ranges(*out, in, &o, st, &d, range)
                    : ember_format_folded.read(*out, in, &o, st, &d);
    ember_input_close(in);
    return err;
}

static void assert_same(const struct ember_profile *a, const struct ember_profile *b)
{
    assert_int_equal(a->frames.count, b->frames.count);
    for (uint32_t f = 0; f < a->frames.count; f++)
        assert_string_equal(ember_profile_frame_name(a, f, NULL),
                            ember_profile_frame_name(b, f, NULL));
    assert_int_equal(a->nnodes, b->nnodes);
    assert_int_equal(a->total[0], b->total[0]);
    assert_int_equal(a->weighed, b->weighed);
    for (uint32_t n = 1; n < a->nnodes; n++) {
        assert_int_equal(a->nodes[n].frame, b->nodes[n].frame);
        assert_int_equal(a->nodes[n].parent, b->nodes[n].parent);
        assert_int_equal(a->self[0][n], b->self[0][n]);
    }
}

static void test_ranges_read_as_one(void **state)
{
    (void)state;
    char *text = malloc(TEXT);
    uint64_t seed = 77;
    for (unsigned round = 0; round < 12; round++) {
        size_t len = make_text(text, &seed, round % 3 != 0);
        struct ember_profile *one, *many;
        struct ember_read_stats st1, st2;
        struct warned w1, w2;
        assert_int_equal(read_text(text, len, 1, 0, &one, &st1, &w1), 0);
        for (uint64_t range = 1 + round; range <= 64; range += 9)
            for (unsigned threads = 1; threads <= 4; threads++) {
                assert_int_equal(read_text(text, len, threads, range, &many, &st2, &w2), 0);
                assert_same(one, many);
                assert_int_equal(st1.samples, st2.samples);
                assert_int_equal(st1.skipped, st2.skipped);
                assert_int_equal(w1.n, w2.n);
                assert_int_equal(w1.d.line, w2.d.line);
                assert_string_equal(w1.d.msg, w2.d.msg);
                ember_profile_free(many);
            }
        ember_profile_free(one);
    }
    free(text);
}

/* Lines longer than the windows a range's start is looked for in (4 KiB,
 * then 8, 16, ...), and ranges that start inside them. */
static void test_long_lines(void **state)
{
    (void)state;
    enum { LONG_LINES = 24, NAME = 9000 };
    char *text = malloc((size_t)LONG_LINES * (NAME + 64));
    size_t len = 0;
    for (unsigned i = 0; i < LONG_LINES; i++) {
        len += (size_t)sprintf(text + len, "f%u;", i % 3);
        memset(text + len, 'a' + (int)(i % 5), (size_t)NAME * (1 + i % 3) / 3);
        len += (size_t)NAME * (1 + i % 3) / 3;
        len += (size_t)sprintf(text + len, ";g%u %u\n", i % 4, i + 1);
    }
    struct ember_profile *one, *many;
    struct ember_read_stats st1, st2;
    struct warned w1, w2;
    assert_int_equal(read_text(text, len, 1, 0, &one, &st1, &w1), 0);
    for (uint64_t range = 97; range < 20000; range = range * 3 + 1) {
        assert_int_equal(read_text(text, len, 3, range, &many, &st2, &w2), 0);
        assert_same(one, many);
        assert_int_equal(st1.samples, st2.samples);
        ember_profile_free(many);
    }
    ember_profile_free(one);
    free(text);
}

/* A line that one thread must read (whatever comes around it). */
static void assert_one_thread(const char *line)
{
    char text[256];
    int len = snprintf(text, sizeof(text), "a;b 1\na;c 2\n%sa;b;d 3\n", line);
    struct ember_profile *p;
    struct ember_read_stats st;
    struct warned w;
    assert_int_equal(read_text(text, (size_t)len, 3, 5, &p, &st, &w), 1);
    assert_int_equal(p->nnodes, 1);
    assert_int_equal(p->frames.count, 0);
    assert_int_equal(st.samples, 0);
    assert_int_equal(w.n, 0);
    ember_profile_free(p);
}

static void test_one_thread_lines(void **state)
{
    (void)state;
    assert_one_thread("a;b 1 2\n");                  /* differential */
    assert_one_thread("a;b 1.5\n");                  /* a fraction */
    assert_one_thread("a;b 99999999999999999999\n"); /* too large */
    assert_one_thread("a 9223372036854775807\n");    /* the total overflows */
    struct ember_profile *p;
    struct ember_read_stats st;
    struct warned w;
    assert_int_equal(read_text("a;b 1\na;c", 9, 2, 4, &p, &st, &w), 1); /* cut */
    assert_int_equal(p->nnodes, 1);
    ember_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranges_read_as_one),
        cmocka_unit_test(test_long_lines),
        cmocka_unit_test(test_one_thread_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
