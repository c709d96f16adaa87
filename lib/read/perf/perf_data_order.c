/*
 * perf_data_order.c - records delivered in time order, as perf's
 * ordered_events delivers them to perf script.
 *
 * perf record writes each CPU's buffer in turn, so a process's MMAP may
 * follow, in the file, samples taken after it on another CPU. perf queues
 * every timed record and, at each FINISHED_ROUND, delivers those not later
 * than the newest time of the round before (all of them at the end),
 * sorted by time, ties in file order. Doing the same gives every sample the
 * threads and maps perf gives it. A round's records come either pushed one
 * by one (pd_queue_push) or framed and sorted elsewhere (a pd_round,
 * perf_data_rounds.c): either way a flush merges them with what the queue
 * kept, in the same order.
 * Invariants: a queued record stays in the stream's chunk, pinned there
 * until it is delivered (or its pin handed to the sink's held), or is a
 * copy in the queue's bytes when it straddled two chunks (or there is no
 * stream); what the queue keeps between flushes is sorted; memory holds at
 * most two rounds of records.
 */
#include "read/perf/perf_order.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

void pd_queue_init(struct pd_queue *q, struct pd_stream *s)
{
    memset(q, 0, sizeof(*q));
    q->stream = s;
}

void pd_sort_room_release(struct pd_sort_room *room)
{
    free(room->tmp);
    free(room->runs);
    *room = (struct pd_sort_room){0};
}

void pd_queue_release(struct pd_queue *q)
{
    free(q->ev);
    free(q->bytes);
    free(q->spare);
    pd_sort_room_release(&q->room);
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

/* ---- sorting ------------------------------------------------------------ */

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

/* A natural merge sort: what a flush kept is one sorted run, and a round's
 * records come in a few more (perf record writes each CPU's buffer in
 * turn, each in time order), so a round costs about two passes, not a
 * comparison sort's n log n calls. */
int pd_queue_sort(struct pd_queued *ev, size_t n, size_t sorted, struct pd_sort_room *room)
{
    size_t nruns = 0;
    if (n < 2)
        return 0;
    if (EMBER_VEC_RESERVE(room->tmp, room->tcap, n) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && (i < sorted || !before(&ev[i], &ev[i - 1])))
            continue;
        if (EMBER_VEC_RESERVE(room->runs, room->rcap, nruns + 2) < 0)
            return -ENOMEM;
        room->runs[nruns++] = i;
    }
    size_t *starts = room->runs;
    for (starts[nruns] = n; nruns > 1; nruns = (nruns + 1) / 2) {
        size_t w = 0;
        for (size_t r = 0; r < nruns; r += 2, w++) {
            if (r + 1 < nruns)
                merge(ev, starts[r], starts[r + 1], starts[r + 2], room->tmp);
            starts[w] = starts[r];
        }
        starts[w] = n;
    }
    return 0;
}

/* ---- delivering ----------------------------------------------------------- */

/* One side of a flush's merge: sorted records, where their copies are, and
 * the round they are, if any (whose runs of pinned samples go to the
 * sink's held as they are, up to its next special record). */
struct side {
    const struct pd_queued *ev;
    size_t n, i;
    const uint8_t *bytes;
    const struct pd_round *round;
    size_t sp; /* round->special[sp] is the next special record from i on */
};

static struct side round_side(const struct pd_round *round, size_t from)
{
    struct side s = {round->ev, round->ntimed, from, round->bytes, round, 0};
    while (s.sp < round->nspecial && round->special[s.sp] < from)
        s.sp++;
    return s;
}

static const uint8_t *side_data(const struct side *s, const struct pd_queued *e)
{
    return e->chunk == PD_COPIED ? s->bytes + e->u.at : e->u.data;
}

int pd_queue_emit(struct pd_queue *q, const struct pd_queued *e, const uint8_t *data,
                  const struct pd_sink *sink)
{
    bool pinned = e->chunk != PD_COPIED;
    struct pd_record r = {data, e->type, e->size, e->misc, e->offset, pinned ? e->chunk + 1 : 0};
    int err = sink->fn(sink->ctx, &r);
    if (pinned)
        pd_stream_unpin(q->stream, e->chunk, 1);
    return err;
}

/* A run of pinned samples to the sink's held, or (where it takes none)
 * each to fn. */
static int give(struct pd_queue *q, const struct pd_sink *sink, const struct pd_queued *ev,
                const struct pd_held_record *held, size_t n)
{
    if (!q->refused) {
        int took = sink->held(sink->ctx, held, n);
        if (took != 0)
            return took < 0 ? took : 0;
        q->refused = true;
    }
    int err = 0;
    for (size_t i = 0; i < n && !err; i++)
        err = pd_queue_emit(q, &ev[i], held[i].data, sink);
    return err;
}

/* Side s's records [s->i, to) to the sink, in order. */
static int emit_range(struct pd_queue *q, struct side *s, size_t to, const struct pd_sink *sink)
{
    const struct pd_round *round = s->round;
    int err = 0;
    while (!err && s->i < to) {
        if (!round || !sink->held || q->refused) {
            err = pd_queue_emit(q, &s->ev[s->i], side_data(s, &s->ev[s->i]), sink);
            s->i++;
            continue;
        }
        size_t special = s->sp < round->nspecial ? round->special[s->sp] : SIZE_MAX;
        size_t end = special < to ? special : to;
        if (s->i < end)
            err = give(q, sink, s->ev + s->i, round->held + s->i, end - s->i);
        s->i = end;
        if (!err && s->i == special && special < to) {
            err = pd_queue_emit(q, &s->ev[s->i], side_data(s, &s->ev[s->i]), sink);
            s->i++;
            s->sp++;
        }
    }
    return err;
}

/* The first of ev[lo, hi) not before head, ev[lo] being before it:
 * galloping, as runs are mostly long. */
static size_t run_end(const struct pd_queued *ev, size_t lo, size_t hi,
                      const struct pd_queued *head)
{
    size_t ok = lo, step = 1;
    while (ok + step < hi && before(&ev[ok + step], head)) {
        ok += step;
        step *= 2;
    }
    size_t bad = ok + step < hi ? ok + step : hi;
    while (bad - ok > 1) {
        size_t mid = ok + (bad - ok) / 2;
        if (before(&ev[mid], head))
            ok = mid;
        else
            bad = mid;
    }
    return bad;
}

/* The first of s's records from s->i later than limit. */
static size_t due_end(const struct side *s, uint64_t limit)
{
    size_t lo = s->i, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->ev[mid].time <= limit)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* a's and b's records not later than limit to the sink, merged in order. */
static int merge_due(struct pd_queue *q, struct side *a, struct side *b, uint64_t limit,
                     const struct pd_sink *sink)
{
    size_t na = due_end(a, limit), nb = due_end(b, limit);
    int err = 0;
    while (!err && (a->i < na || b->i < nb)) {
        bool from_a = a->i < na && (b->i == nb || before(&a->ev[a->i], &b->ev[b->i]));
        struct side *x = from_a ? a : b, *o = from_a ? b : a;
        size_t xend = from_a ? na : nb, oend = from_a ? nb : na;
        size_t to = o->i < oend ? run_end(x->ev, x->i, xend, &o->ev[o->i]) : xend;
        err = emit_range(q, x, to, sink);
    }
    return err;
}

/* Keeps what a flush left of a and b, merged, in the queue: pinned ones
 * stay in their chunks, copies are gathered at the front of the queue's
 * bytes through the spare buffer. The buffers keep their sizes from round
 * to round, so a round's pages are not faulted in again, and the spare
 * holds only what is kept: peak memory is a round and what it keeps. */
static int keep_rest(struct pd_queue *q, struct side *a, struct side *b)
{
    size_t n = (a->n - a->i) + (b->n - b->i), copied = 0, used = 0;
    bool own = b->i == b->n && a->ev == q->ev; /* the queue's own rest: moved where it is */
    for (struct side *s = a; s; s = s == a ? b : NULL)
        for (size_t i = s->i; i < s->n; i++)
            copied += s->ev[i].chunk == PD_COPIED ? s->ev[i].size : 0;
    if ((!own && EMBER_VEC_RESERVE(q->room.tmp, q->room.tcap, n) < 0) ||
        EMBER_VEC_RESERVE(q->spare, q->scap, copied) < 0)
        return -ENOMEM;
    struct pd_queued *to = own ? q->ev : q->room.tmp;
    for (size_t k = 0; k < n; k++) {
        bool from_a = a->i < a->n && (b->i == b->n || before(&a->ev[a->i], &b->ev[b->i]));
        struct side *from = from_a ? a : b;
        struct pd_queued e = from->ev[from->i++];
        if (e.chunk == PD_COPIED) {
            memcpy(q->spare + used, side_data(from, &e), e.size);
            e.u.at = used;
            used += e.size;
        }
        to[k] = e;
    }
    /* a's records are read: the queue's arrays may move now */
    if ((!own && EMBER_VEC_RESERVE(q->ev, q->cap, n) < 0) ||
        (used && EMBER_VEC_RESERVE(q->bytes, q->bcap, used) < 0))
        return -ENOMEM;
    if (used)
        memcpy(q->bytes, q->spare, used);
    q->used = used;
    if (!own)
        memcpy(q->ev, q->room.tmp, n * sizeof(*q->ev));
    q->n = q->sorted = n;
    return 0;
}

int pd_queue_flush(struct pd_queue *q, const struct pd_round *round, enum pd_flush how,
                   const struct pd_sink *sink)
{
    if (round && round->max_time > q->max_time)
        q->max_time = round->max_time;
    size_t rn = round ? round->ntimed : 0,
           qn = q->pending ? q->pending->ntimed - q->pending_i : q->n;
    if (qn + rn == 0)
        return 0; /* perf keeps its next limit when nothing was queued */
    int err = pd_queue_sort(q->ev, q->n, q->sorted, &q->room);
    struct side a = {q->ev, q->n, 0, q->bytes, NULL, 0}, b = {NULL, 0, 0, NULL, NULL, 0};
    if (q->pending) /* the last round's rest: the queue holds nothing else */
        a = round_side(q->pending, q->pending_i);
    if (round)
        b = round_side(round, 0);
    uint64_t limit = how == PD_FLUSH_ALL ? UINT64_MAX : how == PD_FLUSH_DUE ? q->next_flush : 0;
    if (!err)
        err = merge_due(q, &a, &b, limit, sink);
    if (err)
        return err;
    if (how == PD_FLUSH_DUE)
        q->next_flush = q->max_time;
    if (how == PD_FLUSH_ALL) { /* the last round: its memory is the profile's now */
        struct pd_stream *s = q->stream;
        pd_queue_release(q);
        pd_queue_init(q, s);
        return 0;
    }
    q->pending = NULL;
    if (a.i < a.n)
        return keep_rest(q, &a, &b);
    q->n = q->sorted = q->used = 0;
    if (b.i < b.n) { /* kept where it is, till the next flush */
        q->pending = round;
        q->pending_i = b.i;
    }
    return 0;
}
