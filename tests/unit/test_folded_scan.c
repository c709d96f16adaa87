/*
 * test_folded_scan.c - the folded scanner's two threads: inputs of many
 * chunks, read while a slow caller delivers, must reach the callbacks in
 * order, each line once with its counts and its key, each input's end
 * between its lines and the next input's; the reader's splits (made only
 * while the caller is behind, which a slow caller forces) must be those of
 * the caller's own split; and errors on either side must stop both.
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
#include <time.h>

enum { LINES = 40000 };

/* Line i of input k: a stack of 3 to 40 names, unique to (k, i). */
static char *make_input(unsigned k, size_t *len)
{
    size_t cap = (size_t)LINES * 400, n = 0;
    char *s = malloc(cap);
    for (unsigned i = 0; i < LINES; i++) {
        unsigned depth = 3 + (i * 7 + k) % 38;
        for (unsigned d = 0; d < depth; d++)
            n += (size_t)snprintf(s + n, cap - n, "%sf%u_%u", d ? ";" : "", d, (i + d) % 97);
        n += (size_t)snprintf(s + n, cap - n, ";k%u_%u %u\n", k, i, i % 5 + 1);
    }
    *len = n;
    return s;
}

struct seen {
    unsigned threads, input, lines[2], ends, split, slow;
    int fail_at; /* the line whose delivery fails (-1: none) */
};

static void pause_a_little(void)
{
    struct timespec t = {0, 200000};
    nanosleep(&t, NULL);
}

static int line_cb(void *ctx, const struct ember_folded_line *l)
{
    struct seen *s = ctx;
    unsigned k = s->input, i = s->lines[k];
    char want[32];
    int w = snprintf(want, sizeof(want), ";k%u_%u", k, i);
    /* in order, with its own stack and count */
    assert_true(l->len >= (size_t)w && memcmp(l->stack + l->len - w, want, (size_t)w) == 0);
    assert_int_equal(l->count.mant, i % 5 + 1);
    uint64_t key[2];
    ember_stack_text_key(l->stack, l->len, key);
    assert_true(key[0] == l->hash[0] && key[1] == l->hash[1]);
    if (l->names) { /* the reader's split: every ';' and the end */
        size_t at = 0;
        for (size_t j = 0; j < l->names; j++) {
            const char *semi = memchr(l->stack + at, ';', l->len - at);
            size_t end = semi ? (size_t)(semi - l->stack) : l->len;
            assert_int_equal(l->ends[j], end);
            assert_int_equal(l->name_hash[j], (uint64_t)end * 31 + at);
            at = end + 1;
        }
        assert_int_equal(at, l->len + 1);
        s->split++;
    }
    if ((int)i == s->fail_at)
        return -ENOSPC;
    if (s->slow && i % 64 == 0)
        pause_a_little(); /* the reader gets ahead */
    s->lines[k]++;
    return 0;
}

/* A stand-in for a name's hash that says where the name is. */
static size_t split_cb(const void *ctx, const struct ember_folded_line *l, size_t *ends,
                       uint64_t *hashes)
{
    (void)ctx;
    size_t k = 0, at = 0;
    for (;;) {
        const char *semi = memchr(l->stack + at, ';', l->len - at);
        size_t end = semi ? (size_t)(semi - l->stack) : l->len;
        ends[k] = end;
        hashes[k++] = (uint64_t)end * 31 + at;
        if (!semi)
            return k;
        at = end + 1;
    }
}

static int end_cb(void *ctx, struct ember_input *in, const struct ember_read_stats *st,
                  struct ember_diag *d)
{
    (void)in;
    (void)d;
    struct seen *s = ctx;
    assert_int_equal(s->lines[s->input], LINES);
    assert_int_equal(st->samples, LINES);
    s->ends++;
    s->input++;
    return 0;
}

static int scan_two(struct seen *s, const char *extra1, struct ember_diag *d)
{
    static const struct ember_folded_calls calls = {NULL, line_cb, end_cb, split_cb};
    size_t len[2];
    char *text[2] = {make_input(0, &len[0]), make_input(1, &len[1])};
    if (extra1) { /* something after input 1's lines */
        text[1] = realloc(text[1], len[1] + strlen(extra1));
        memcpy(text[1] + len[1], extra1, strlen(extra1));
        len[1] += strlen(extra1);
    }
    struct ember_input *in[2];
    struct ember_read_stats st[2];
    memset(st, 0, sizeof(st));
    for (unsigned k = 0; k < 2; k++)
        assert_int_equal(ember_input_open_memory(&in[k], text[k], len[k], k ? "b" : "a", d), 0);
    struct ember_read_opts o;
    memset(&o, 0, sizeof(o));
    o.threads = s->threads;
    const struct ember_folded_source src[2] = {{in[0], &st[0], s}, {in[1], &st[1], s}};
    int err = ember_folded_scan_all(src, 2, &o, &calls, d);
    for (unsigned k = 0; k < 2; k++) {
        ember_input_close(in[k]);
        free(text[k]);
    }
    return err;
}

static void test_two_inputs_in_order(void **state)
{
    (void)state;
    for (unsigned threads = 1; threads <= 2; threads++) {
        struct seen s = {.threads = threads, .slow = 1, .fail_at = -1};
        struct ember_diag d;
        ember_diag_clear(&d);
        assert_int_equal(scan_two(&s, NULL, &d), 0);
        assert_int_equal(s.ends, 2);
        if (threads == 1) /* no reader to split ahead */
            assert_int_equal(s.split, 0);
        else /* the slow caller had the reader split */
            assert_true(s.split > 0 && s.split < 2 * LINES);
    }
}

static void test_caller_error_stops(void **state)
{
    (void)state;
    struct seen s = {.threads = 2, .slow = 1, .fail_at = 5000};
    struct ember_diag d;
    ember_diag_clear(&d);
    assert_int_equal(scan_two(&s, NULL, &d), -ENOSPC);
    assert_int_equal(s.input, 0);
    assert_int_equal(s.lines[0], 5000);
    assert_int_equal(s.ends, 0);
}

static void test_reader_error_at_its_line(void **state)
{
    (void)state;
    struct seen s = {.threads = 2, .fail_at = -1};
    struct ember_diag d;
    ember_diag_clear(&d);
    /* input b ends in a cut line: an error after all of a and b's lines */
    assert_int_equal(scan_two(&s, "f0;f1 x", &d), -EINVAL);
    assert_int_equal(s.ends, 1);
    assert_int_equal(s.lines[1], LINES);
    assert_string_equal(d.file, "b");
    assert_int_equal(d.line, LINES + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_inputs_in_order),
        cmocka_unit_test(test_caller_error_stops),
        cmocka_unit_test(test_reader_error_at_its_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
