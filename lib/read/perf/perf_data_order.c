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
 * Invariants: a queued record stays in the stream's chunk, pinned there
 * until it is delivered, or is a copy in the queue's bytes when it
 * straddled two chunks (or there is no stream); memory holds at most two
 * rounds of records.
 */
#include "read/perf/perf_data.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

/* chunk of a record copied into the queue's bytes */
#define PD_COPIED UINT64_MAX

struct pd_queued {
    uint64_t time, seq, offset;
    uint64_t chunk; /* the stream's chunk it is pinned in, or PD_COPIED */
    union {
        const uint8_t *data; /* in the chunk */
        size_t at;           /* in the queue's bytes */
    } u;
    uint32_t type, size;
    uint16_t misc;
};

void pd_queue_init(struct pd_queue *q, struct pd_stream *s)
{
    memset(q, 0, sizeof(*q));
    q->stream = s;
}

void pd_queue_release(struct pd_queue *q)
{
    free(q->ev);
    free(q->bytes);
    free(q->spare);
    free(q->tmp);
    free(q->runs);
}

int pd_queue_push(struct pd_queue *q, const struct pd_record *r, uint64_t time)
{
    if (EMBER_VEC_RESERVE(q->ev, q->cap, q->n + 1) < 0)
        return -ENOMEM;
    struct pd_queued *e = &q->ev[q->n];
    *e = (struct pd_queued){time, q->seq, r->offset, PD_COPIED, {0}, r->type, r->size, r->misc};
    if (q->stream && pd_stream_pin(q->stream, r->data, r->size, &e->chunk)) {
        e->u.data = r->data;
    } else {
        if (EMBER_VEC_RESERVE(q->bytes, q->bcap, q->used + r->size) < 0)
            return -ENOMEM;
        memcpy(q->bytes + q->used, r->data, r->size);
        e->u.at = q->used;
        q->used += r->size;
    }
    q->n++;
    q->seq++;
    if (time > q->max_time)
        q->max_time = time;
    return 0;
}

static const uint8_t *queued_data(const struct pd_queue *q, const struct pd_queued *e)
{
    return e->chunk == PD_COPIED ? q->bytes + e->u.at : e->u.data;
}

/* Keeps the records from the k-th on: those pinned in the stream's chunks
 * stay there, the copied ones have their bytes gathered at the front of
 * the queue's buffer through the spare one (they are in time order, not
 * in the order of their bytes). The buffer keeps its size from round
 * to round, so a round's pages are not faulted in again, and the spare
 * holds only what is kept: peak memory is a round and what it keeps, as
 * when the buffer was freed each round. */
static int keep_from(struct pd_queue *q, size_t k)
{
    size_t total = 0, used = 0;
    for (size_t i = k; i < q->n; i++)
        total += q->ev[i].chunk == PD_COPIED ? q->ev[i].size : 0;
    if (EMBER_VEC_RESERVE(q->spare, q->scap, total) < 0)
        return -ENOMEM;
    for (size_t i = k; i < q->n; i++) {
        if (q->ev[i].chunk != PD_COPIED)
            continue;
        memcpy(q->spare + used, q->bytes + q->ev[i].u.at, q->ev[i].size);
        q->ev[i].u.at = used;
        used += q->ev[i].size;
    }
    if (used)
        memcpy(q->bytes, q->spare, used);
    q->used = used;
    memmove(q->ev, q->ev + k, (q->n - k) * sizeof(*q->ev));
    q->n -= k;
    q->sorted = q->n;
    return 0;
}

static bool before(const struct pd_queued *x, const struct pd_queued *y)
{
    return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

/* Merges the sorted runs ev[a, b) and ev[b, c) through tmp. */
static void merge(struct pd_queued *ev, size_t a, size_t b, size_t c, struct pd_queued *tmp)
{
    size_t i = a, j = b, k = 0;
    while (i < b && j < c)
        tmp[k++] = before(&ev[j], &ev[i]) ? ev[j++] : ev[i++];
    while (i < b)
        tmp[k++] = ev[i++];
    memcpy(ev + a, tmp, k * sizeof(*tmp)); /* ev[j, c) is in place */
}

/* Sorts the records by a natural merge sort: the records kept from the
 * last flush are one sorted run, and the new ones come in a few more (perf
 * record writes each CPU's buffer in turn, each in time order), so a round
 * costs about two passes, not a comparison sort's n log n calls. */
static int sort_queue(struct pd_queue *q)
{
    size_t nruns = 0;
    if (EMBER_VEC_RESERVE(q->tmp, q->tcap, q->n) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < q->n; i++) {
        if (i > 0 && (i < q->sorted || !before(&q->ev[i], &q->ev[i - 1])))
            continue;
        if (EMBER_VEC_RESERVE(q->runs, q->rcap, nruns + 2) < 0)
            return -ENOMEM;
        q->runs[nruns++] = i;
    }
    size_t *starts = q->runs;
    for (starts[nruns] = q->n; nruns > 1; nruns = (nruns + 1) / 2) {
        size_t w = 0;
        for (size_t r = 0; r < nruns; r += 2, w++) {
            if (r + 1 < nruns)
                merge(q->ev, starts[r], starts[r + 1], starts[r + 2], q->tmp);
            starts[w] = starts[r];
        }
        starts[w] = q->n;
    }
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
        struct pd_record r = {queued_data(q, e), e->type,
                              e->size,           e->misc,
                              e->offset,         e->chunk == PD_COPIED ? 0 : e->chunk + 1};
        err = fn(ctx, &r);
        if (e->chunk != PD_COPIED)
            pd_stream_unpin(q->stream, e->chunk);
    }
    if (!err && final) { /* the last round: its memory is the profile's now */
        struct pd_stream *s = q->stream;
        pd_queue_release(q);
        pd_queue_init(q, s);
        return 0;
    }
    if (!err)
        err = keep_from(q, k);
    q->next_flush = q->max_time;
    return err;
}
