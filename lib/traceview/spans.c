/*
 * spans.c - span pairing (see spans.h).
 */
#include "traceview/spans.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ember_span_stack_push(struct ember_span_stack *st, const struct ember_trace_event *e, bool open)
{
    if (EMBER_VEC_RESERVE(st->s, st->cap, st->n + 1) < 0)
        return -ENOMEM;
    st->s[st->n++] = (struct ember_open_span){e->site->name, e->ns, e->seq, open};
    return 0;
}

size_t ember_span_stack_match(const struct ember_span_stack *st, const char *name)
{
    size_t k = st->n;
    while (k > 0 && strcmp(st->s[k - 1].name, name) != 0)
        k--;
    return k;
}

struct pairing {
    struct ember_span_stack *threads;
    unsigned nthreads;
    ember_span_fn fn;
    void *ctx;
    struct ember_span_stats *st;
};

/* Pops the spans of ring above keep, ending them at `at`: the last one by
 * its own end when own_end, the others unclosed (or open, at_end). */
static int close_to(struct pairing *pr, unsigned ring, size_t keep, int64_t at, bool own_end,
                    bool at_end)
{
    struct ember_span_stack *ts = &pr->threads[ring];
    int err = 0;
    while (ts->n > keep && !err) {
        struct ember_open_span *o = &ts->s[--ts->n];
        bool own = own_end && ts->n == keep;
        struct ember_span s = {
            .name = o->name,
            .ring = ring,
            .begin_ns = o->begin_ns,
            .end_ns = at < o->begin_ns ? o->begin_ns : at,
            .begin_seq = o->seq,
            .depth = (unsigned)ts->n,
            .unclosed = !own && !at_end,
            .open = at_end,
        };
        pr->st->unclosed += s.unclosed;
        pr->st->open += s.open;
        err = pr->fn(pr->ctx, &s);
    }
    return err;
}

static int on_event(void *ctx, const struct ember_trace_event *e)
{
    struct pairing *pr = ctx;
    struct ember_span_stack *ts = &pr->threads[e->ring];
    if (e->ns > pr->st->last_ns)
        pr->st->last_ns = e->ns;
    if (e->site->kind == EMBER_EV_BEGIN)
        return ember_span_stack_push(ts, e, false);
    if (e->site->kind != EMBER_EV_END)
        return 0;
    size_t k = ember_span_stack_match(ts, e->site->name);
    if (k == 0) {
        pr->st->unmatched_ends++;
        return 0;
    }
    return close_to(pr, e->ring, k - 1, e->ns, true, false);
}

int ember_trace_each_span(struct ember_trace *t, ember_span_fn fn, void *ctx,
                          struct ember_span_stats *st)
{
    struct pairing pr = {.nthreads = ember_trace_ring_count(t), .fn = fn, .ctx = ctx, .st = st};
    memset(st, 0, sizeof(*st));
    st->last_ns = INT64_MIN;
    pr.threads = calloc(pr.nthreads ? pr.nthreads : 1, sizeof(*pr.threads));
    if (!pr.threads)
        return -ENOMEM;
    int err = ember_trace_each(t, on_event, &pr);
    if (st->last_ns == INT64_MIN)
        st->last_ns = 0; /* no events */
    for (unsigned i = 0; i < pr.nthreads && !err; i++)
        err = close_to(&pr, i, 0, st->last_ns, false, true);
    for (unsigned i = 0; i < pr.nthreads; i++)
        free(pr.threads[i].s);
    free(pr.threads);
    return err;
}

/* ---- the open set ---- */

static int collect_open(void *ctx, const struct ember_span *s)
{
    struct ember_open_set *set = ctx;
    if (!s->open)
        return 0;
    if (EMBER_VEC_RESERVE(set->seqs[s->ring], set->cap[s->ring], set->n[s->ring] + 1) < 0)
        return -ENOMEM;
    set->seqs[s->ring][set->n[s->ring]++] = s->begin_seq;
    return 0;
}

static int by_seq(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int ember_open_set_find(struct ember_trace *t, struct ember_open_set *set)
{
    memset(set, 0, sizeof(*set));
    set->nrings = ember_trace_ring_count(t);
    size_t n = set->nrings ? set->nrings : 1;
    set->seqs = calloc(n, sizeof(*set->seqs));
    set->n = calloc(n, sizeof(*set->n));
    set->cap = calloc(n, sizeof(*set->cap));
    set->next = calloc(n, sizeof(*set->next));
    if (!set->seqs || !set->n || !set->cap || !set->next) {
        ember_open_set_release(set);
        return -ENOMEM;
    }
    struct ember_span_stats st;
    int err = ember_trace_each_span(t, collect_open, set, &st);
    for (unsigned i = 0; i < set->nrings && !err; i++)
        if (set->n[i] > 1)
            qsort(set->seqs[i], set->n[i], sizeof(uint64_t), by_seq);
    if (err)
        ember_open_set_release(set);
    return err;
}

bool ember_open_set_has(struct ember_open_set *set, unsigned ring, uint64_t seq)
{
    if (ring >= set->nrings)
        return false;
    while (set->next[ring] < set->n[ring] && set->seqs[ring][set->next[ring]] < seq)
        set->next[ring]++;
    return set->next[ring] < set->n[ring] && set->seqs[ring][set->next[ring]] == seq;
}

void ember_open_set_release(struct ember_open_set *set)
{
    for (unsigned i = 0; set->seqs && i < set->nrings; i++)
        free(set->seqs[i]);
    free(set->seqs);
    free(set->n);
    free(set->cap);
    free(set->next);
    memset(set, 0, sizeof(*set));
}

const char *ember_export_process_name(const struct ember_trace *t, char *buf, size_t cap)
{
    const char *exe = ember_trace_exe(t), *slash = strrchr(exe, '/');
    if (exe[0])
        return slash ? slash + 1 : exe;
    if (ember_trace_format(t) == EMBER_TRACE_OCAML)
        return "ocaml";
    snprintf(buf, cap, "pid %u", ember_trace_pid(t));
    return buf;
}
