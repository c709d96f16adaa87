/*
 * test_chunk.c - chunks' buffers (base/chunk.h): ember_chunk_reserve
 * keeps a chunk's bytes and aligns its buffer to 64 bytes, also when the
 * chunk's data lies inside its buffer (after a line carried over); a
 * file of 3.3 MiB read as bytes (the first two sniffed for gzip's magic,
 * carried into the first chunk) comes in chunks whose data is aligned,
 * every byte at its place; read as lines (one of 2.5 MiB, which makes a
 * chunk grow; no newline at the end), the chunks are whole lines, in
 * order, every byte at its place, and each chunk's first byte read (the
 * one after the line carried over, which ends where the last read did)
 * is aligned too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/chunk.h"
#include "ember/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { BYTES_LEN = (3 << 20) + 77777, LONG_LINE = (5 << 20) / 2 };

static bool aligned(const void *p)
{
    return (uintptr_t)p % 64 == 0;
}

/* A temporary file of len bytes from data; its path into path. */
static void make_file(char *path, const char *data, size_t len)
{
    snprintf(path, 64, "/tmp/ember-chunk-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static void reserve_keeps_and_aligns(void **state)
{
    (void)state;
    struct ember_chunk c = {0};
    assert_int_equal(ember_chunk_reserve(&c, 100), 0);
    assert_true(aligned(c.data));
    memcpy(c.data, "0123456789", 10);
    c.len = 10;
    assert_int_equal(ember_chunk_reserve(&c, 1 << 20), 0);
    assert_true(aligned(c.data));
    assert_true(c.cap >= 1 << 20);
    assert_memory_equal(c.data, "0123456789", 10);
    ember_chunk_release(&c);
    assert_null(c.data);
}

/* Byte i of the bytes file: its offset, mixed. */
static char byte_at(size_t i)
{
    return (char)((i * 2654435761u) >> 13 ^ i >> 20);
}

static void bytes_come_aligned(void **state)
{
    (void)state;
    char *data = malloc(BYTES_LEN), path[64];
    assert_non_null(data);
    for (size_t i = 0; i < BYTES_LEN; i++)
        data[i] = byte_at(i);
    make_file(path, data, BYTES_LEN);
    struct ember_input *in;
    assert_int_equal(ember_input_open(&in, path, NULL), 0);
    struct ember_chunk c = {0};
    size_t at = 0, chunks = 0;
    int r;
    while ((r = ember_input_read_chunk(in, &c, EMBER_CUT_BYTES, NULL)) == 1) {
        assert_true(aligned(c.data));
        assert_true(at + c.len <= BYTES_LEN);
        assert_memory_equal(c.data, data + at, c.len);
        at += c.len;
        chunks++;
    }
    assert_int_equal(r, 0);
    assert_int_equal(at, BYTES_LEN);
    assert_true(chunks >= 3);
    ember_chunk_release(&c);
    ember_input_close(in);
    unlink(path);
    free(data);
}

/* A text of short lines around one of LONG_LINE bytes, without a last
 * newline; its length in *len. */
static char *lines_text(size_t *len)
{
    size_t cap = 8 << 20, n = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    for (int i = 0; n < (1 << 20) * 3 / 2; i++)
        n += (size_t)snprintf(t + n, cap - n, "line %d %.*s\n", i, i % 97, "abcdefghij");
    memset(t + n, 'x', LONG_LINE);
    n += LONG_LINE;
    t[n++] = '\n';
    for (int i = 0; n < (6 << 20); i++)
        n += (size_t)snprintf(t + n, cap - n, "tail %d %.*s\n", i, i % 13, "0123456789");
    memcpy(t + n, "no newline", 10);
    *len = n + 10;
    return t;
}

static void lines_come_whole_and_aligned(void **state)
{
    (void)state;
    size_t len;
    char *text = lines_text(&len), path[64];
    make_file(path, text, len);
    struct ember_input *in;
    assert_int_equal(ember_input_open(&in, path, NULL), 0);
    struct ember_chunk c = {0};
    size_t at = 0, read_to = 0, grown = 0;
    int r;
    while ((r = ember_input_read_chunk(in, &c, EMBER_CUT_LINE, NULL)) == 1) {
        assert_true(at + c.len <= len);
        assert_memory_equal(c.data, text + at, c.len);
        if (at + c.len < len)
            assert_int_equal(c.data[c.len - 1], '\n');
        /* the line carried over is [at, read_to): the bytes read after it
         * are aligned, where the chunk did not grow (a grown one is
         * copied whole into a new buffer) */
        if (read_to > at && c.len < (2 << 20))
            assert_true(aligned(c.data + (read_to - at)));
        grown += c.len >= (2 << 20);
        at += c.len;
        read_to = (size_t)ember_input_consumed(in); /* the file's bytes read so far */
    }
    assert_int_equal(r, 0);
    assert_int_equal(at, len);
    assert_int_equal(grown, 1);
    ember_chunk_release(&c);
    ember_input_close(in);
    unlink(path);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reserve_keeps_and_aligns),
        cmocka_unit_test(bytes_come_aligned),
        cmocka_unit_test(lines_come_whole_and_aligned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
