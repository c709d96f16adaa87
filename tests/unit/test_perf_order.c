/*
 * test_perf_order.c - perf_data_order.c's rounds: records pushed as perf
 * record writes them (each CPU's buffer in turn, each in time order, so a
 * round is a few sorted runs, with ties across them) come out of each
 * flush in time order, ties in push order, only those not later than the
 * newest time of the round before, and all of them at the end: checked
 * against a reference (insertion by time, then push order) for random
 * rounds of 1 to 8 runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "read/perf/perf_data.h"
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
    struct pd_record r = {bytes, PERF_RECORD_SAMPLE, sizeof(bytes), 0, time};
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
        pd_queue_init(&q);
        for (int round = 0; round < 6; round++) {
            pushed += push_round(&q, &rng, base, 1 + next_random(&rng) % 8, &id);
            size_t from = s.n;
            assert_int_equal(pd_queue_flush(&q, false, deliver, &s), 0);
            check_sorted(&s, from);
            for (size_t i = from; i < s.n; i++)
                assert_true(s.time[i] <= limit); /* due by the round before */
            limit = q.max_time;
            base += 60;
        }
        assert_int_equal(pd_queue_flush(&q, true, deliver, &s), 0);
        assert_int_equal(s.n, pushed);
        pd_queue_release(&q);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
