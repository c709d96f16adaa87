/*
 * test_perf_order.c - perf_data_order.c's rounds: records pushed as perf
 * record writes them (each CPU's buffer in turn, each in time order, so a
 * round is a few sorted runs, with ties across them) come out of each
 * flush in time order, ties in push order, only those not later than the
 * newest time of the round before, and all of them at the end: checked
 * against a reference (insertion by time, then push order) for random
 * rounds of 1 to 8 runs. Records read from a stream stay pinned in its
 * chunks until delivered: records of up to 9 KB over several 1 MiB chunks
 * come out whole and intact, and every chunk is let go at the end.
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

enum { MAX = 4096 };

struct seen {
    uint64_t time[MAX], id[MAX];
    size_t n;
};

/* Each record carries its push number in its bytes. */
static int deliver(void *ctx, const struct pd_record *r)
{
    struct seen *s = ctx;
    assert_true(s->n < MAX);
    s->id[s->n] = pd_u64(r->data + 8);
    s->time[s->n++] = r->offset; /* the test keeps the time as the offset */
    return 0;
}

static void push(struct pd_queue *q, uint64_t time, uint64_t id)
{
    uint8_t bytes[16] = {0};
    memcpy(bytes + 8, &id, sizeof(id));
    struct pd_record r = {bytes, PERF_RECORD_SAMPLE, sizeof(bytes), 0, time, 0};
    assert_int_equal(pd_queue_push(q, &r, time), 0);
}

/* The queue's order, by hand: time, then push number. */
static bool before(uint64_t ta, uint64_t ia, uint64_t tb, uint64_t ib)
{
    return ta < tb || (ta == tb && ia < ib);
}

static void check_sorted(const struct seen *s, size_t from)
{
    for (size_t i = from + 1; i < s->n; i++)
        assert_true(before(s->time[i - 1], s->id[i - 1], s->time[i], s->id[i]));
}

/* One round of nruns runs, times from base on. */
static size_t push_round(struct pd_queue *q, uint64_t *rng, uint64_t base, size_t nruns,
                         uint64_t *id)
{
    size_t n = 0;
    for (size_t r = 0; r < nruns; r++) {
        uint64_t t = base + next_random(rng) % 50;
        for (size_t k = next_random(rng) % 40; k > 0; k--, n++) {
            push(q, t, (*id)++);
            t += next_random(rng) % 3; /* ties within a run and across runs */
        }
    }
    return n;
}

static void test_rounds(void **state)
{
    (void)state;
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    for (int trial = 0; trial < 200; trial++) {
        struct pd_queue q;
        struct seen s = {.n = 0};
        uint64_t id = 0, base = 1000, pushed = 0, limit = 0;
        pd_queue_init(&q, NULL);
        for (int round = 0; round < 6; round++) {
            pushed += push_round(&q, &rng, base, 1 + next_random(&rng) % 8, &id);
            size_t from = s.n;
            struct pd_sink sink = {deliver, NULL, &s};
            assert_int_equal(pd_queue_flush(&q, NULL, PD_FLUSH_DUE, &sink), 0);
            check_sorted(&s, from);
            for (size_t i = from; i < s.n; i++)
                assert_true(s.time[i] <= limit); /* due by the round before */
            limit = q.max_time;
            base += 60;
        }
        struct pd_sink sink = {deliver, NULL, &s};
        assert_int_equal(pd_queue_flush(&q, NULL, PD_FLUSH_ALL, &sink), 0);
        assert_int_equal(s.n, pushed);
        pd_queue_release(&q);
    }
}

/* Byte i of record id's body. */
static uint8_t body_byte(uint64_t id, size_t i)
{
    return (uint8_t)(id * 31 + i);
}

/* Delivered from a stream: whole, with the bytes it was written with. */
static int deliver_intact(void *ctx, const struct pd_record *r)
{
    uint64_t id = pd_u64(r->data + 8);
    for (size_t i = 16; i < r->size; i++)
        if (r->data[i] != body_byte(id, i))
            fail_msg("record %llu: byte %zu changed", (unsigned long long)id, i);
    return deliver(ctx, r);
}

/* Rounds of records of 16 bytes to 9 KB, laid out as a file: header
 * (type, misc, size), push number, then the body. Times in q_time. */
static uint8_t *make_records(uint64_t *rng, size_t n, uint64_t *q_time, size_t *len)
{
    uint8_t *buf = malloc(n * 9000);
    assert_non_null(buf);
    size_t at = 0;
    uint64_t t = 1000;
    for (uint64_t id = 0; id < n; id++) {
        uint16_t size = (uint16_t)(16 + next_random(rng) % 8984);
        uint32_t type = PERF_RECORD_SAMPLE;
        memset(buf + at, 0, 8);
        memcpy(buf + at, &type, 4);
        memcpy(buf + at + 6, &size, 2);
        memcpy(buf + at + 8, &id, 8);
        for (size_t i = 16; i < size; i++)
            buf[at + i] = body_byte(id, i);
        at += size;
        if (id % 37 == 0) /* a new run: back in time a little */
            t -= next_random(rng) % 20;
        q_time[id] = t += next_random(rng) % 3;
    }
    *len = at;
    return buf;
}

/* The n records of the stream pushed, a round flushed to fn every 150,
 * then the rest: the most chunks held at once. */
static size_t read_rounds(struct pd_stream *st, struct pd_queue *q, size_t n, const uint64_t *times,
                          int (*fn)(void *ctx, const struct pd_record *r), void *ctx)
{
    struct pd_sink sink = {fn, NULL, ctx};
    size_t most_held = 0;
    for (uint64_t id = 0; id < n; id++) {
        const uint8_t *h, *data;
        assert_int_equal(pd_stream_peek(st, 8, &h, "a header", NULL), 0);
        uint16_t size = pd_u16(h + 6);
        assert_int_equal(pd_stream_read(st, size, &data, "a record", NULL), 0);
        struct pd_record r = {data, PERF_RECORD_SAMPLE, size, 0, times[id], 0};
        assert_int_equal(pd_queue_push(q, &r, times[id]), 0);
        if (id % 150 == 149)
            assert_int_equal(pd_queue_flush(q, NULL, PD_FLUSH_DUE, &sink), 0);
        most_held = st->nheld > most_held ? st->nheld : most_held;
    }
    assert_int_equal(pd_queue_flush(q, NULL, PD_FLUSH_ALL, &sink), 0);
    return most_held;
}

static void test_pinned(void **state)
{
    (void)state;
    enum { N = 1200 };
    uint64_t rng = 0x2545f4914f6cdd1dULL, times[N];
    size_t len;
    uint8_t *buf = make_records(&rng, N, times, &len);
    assert_true(len > (3u << 20)); /* several chunks */
    struct ember_input *in;
    assert_int_equal(ember_input_open_memory(&in, buf, len, "records", NULL), 0);
    struct pd_stream st;
    struct pd_queue q;
    struct seen *s = calloc(1, sizeof(*s));
    pd_stream_init(&st, in);
    pd_queue_init(&q, &st);
    size_t most_held = read_rounds(&st, &q, N, times, deliver_intact, s);
    assert_int_equal(s->n, N);
    bool once[N] = {false};
    for (size_t i = 0; i < N; i++) {
        assert_true(s->id[i] < N && !once[s->id[i]]);
        once[s->id[i]] = true;
    }
    assert_true(most_held > 0);
    assert_int_equal(st.nheld, 0);
    assert_int_equal(st.chunk_pins, 0);
    pd_queue_release(&q);
    pd_stream_release(&st);
    ember_input_close(in);
    free(s);
    free(buf);
}

/* Records held past their delivery, as DWARF samples are kept for a
 * batch (perf_data_jobs.c): each keeps its bytes until let go. */
enum { HOLD_MAX = 80 };

struct holder {
    struct seen *s;
    struct pd_stream *st;
    struct pd_record held[HOLD_MAX];
    size_t n, total;
};

static void check_intact(const struct pd_record *r)
{
    uint64_t id = pd_u64(r->data + 8);
    for (size_t i = 16; i < r->size; i++)
        if (r->data[i] != body_byte(id, i))
            fail_msg("held record %llu: byte %zu changed", (unsigned long long)id, i);
}

static void let_go_all(struct holder *h)
{
    for (size_t i = 0; i < h->n; i++) {
        check_intact(&h->held[i]);
        pd_stream_unpin(h->st, h->held[i].chunk1 - 1, 1);
    }
    h->n = 0;
}

static int deliver_held(void *ctx, const struct pd_record *r)
{
    struct holder *h = ctx;
    if (r->chunk1) {
        pd_stream_repin(h->st, r->chunk1 - 1);
        h->held[h->n++] = *r;
        h->total++;
    }
    if (h->n == HOLD_MAX)
        let_go_all(h);
    return deliver_intact(h->s, r);
}

static void test_held(void **state)
{
    (void)state;
    enum { N = 1200 };
    uint64_t rng = 0x9e3779b97f4a7c15ULL, times[N];
    size_t len;
    uint8_t *buf = make_records(&rng, N, times, &len);
    struct ember_input *in;
    assert_int_equal(ember_input_open_memory(&in, buf, len, "records", NULL), 0);
    struct pd_stream st;
    struct pd_queue q;
    struct holder *h = calloc(1, sizeof(*h));
    h->s = calloc(1, sizeof(*h->s));
    h->st = &st;
    pd_stream_init(&st, in);
    pd_queue_init(&q, &st);
    read_rounds(&st, &q, N, times, deliver_held, h);
    assert_true(h->n > 0); /* some are still held past the last round */
    let_go_all(h);
    assert_int_equal(h->s->n, N);
    assert_true(h->total > N * 9 / 10); /* all but those that straddled chunks */
    assert_int_equal(st.nheld, 0);
    assert_int_equal(st.chunk_pins, 0);
    pd_queue_release(&q);
    pd_stream_release(&st);
    ember_input_close(in);
    free(h->s);
    free(h);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounds),
        cmocka_unit_test(test_pinned),
        cmocka_unit_test(test_held),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
