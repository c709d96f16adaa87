/*
 * perf_data_order.c - records delivered in time order, as perf's
 * ordered_events delivers them to perf script.
 *
 * perf record writes each CPU's buffer in turn, so a process's MMAP may
 * follow, in the file, samples taken after it on another CPU. perf queues
 * every timed record and, at each FINISHED_ROUND, delivers those not later
 * than the newest time of the round before (all of them at the end),
 * sorted by time, ties in file order. Doing the same gives every sample the
 * threads and maps perf gives it.
 * Invariants: queued records are copies (the stream reuses its buffers);
 * memory holds at most two rounds of records.
 */
#include "read/perf/perf_data.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

struct pd_queued {
    uint64_t time, seq, offset;
    size_t at; /* in the queue's bytes */
    uint32_t type, size;
    uint16_t misc;
};

void pd_queue_init(struct pd_queue *q)
{
    memset(q, 0, sizeof(*q));
}

void pd_queue_release(struct pd_queue *q)
{
    free(q->ev);
    free(q->bytes);
}

int pd_queue_push(struct pd_queue *q, const struct pd_record *r, uint64_t time)
{
    if (EMBER_VEC_RESERVE(q->ev, q->cap, q->n + 1) < 0 ||
        EMBER_VEC_RESERVE(q->bytes, q->bcap, q->used + r->size) < 0)
        return -ENOMEM;
    memcpy(q->bytes + q->used, r->data, r->size);
    q->ev[q->n++] =
        (struct pd_queued){time, q->seq++, r->offset, q->used, r->type, r->size, r->misc};
    q->used += r->size;
    if (time > q->max_time)
        q->max_time = time;
    return 0;
}

static int by_time(const void *a, const void *b)
{
    const struct pd_queued *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Keeps the records from the k-th on, their bytes in a fresh buffer (they
 * are in time order, not in the order of their bytes). */
static int keep_from(struct pd_queue *q, size_t k)
{
    size_t total = 0, used = 0;
    for (size_t i = k; i < q->n; i++)
        total += q->ev[i].size;
    uint8_t *fresh = malloc(total > 0 ? total : 1);
    if (!fresh)
        return -ENOMEM;
    for (size_t i = k; i < q->n; i++) {
        memcpy(fresh + used, q->bytes + q->ev[i].at, q->ev[i].size);
        q->ev[i].at = used;
        used += q->ev[i].size;
    }
    free(q->bytes);
    q->bytes = fresh;
    q->bcap = total > 0 ? total : 1;
    q->used = used;
    memmove(q->ev, q->ev + k, (q->n - k) * sizeof(*q->ev));
    q->n -= k;
    q->sorted = q->n;
    return 0;
}

/* Sorts the records: those kept from the last flush are in order, the new
 * ones are sorted and merged with them. */
static int sort_queue(struct pd_queue *q)
{
    qsort(q->ev + q->sorted, q->n - q->sorted, sizeof(*q->ev), by_time);
    if (q->sorted == 0 || q->sorted == q->n)
        return 0;
    struct pd_queued *m = malloc(q->n * sizeof(*m));
    if (!m)
        return -ENOMEM;
    size_t a = 0, b = q->sorted, k = 0;
    while (a < q->sorted || b < q->n)
        m[k++] = b == q->n || (a < q->sorted && by_time(&q->ev[a], &q->ev[b]) <= 0) ? q->ev[a++]
                                                                                    : q->ev[b++];
    memcpy(q->ev, m, q->n * sizeof(*m));
    free(m);
    return 0;
}

int pd_queue_flush(struct pd_queue *q, bool final, pd_deliver_fn fn, void *ctx)
{
    if (q->n == 0)
        return 0; /* perf keeps its next limit when nothing was queued */
    uint64_t limit = final ? UINT64_MAX : q->next_flush;
    int err = sort_queue(q);
    if (err)
        return err;
    size_t k = 0;
    for (; k < q->n && q->ev[k].time <= limit && !err; k++) {
        const struct pd_queued *e = &q->ev[k];
        struct pd_record r = {q->bytes + e->at, e->type, e->size, e->misc, e->offset};
        err = fn(ctx, &r);
    }
    if (!err)
        err = keep_from(q, k);
    if (!final)
        q->next_flush = q->max_time;
    return err;
}
