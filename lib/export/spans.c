/*
 * spans.c - span pairing (see spans.h).
 */
#include "spans.h"
#include "util/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct open_span {
    const char *name;
    int64_t begin;
};

struct thread_spans {
    struct open_span *stack;
    size_t n, cap;
    int64_t last;
};

struct pairing {
    struct thread_spans *threads;
    unsigned nthreads;
    ember_span_fn fn;
    void *ctx;
    struct ember_span_stats *st;
};

static int close_to(struct pairing *pr, unsigned ring, size_t keep, int64_t at, bool own_end)
{
    struct thread_spans *ts = &pr->threads[ring];
    int err = 0;
    while (ts->n > keep && !err) {
        struct open_span *o = &ts->stack[--ts->n];
        bool flagged = !(own_end && ts->n == keep);
        struct ember_span s = {o->name,         ring,   o->begin, at < o->begin ? o->begin : at,
                               (unsigned)ts->n, flagged};
        if (flagged)
            pr->st->unclosed++;
        err = pr->fn(pr->ctx, &s);
    }
    return err;
}

static int on_event(void *ctx, const struct ember_trace_event *e)
{
    struct pairing *pr = ctx;
    struct thread_spans *ts = &pr->threads[e->ring];
    ts->last = e->ns;
    if (e->site->kind == EMBER_EV_BEGIN) {
        if (EMBER_VEC_RESERVE(ts->stack, ts->cap, ts->n + 1) < 0)
            return -ENOMEM;
        ts->stack[ts->n++] = (struct open_span){e->site->name, e->ns};
    } else if (e->site->kind == EMBER_EV_END) {
        size_t k = ts->n;
        while (k > 0 && strcmp(ts->stack[k - 1].name, e->site->name) != 0)
            k--;
        if (k == 0) {
            pr->st->unmatched_ends++;
            return 0;
        }
        return close_to(pr, e->ring, k - 1, e->ns, true);
    }
    return 0;
}

int ember_trace_each_span(struct ember_trace *t, ember_span_fn fn, void *ctx,
                          struct ember_span_stats *st)
{
    struct pairing pr = {.nthreads = ember_trace_ring_count(t), .fn = fn, .ctx = ctx, .st = st};
    memset(st, 0, sizeof(*st));
    pr.threads = calloc(pr.nthreads ? pr.nthreads : 1, sizeof(*pr.threads));
    if (!pr.threads)
        return -ENOMEM;
    int err = ember_trace_each(t, on_event, &pr);
    for (unsigned i = 0; i < pr.nthreads && !err; i++)
        err = close_to(&pr, i, 0, pr.threads[i].last, false);
    for (unsigned i = 0; i < pr.nthreads; i++)
        free(pr.threads[i].stack);
    free(pr.threads);
    return err;
}
