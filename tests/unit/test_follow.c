/*
 * test_follow.c - following a trace hands out its events in time order
 * across streams, as a whole-file pass does, even when a stream's event
 * shows up late: a writer that took its timestamp, was descheduled, and
 * committed the event after other streams had written later ones. The
 * runtime_events file is written here step by step between polls, so what
 * each poll sees is fixed (no timing, no load needed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ember/tracefile.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { R = 4096, NAMES = 8192, NAME_BYTES = 128, RINGS = 2 };
enum { HEADERS = 64, DATA = HEADERS + RINGS * 80, NAMES_AT = DATA + RINGS * R * 8 };

struct file {
    char path[64];
    int fd;
    uint64_t tail[RINGS];
};

static void put(struct file *f, const void *p, size_t n, uint64_t off)
{
    assert_int_equal(pwrite(f->fd, p, n, (off_t)off), (ssize_t)n);
}

/* An empty runtime_events file of RINGS rings of R words. */
static void file_create(struct file *f)
{
    snprintf(f->path, sizeof(f->path), "/tmp/ember-follow-XXXXXX");
    f->fd = mkstemp(f->path);
    assert_true(f->fd >= 0);
    memset(f->tail, 0, sizeof(f->tail));
    assert_int_equal(ftruncate(f->fd, NAMES_AT + NAMES * NAME_BYTES), 0);
    uint64_t h[8] = {1, RINGS, 80, R * 8, R, HEADERS, DATA, NAMES_AT};
    put(f, h, sizeof(h), 0);
}

/* A new file, followed. */
static struct ember_trace *file_follow(struct file *f)
{
    file_create(f);
    struct ember_trace *t;
    struct ember_diag d;
    assert_int_equal(ember_trace_follow(&t, f->path, 1000, &d), 0);
    return t;
}

/* Commits a runtime phase begin (2 words) stamped ticks to ring r: the
 * words, then the ring's tail, as OCaml's writer does. */
static void commit(struct file *f, unsigned r, uint64_t ticks)
{
    uint64_t m[2] = {2ull << 54 | 2ull << 49, ticks};
    put(f, m, sizeof(m), DATA + (r * R + f->tail[r]) * 8);
    f->tail[r] += 2;
    put(f, &f->tail[r], 8, HEADERS + r * 80 + 8);
}

struct seen {
    uint64_t ticks[256];
    unsigned n;
};

static int note(void *ctx, const struct ember_trace_event *e)
{
    struct seen *s = ctx;
    assert_true(s->n < 256);
    s->ticks[s->n++] = e->ticks;
    return 0;
}

/* The events of the finished file, read whole. */
static void read_whole(const char *path, struct seen *s)
{
    struct ember_trace *t;
    struct ember_diag d;
    assert_int_equal(ember_trace_open(&t, path, &d), 0);
    assert_int_equal(ember_trace_each(t, note, s), 0);
    ember_trace_close(t);
}

/* The followed trace is closed, and what it handed out is checked
 * against the finished file read whole: n events, the same in the same
 * order. */
static void assert_as_whole(struct file *f, struct ember_trace *t, const struct seen *got,
                            unsigned n)
{
    ember_trace_close(t);
    struct seen want = {.n = 0};
    read_whole(f->path, &want);
    assert_int_equal(want.n, n);
    assert_int_equal(got->n, want.n);
    for (unsigned i = 0; i < got->n; i++)
        assert_int_equal(got->ticks[i], want.ticks[i]);
    close(f->fd);
    unlink(f->path);
}

/* Ring 0 stamps 200 before ring 1 writes 300, but commits it after the
 * poll that read 300: the follower must still print 200 before 300. */
static void test_late_event_in_order(void **state)
{
    (void)state;
    struct file f;
    struct ember_trace *t = file_follow(&f);
    struct seen got = {.n = 0};
    commit(&f, 1, 100);
    commit(&f, 1, 300);
    assert_true(ember_trace_poll(t, note, &got, false) >= 0);
    commit(&f, 0, 200); /* stamped before 300, committed late */
    commit(&f, 1, 400);
    assert_true(ember_trace_poll(t, note, &got, false) >= 0);
    /* up to 300, the largest time the previous poll read; 400 waits */
    assert_int_equal(got.n, 3);
    /* the writers are quiet: what waits comes without a final poll */
    assert_int_equal(ember_trace_poll(t, note, &got, false), 1);
    assert_int_equal(ember_trace_poll(t, note, &got, true), 0);
    assert_as_whole(&f, t, &got, 4);
}

/* Writers that never pause are not held back by more than a poll: each
 * poll hands out at least what the poll before it read. */
static void test_busy_writers_keep_up(void **state)
{
    (void)state;
    struct file f;
    struct ember_trace *t = file_follow(&f);
    struct seen got = {.n = 0};
    unsigned written = 0, before = 0;
    for (uint64_t step = 0; step < 40; step++) {
        commit(&f, step % 2, 10 * step + 1);
        commit(&f, (step + 1) % 2, 10 * step + 2);
        commit(&f, step % 2, 10 * step + 3);
        written += 3;
        assert_true(ember_trace_poll(t, note, &got, false) > 0 || step == 0);
        assert_true(got.n >= before);
        before = written;
    }
    assert_int_equal(ember_trace_poll(t, note, &got, true), 3);
    assert_as_whole(&f, t, &got, written);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_late_event_in_order),
        cmocka_unit_test(test_busy_writers_keep_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
