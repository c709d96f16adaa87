/*
 * timeline_merge.c - merging a trace's streams into time order: for a pass
 * (ember_trace_visit), with fresh cursors, and for a follower's polls
 * (ember_trace_poll), with the cursors and queues it keeps (timeline.c
 * opens the traces and tells the invariants).
 *
 * Invariants: events go out in raw timestamp order, the lowest ring first
 * on ties; the losses before an event are told before it; a poll hands out
 * only what no late event can precede.
 */
#include "ember/trace.h"
#include "tracefile/source.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- merging streams ---------------------------------------------------- */

struct merge {
    struct ember_trace *t;
    const struct ember_trace_visitor *v;
    uint64_t delivered;
    /* loads a cursor's next event: the backend's for a pass, the queue's
     * when following */
    int (*next)(struct ember_trace *t, struct ember_cursor *c);
};

/* Tells the losses before c's event (or before its end). */
static int tell_lost(struct merge *m, struct ember_cursor *c)
{
    int err = 0;
    if ((c->lost_events || c->lost_words) && m->v->lost)
        err = m->v->lost(m->v->ctx, c->ring, c->lost_events, c->lost_words);
    c->lost_events = c->lost_words = 0;
    return err;
}

/* Hands out c's event and loads its next: 1, 0 at its end, < 0. Inlined
 * into the merge loops, which call it for every event. */
static inline __attribute__((always_inline)) int deliver(struct merge *m, struct ember_cursor *c)
{
    int err = c->lost_events || c->lost_words ? tell_lost(m, c) : 0;
    if (!err)
        err = m->v->event(m->v->ctx, &c->e);
    if (err)
        return err < 0 ? err : -ECANCELED;
    m->delivered++;
    int got = m->next(m->t, c);
    if (got == 0)
        err = tell_lost(m, c);
    return err ? err : got;
}

static bool before(const struct ember_cursor *a, const struct ember_cursor *b)
{
    return a->key != b->key ? a->key < b->key : a->ring < b->ring;
}

static void sift_down(struct ember_cursor **heap, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, k = i;
        if (l < n && before(heap[l], heap[k]))
            k = l;
        if (l + 1 < n && before(heap[l + 1], heap[k]))
            k = l + 1;
        if (k == i)
            return;
        struct ember_cursor *tmp = heap[i];
        heap[i] = heap[k];
        heap[k] = tmp;
        i = k;
    }
}

/* Few streams (the usual case): the streams are kept sorted by their next
 * event, and the first hands out events while they come before the
 * second's next one; then it moves down to its place, past the streams
 * that now come first. One comparison per event, and a few per switch,
 * where a heap would mispredict its way down on every event. Ties keep
 * ring order: the first of equal times is the lowest ring. */
enum { SCAN_MAX = 8 };

static void sort_by_next(struct ember_cursor **act, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct ember_cursor *c = act[i];
        size_t j = i;
        for (; j > 0 && before(c, act[j - 1]); j--)
            act[j] = act[j - 1];
        act[j] = c;
    }
}

static int merge_scan(struct merge *m, struct ember_cursor **act, size_t n)
{
    sort_by_next(act, n);
    while (n > 1) {
        struct ember_cursor *c = act[0], *next = act[1];
        int got;
        do
            got = deliver(m, c);
        while (got > 0 && before(c, next));
        if (got < 0)
            return got;
        if (!got) {
            memmove(act, act + 1, (n - 1) * sizeof(*act));
            n--;
            continue;
        }
        size_t j = 1;
        for (; j < n && before(act[j], c); j++)
            act[j - 1] = act[j];
        act[j - 1] = c;
    }
    for (int got = n ? 1 : 0; got > 0;) {
        got = deliver(m, act[0]);
        if (got < 0)
            return got;
    }
    return 0;
}

static int merge_heap(struct merge *m, struct ember_cursor **heap, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(heap, n, i);
    while (n) {
        int got = deliver(m, heap[0]);
        if (got < 0)
            return got;
        if (got == 0)
            heap[0] = heap[--n];
        sift_down(heap, n, 0);
    }
    return 0;
}

/* Loads the first event of each cursor and merges them all. */
static int merge_all(struct merge *m, struct ember_cursor *cs, unsigned n)
{
    struct ember_cursor **act = calloc(n ? n : 1, sizeof(*act));
    if (!act)
        return -ENOMEM;
    size_t k = 0;
    int err = 0;
    for (unsigned i = 0; i < n && !err; i++) {
        int got = m->next(m->t, &cs[i]);
        if (got > 0)
            act[k++] = &cs[i];
        else if (got == 0)
            err = tell_lost(m, &cs[i]);
        else
            err = got;
    }
    if (!err)
        err = k <= SCAN_MAX ? merge_scan(m, act, k) : merge_heap(m, act, k);
    free(act);
    return err;
}

/* Stream by stream, each wholly. */
static int in_ring_order(struct merge *m, struct ember_cursor *cs, unsigned n)
{
    int err = 0;
    for (unsigned i = 0; i < n && !err; i++) {
        int got = m->next(m->t, &cs[i]);
        if (got == 0)
            err = tell_lost(m, &cs[i]);
        while (got > 0)
            got = deliver(m, &cs[i]);
        err = got < 0 ? got : err;
    }
    return err;
}

static int init_cursors(struct ember_trace *t, struct ember_cursor *cs, unsigned from, unsigned n)
{
    for (unsigned i = from; i < n; i++) {
        memset(&cs[i], 0, sizeof(cs[i]));
        cs[i].ring = i;
        int err = t->ops->cursor_init(t, &cs[i]);
        if (err) {
            for (unsigned k = from; k < i; k++)
                t->ops->cursor_free(t, &cs[k]);
            return err;
        }
    }
    return 0;
}

int ember_source_grow_cursors(struct ember_trace *t, struct ember_cursor **cs, unsigned *n)
{
    if (t->nrings <= *n)
        return 0;
    struct ember_cursor *c = realloc(*cs, t->nrings * sizeof(*c));
    if (!c)
        return -ENOMEM;
    *cs = c;
    int err = init_cursors(t, c, *n, t->nrings);
    if (!err)
        *n = t->nrings;
    return err;
}

/* Errors the visitor's callback returned pass through; -ECANCELED stands
 * for a callback that asked to stop (a positive value). */
int ember_trace_visit(struct ember_trace *t, const struct ember_trace_visitor *v)
{
    t->started = true;
    ember_diag_clear(&t->err);
    unsigned n = t->nrings;
    struct ember_cursor *cs = calloc(n ? n : 1, sizeof(*cs));
    if (!cs)
        return -ENOMEM;
    t->ops->pass_begin(t);
    int err = init_cursors(t, cs, 0, n);
    if (err) {
        free(cs);
        return err;
    }
    struct merge m = {t, v, 0, t->ops->cursor_next};
    err = v->in_ring_order ? in_ring_order(&m, cs, n) : merge_all(&m, cs, n);
    ember_source_free_cursors(t, cs, n);
    t->ops->pass_end(t);
    return err == -ECANCELED ? 0 : err;
}

int ember_trace_each(struct ember_trace *t, ember_trace_event_fn fn, void *ctx)
{
    struct ember_trace_visitor v = {fn, NULL, ctx, false};
    return ember_trace_visit(t, &v);
}

/* ---- following ---------------------------------------------------------- */

/* A writer that took its timestamp and was descheduled before writing its
 * event shows the event at a later poll than other streams' later events.
 * So, as perf does with FINISHED_ROUND (util/ordered-events.c), a poll
 * reads every stream to its end but hands out only the events up to the
 * largest key the poll before it read; the others wait in their stream's
 * queue for the next poll. When a poll reads nothing new (the writers are
 * quiet), and at the end, everything is handed out. Waiting events keep
 * copies of their strings: the cursor reuses its data as it reads on. */
struct waiting {
    struct ember_trace_event e;
    uint64_t key, lost_events, lost_words; /* lost just before e */
    char *strings;                         /* e's strings, or NULL */
};

struct ember_follow_queue {
    struct waiting *v;
    size_t first, n, cap;             /* v[first, n) wait, in the stream's order */
    uint64_t lost_events, lost_words; /* lost after the last event read */
    char *told;                       /* the strings of the event handed out last */
};

/* Events read from a stream per poll: what waits stays bounded (more is
 * read at the next poll, as when a reader cannot keep up). */
enum { READ_MAX = 1 << 16 };

static int discard(void *ctx, const struct ember_trace_event *e)
{
    (void)ctx;
    (void)e;
    return 0;
}

static size_t string_size(int type, const struct ember_trace_value *v)
{
    return type == EMBER_FT_STR ? strlen(v->s) + 1 : type == EMBER_FT_BYTES ? v->len : 0;
}

/* Points w's strings at copies of them. */
static int keep_strings(struct waiting *w)
{
    const struct ember_trace_site *s = w->e.site;
    size_t size = 0;
    for (unsigned i = 0; i < s->nfields; i++)
        size += string_size(s->field_types[i], &w->e.v[i]);
    w->strings = NULL;
    if (!size)
        return 0;
    char *p = w->strings = malloc(size);
    if (!p)
        return -ENOMEM;
    for (unsigned i = 0; i < s->nfields; i++) {
        size_t n = string_size(s->field_types[i], &w->e.v[i]);
        if (n)
            w->e.v[i].s = memcpy(p, w->e.v[i].s, n);
        p += n;
    }
    return 0;
}

void ember_source_free_queues(struct ember_follow_queue *qs, unsigned n)
{
    for (unsigned i = 0; qs && i < n; i++) {
        for (size_t k = qs[i].first; k < qs[i].n; k++)
            free(qs[i].v[k].strings);
        free(qs[i].v);
        free(qs[i].told);
    }
    free(qs);
}

/* Cursors and queues for the streams that appeared since the last poll. */
static int follow_new_streams(struct ember_trace *t)
{
    if (t->nrings <= t->ncursors)
        return 0;
    struct ember_follow_queue *qs = realloc(t->queues, t->nrings * sizeof(*qs));
    if (!qs)
        return -ENOMEM;
    t->queues = qs;
    memset(qs + t->ncursors, 0, (t->nrings - t->ncursors) * sizeof(*qs));
    return ember_source_grow_cursors(t, &t->cursors, &t->ncursors);
}

/* Appends the event cursor c loaded to q, its losses before it. */
static int enqueue(struct ember_trace *t, struct ember_follow_queue *q, struct ember_cursor *c)
{
    if (q->first) { /* what was handed out makes room */
        memmove(q->v, q->v + q->first, (q->n - q->first) * sizeof(*q->v));
        q->n -= q->first;
        q->first = 0;
    }
    if (EMBER_VEC_RESERVE(q->v, q->cap, q->n + 1) < 0)
        return -ENOMEM;
    struct waiting *w = &q->v[q->n];
    *w = (struct waiting){c->e, c->key, q->lost_events + c->lost_events,
                          q->lost_words + c->lost_words, NULL};
    q->lost_events = q->lost_words = c->lost_events = c->lost_words = 0;
    if (keep_strings(w) < 0)
        return -ENOMEM;
    q->n++;
    t->seen_max = c->key > t->seen_max ? c->key : t->seen_max;
    return 0;
}

/* Reads stream i up to its end (or READ_MAX events) into its queue: how
 * many events, or < 0. */
static int read_stream(struct ember_trace *t, unsigned i)
{
    struct ember_cursor *c = &t->cursors[i];
    struct ember_follow_queue *q = &t->queues[i];
    int n = 0;
    while (n < READ_MAX) {
        int got = t->ops->cursor_next(t, c);
        if (got <= 0) {
            q->lost_events += c->lost_events;
            q->lost_words += c->lost_words;
            c->lost_events = c->lost_words = 0;
            return got < 0 ? got : n;
        }
        int err = enqueue(t, q, c);
        if (err)
            return err;
        n++;
    }
    return n;
}

/* The merge's next for stream c->ring: its first waiting event if its key
 * is within the poll's limit; at the queue's end, the losses after it. */
static int queue_next(struct ember_trace *t, struct ember_cursor *c)
{
    struct ember_follow_queue *q = &t->queues[c->ring];
    free(q->told); /* the event handed out before is done with */
    q->told = NULL;
    if (q->first == q->n) {
        c->lost_events += q->lost_events;
        c->lost_words += q->lost_words;
        q->lost_events = q->lost_words = 0;
        return 0;
    }
    struct waiting *w = &q->v[q->first];
    if (w->key > t->limit)
        return 0;
    c->e = w->e;
    c->key = w->key;
    c->lost_events += w->lost_events;
    c->lost_words += w->lost_words;
    q->told = w->strings;
    q->first++;
    return 1;
}

/* Hands out the waiting events up to t->limit, in time order. */
static int hand_out(struct ember_trace *t, struct merge *m)
{
    struct ember_cursor *qc = calloc(t->ncursors ? t->ncursors : 1, sizeof(*qc));
    if (!qc)
        return -ENOMEM;
    for (unsigned i = 0; i < t->ncursors; i++)
        qc[i].ring = i;
    int err = merge_all(m, qc, t->ncursors);
    free(qc);
    return err;
}

int ember_trace_poll(struct ember_trace *t, ember_trace_event_fn fn, void *ctx, bool final)
{
    if (!t->live)
        return -EINVAL;
    t->started = true;
    ember_diag_clear(&t->err);
    int err = t->ops->refresh(t);
    if (!err)
        err = follow_new_streams(t);
    uint64_t previous = t->seen_max;
    bool quiet = true;
    for (unsigned i = 0; i < t->ncursors && !err; i++) {
        int got = read_stream(t, i);
        err = got < 0 ? got : 0;
        quiet = quiet && got == 0;
    }
    if (err)
        return err;
    t->limit = final || quiet ? UINT64_MAX : previous;
    struct ember_trace_visitor v = {fn ? fn : discard, NULL, ctx, false};
    struct merge m = {t, &v, 0, queue_next};
    err = hand_out(t, &m);
    if (err == -ECANCELED)
        err = 0;
    return err ? err : (int)(m.delivered > INT32_MAX ? INT32_MAX : m.delivered);
}
