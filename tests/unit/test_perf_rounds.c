/*
 * test_perf_rounds.c - rounds of records framed from a stream of several
 * chunks, sorted on threads and flushed (perf_data_rounds.c, then
 * perf_data_order.c), against the same records pushed into the queue one
 * by one: the same records, in the same order, at the same offsets, and
 * every pin let go. The records straddle chunks (copied), end exactly at a
 * chunk's end, and come in rounds whose times overlap, so that flushes
 * merge two sides, keep a round's rest and copy it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "read/perf/perf_order.h"
#include "ember/base.h"

#include <stdlib.h>
#include "unit_random.h"

enum { N = 2400, ROUND = 150 };

struct got {
    uint64_t id[N + N / ROUND + 1], offset[N + N / ROUND + 1];
    size_t n;
    struct pd_stream *st;
};

static int on_record(void *ctx, const struct pd_record *r)
{
    struct got *g = ctx;
    g->offset[g->n] = r->offset;
    g->id[g->n++] = pd_u64(r->data + 16);
    return 0;
}

/* Samples handed over held: noted, their pins let go. */
static int on_held(void *ctx, const struct pd_held_record *recs, size_t n)
{
    struct got *g = ctx;
    for (size_t i = 0; i < n; i++) {
        g->offset[g->n] = recs[i].offset;
        g->id[g->n++] = pd_u64(recs[i].data + 16);
        pd_stream_unpin(g->st, recs[i].hold, 1);
    }
    return 1;
}

/* A sample of size bytes at p: header, its time, its number, then bytes
 * of its number. */
static void put_sample(uint8_t *p, uint16_t size, uint64_t time, uint64_t id)
{
    uint32_t type = PERF_RECORD_SAMPLE;
    memset(p, (int)(id & 0xff), size);
    memset(p, 0, 8);
    memcpy(p, &type, 4);
    memcpy(p + 6, &size, 2);
    memcpy(p + 8, &time, 8);
    memcpy(p + 16, &id, 8);
}

static void put_round_end(uint8_t *p)
{
    uint32_t type = PD_RECORD_FINISHED_ROUND;
    uint16_t size = 8;
    memset(p, 0, 8);
    memcpy(p, &type, 4);
    memcpy(p + 6, &size, 2);
}

/* N samples of 24 B to 9 KB, a FINISHED_ROUND after each ROUND of them; the
 * first chunk's last sample ends exactly at its end; each round's times
 * go back a little from the last's (two CPUs' buffers, written in turn). */
static uint8_t *make_data(size_t *len)
{
    uint8_t *buf = malloc((size_t)N * 9000 + N);
    assert_non_null(buf);
    uint64_t rng = 0x2545f4914f6cdd1dULL, t = 1000;
    size_t at = 0;
    for (uint64_t id = 0; id < N; id++) {
        size_t left = (1u << 20) - at; /* to the first chunk's end */
        uint16_t size = (uint16_t)(24 + next_random(&rng) % 8976);
        if (at < (1u << 20) && left < 2 * 9000 && left >= 24 + 24)
            size = (uint16_t)(left > 9000 ? left / 2 : left); /* ends at the chunk's end */
        if (id % 11 == 0)
            t -= next_random(&rng) % 40;
        put_sample(buf + at, size, t += next_random(&rng) % 5, id);
        at += size;
        if (id % ROUND == ROUND - 1) {
            put_round_end(buf + at);
            at += 8;
        }
    }
    *len = at;
    return buf;
}

static void file_of(struct pd_file *f, size_t len)
{
    pd_file_init(f, "records");
    f->data_offset = 0;
    f->data_size = len;
    f->attrs = calloc(1, sizeof(*f->attrs));
    assert_non_null(f->attrs);
    f->nattrs = f->acap = 1;
    f->attrs[0].sample_type = PERF_SAMPLE_TIME;
}

/* One thread's way: each record pushed, a flush at each FINISHED_ROUND. */
static void read_pushed(const uint8_t *buf, size_t len, struct got *g)
{
    struct ember_input *in;
    struct pd_stream st;
    struct pd_queue q;
    struct pd_file f;
    struct pd_record r;
    struct ember_diag d;
    assert_int_equal(ember_input_open_memory(&in, buf, len, "records", NULL), 0);
    file_of(&f, len);
    pd_stream_init(&st, in);
    pd_queue_init(&q, &st);
    struct pd_sink sink = {on_record, NULL, g};
    while (pd_file_next_record(&f, &st, &r, &d) == 0)
        assert_int_equal(r.type == PD_RECORD_FINISHED_ROUND
                             ? pd_queue_flush(&q, NULL, PD_FLUSH_DUE, &sink)
                             : pd_queue_push(&q, &r, pd_file_time_of(&f, &r)),
                         0);
    assert_int_equal(pd_queue_flush(&q, NULL, PD_FLUSH_ALL, &sink), 0);
    assert_int_equal(st.nheld + st.chunk_pins, 0);
    pd_queue_release(&q);
    pd_stream_release(&st);
    pd_file_release(&f);
    ember_input_close(in);
}

/* The rounds' way, sorted on threads threads, samples held or not. */
static void read_rounds(const uint8_t *buf, size_t len, unsigned threads, bool held, struct got *g)
{
    struct ember_input *in;
    struct pd_stream st;
    struct pd_queue q;
    struct pd_file f;
    struct ember_diag d;
    struct pd_rounds *rs;
    assert_int_equal(ember_input_open_memory(&in, buf, len, "records", NULL), 0);
    file_of(&f, len);
    pd_stream_init(&st, in);
    pd_queue_init(&q, &st);
    assert_int_equal(pd_rounds_new(&rs, threads), 0);
    g->st = &st;
    struct pd_sink sink = {on_record, held ? on_held : NULL, g};
    enum pd_round_end end;
    do {
        struct pd_round *rd = pd_rounds_open(rs);
        assert_non_null(rd);
        assert_int_equal(pd_round_frame(rd, &f, &st, &q.seq, &d), 0);
        pd_rounds_submit(rs);
        assert_ptr_equal(pd_rounds_oldest(rs, true), rd);
        assert_int_equal(rd->nimm, 0);
        end = rd->end;
        assert_true(end == PD_ROUND_FLUSH || end == PD_ROUND_EOF);
        assert_int_equal(
            pd_queue_flush(&q, rd, end == PD_ROUND_EOF ? PD_FLUSH_ALL : PD_FLUSH_DUE, &sink), 0);
        pd_rounds_done(rs, q.pending == rd);
    } while (end != PD_ROUND_EOF);
    assert_int_equal(st.nheld + st.chunk_pins, 0); /* every pin let go, once */
    pd_rounds_free(rs);
    pd_queue_release(&q);
    pd_stream_release(&st);
    pd_file_release(&f);
    ember_input_close(in);
}

static void test_rounds_as_pushed(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = make_data(&len);
    assert_true(len > (3u << 20)); /* several chunks */
    struct got *want = calloc(1, sizeof(*want)), *got = calloc(1, sizeof(*got));
    read_pushed(buf, len, want);
    assert_int_equal(want->n, N);
    for (unsigned threads = 0; threads <= 2; threads++) {
        for (int held = 0; held <= 1; held++) {
            memset(got, 0, sizeof(*got));
            read_rounds(buf, len, threads, held, got);
            assert_int_equal(got->n, N);
            for (size_t i = 0; i < N; i++) {
                if (got->id[i] != want->id[i] || got->offset[i] != want->offset[i])
                    fail_msg("%u threads%s: record %zu is %llu at %llu, not %llu at %llu", threads,
                             held ? ", held" : "", i, (unsigned long long)got->id[i],
                             (unsigned long long)got->offset[i], (unsigned long long)want->id[i],
                             (unsigned long long)want->offset[i]);
            }
        }
    }
    free(want);
    free(got);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounds_as_pushed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
