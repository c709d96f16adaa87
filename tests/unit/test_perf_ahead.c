/*
 * test_perf_ahead.c - perf_data_ahead.c's reading threads: a file of
 * 5.3 MiB of numbered bytes, its first bytes read as the header is, the
 * rest read ahead by 1 to 4 threads (and 8, which are 4), comes through
 * the stream in pieces of random sizes (peeked, read, skipped) with every
 * byte at its offset, so the chunks in order; progress is told once per
 * chunk, on the stream's thread, with the input's consumed count growing;
 * the threads stopped halfway, the stream reads on the same. A file cut
 * inside a chunk gives the error one thread gives, word for word.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "read/perf/perf_data.h"
#include "base/chunk.h"
#include "ember/base.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "unit_random.h"

enum { FILE_LEN = (5 << 20) + 300007, HEAD = 4096 };

/* Byte i of the file: its offset, mixed, so that a chunk out of place or
 * a byte shifted shows. */
static uint8_t byte_at(uint64_t i)
{
    return (uint8_t)((i * 2654435761u) >> 13 ^ i >> 20);
}

/* A temporary file of len numbered bytes; its path into path. */
static void make_file(char *path, size_t len)
{
    snprintf(path, 64, "/tmp/ember-ahead-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    for (size_t i = 0; i < len; i++)
        buf[i] = byte_at(i);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
    free(buf);
}

struct run {
    struct ember_input *in;
    pthread_t stream; /* the thread expected to tell */
    uint64_t calls, last;
};

static void progress(void *ctx)
{
    struct run *r = ctx;
    assert_true(pthread_equal(pthread_self(), r->stream));
    assert_true(ember_input_consumed(r->in) > r->last);
    r->last = ember_input_consumed(r->in);
    r->calls++;
}

/* Reads the stream from its offset to the end in random pieces, checking
 * each byte; the threads stopped once at stop_at. */
static void read_rest(struct pd_stream *st, uint64_t *rng, uint64_t stop_at)
{
    while (st->offset < FILE_LEN) {
        if (st->offset >= stop_at) {
            pd_stream_stop_ahead(st);
            stop_at = UINT64_MAX;
        }
        size_t left = FILE_LEN - st->offset, n = 1 + next_random(rng) % 20000;
        n = n < left ? n : left;
        const uint8_t *p;
        uint64_t at = st->offset;
        if (next_random(rng) % 5 == 0) {
            assert_int_equal(pd_stream_skip(st, n, "a skip", NULL), 0);
            continue;
        }
        assert_int_equal(pd_stream_read(st, n, &p, "a piece", NULL), 0);
        for (size_t i = 0; i < n; i++)
            if (p[i] != byte_at(at + i))
                fail_msg("byte %llu: %u, not %u", (unsigned long long)(at + i), p[i],
                         byte_at(at + i));
    }
    assert_int_equal(pd_stream_at_end(st, NULL), 1);
}

static void read_file(const char *path, unsigned readers, uint64_t stop_at)
{
    struct run r = {.stream = pthread_self()};
    assert_int_equal(ember_input_open(&r.in, path, NULL), 0);
    struct pd_stream st;
    pd_stream_init(&st, r.in);
    const uint8_t *p;
    assert_int_equal(pd_stream_read(&st, HEAD, &p, "the header", NULL), 0);
    uint64_t base = ember_input_consumed(r.in);
    assert_int_equal(pd_stream_read_ahead(&st, readers, NULL, progress, &r), 0);
    assert_non_null(st.ahead);
    uint64_t rng = 0x9e3779b97f4a7c15ULL ^ readers ^ stop_at;
    read_rest(&st, &rng, stop_at);
    uint64_t chunks = (FILE_LEN - base + (1 << 20) - 1) >> 20;
    assert_int_equal(r.calls, chunks);
    assert_int_equal(ember_input_consumed(r.in), FILE_LEN);
    pd_stream_release(&st);
    ember_input_close(r.in);
}

static void test_bytes_in_order(void **state)
{
    (void)state;
    char path[64];
    make_file(path, FILE_LEN);
    static const unsigned readers[] = {1, 2, 3, 4, 8};
    for (size_t i = 0; i < sizeof(readers) / sizeof(readers[0]); i++) {
        read_file(path, readers[i], UINT64_MAX);
        read_file(path, readers[i], FILE_LEN / 2);
    }
    unlink(path);
}

/* What reading n bytes past 3 MiB + 50,000 says, on readers threads (0:
 * none), into msg. */
static int cut_error(const char *path, unsigned readers, char *msg)
{
    struct ember_input *in;
    assert_int_equal(ember_input_open(&in, path, NULL), 0);
    struct pd_stream st;
    pd_stream_init(&st, in);
    const uint8_t *p;
    assert_int_equal(pd_stream_read(&st, HEAD, &p, "the header", NULL), 0);
    assert_int_equal(pd_stream_read_ahead(&st, readers, NULL, NULL, NULL), 0);
    assert_true(readers == 0 || st.ahead);
    assert_int_equal(pd_stream_skip(&st, (3 << 20) + 50000 - HEAD, "a skip", NULL), 0);
    struct ember_diag d = {0};
    int err = pd_stream_read(&st, 40000, &p, "a record", &d);
    snprintf(msg, 512, "%s", d.msg);
    pd_stream_release(&st);
    ember_input_close(in);
    return err;
}

static void test_cut_file(void **state)
{
    (void)state;
    char path[64], want[512], got[512];
    make_file(path, (3 << 20) + 70000); /* cut inside the fourth chunk */
    int err = cut_error(path, 0, want);
    assert_true(err < 0);
    assert_non_null(strstr(want, "40000 bytes at offset 3195728"));
    for (unsigned readers = 1; readers <= 4; readers++) {
        assert_int_equal(cut_error(path, readers, got), err);
        assert_string_equal(got, want);
    }
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_in_order),
        cmocka_unit_test(test_cut_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
