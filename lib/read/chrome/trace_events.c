/*
 * trace_events.c - the spans of Chrome's trace events (chrome.c reads the
 * JSON and hands each event over), by the rules of speedscope's importer
 * (trace-event.ts):
 *
 * Complete "X" events (ts, dur: µs) and "B"/"E" pairs nest into stacks per
 * (pid, tid) by time; a span's weight is its self time (its duration minus
 * its children's) in µs, exact to the nanosecond; an "E" closes the
 * innermost open span (one naming another span is skipped with a warning,
 * as speedscope does); an "X" that ends after its parent is cut at the
 * parent's end; spans open at the end of the file close at the thread's
 * last timestamp. Each thread gets a root frame named as speedscope names
 * its profiles ("process (pid 1), thread (tid 2)", from "M" metadata
 * events). Frames are named by the event's name alone (speedscope appends
 * the args, which would split a span into one frame per argument value).
 *
 * Order: events are nested as they arrive when each thread's events come in
 * time order (ember's export, Perfetto's). Chrome and clang -ftime-trace
 * write an "X" when it ends, parents after children: a thread whose first
 * WINDOW events are not in time order is buffered (32 bytes an event) and
 * sorted when the input ends, as speedscope sorts every thread. An event out
 * of order on a thread read as it arrives is skipped with a warning.
 *
 * Invariants: a thread's spans are nested in time order only (span_event),
 * whichever way they arrive; a thread in M_STREAM buffers nothing; the
 * warnings about spans are held until the end, and given only if the
 * result is the spans.
 *
 * Memory: the distinct stacks (r->spans); per thread that streams, its open
 * spans; per thread still in its window or sorted, its events.
 */
#include "read/chrome/chrome_impl.h"
#include "base/arena.h"
#include "base/vec.h"

#include <errno.h>
#include <string.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

enum { WINDOW = 16384 /* events of a thread looked at before it streams */ };
#define MAX_US ((int64_t)9000000000000000) /* what fits in int64 nanoseconds */

/* ---- threads ------------------------------------------------------------------------ */

/* How a thread's events are read: buffered while its first WINDOW events
 * are looked at, then as they arrive (they were in order) or all sorted at
 * the end (they were not). */
enum mode { M_WINDOW, M_STREAM, M_SORTED };

/* An event as buffered: its frame is one of r->spans. */
struct rec {
    int64_t ts, dur; /* dur < 0: a B or an E */
    uint32_t frame;  /* UINT32_MAX: an E without a name */
    uint32_t seq;
    char kind; /* 'B', 'E', 'X' */
};

/* An open span: end is INT64_MAX for a "B"; children is the time its
 * closed children took. */
struct span {
    int64_t start, end, children;
    uint32_t frame, node;
    bool is_x;
};

struct trace_thread {
    char pid[MAX_ID_TEXT], tid[MAX_ID_TEXT];
    uint32_t root; /* its placeholder node in the reader's spans */
    enum mode mode;
    bool unordered;
    struct rec *recs;
    size_t nrecs, rcap;
    struct span *open;
    size_t nopen, ocap;
    int64_t time, max_time;
    bool have_time;
    bool weighed;
};

/* µs (fixed point) to nanoseconds; false if out of range. */
static bool to_ns(ember_fixed v, int64_t *ns)
{
    const ember_fixed per_ns = 1000000; /* 10^9 per µs, 10^6 per ns */
    if (v > (ember_fixed)MAX_US * 1000000000 || v < -(ember_fixed)MAX_US * 1000000000)
        return false;
    ember_fixed q = v / per_ns, r = v % per_ns;
    if (r * 2 >= per_ns)
        q++;
    else if (r * 2 <= -per_ns)
        q--;
    *ns = (int64_t)q;
    return true;
}

/* ---- thread names: what speedscope calls each profile ------------------------------ */

int ember_trace_events_label(struct chrome_reader *r, const char *pid, const char *tid, char *buf,
                             size_t size)
{
    char key[2 * MAX_ID_TEXT + 2];
    size_t klen = ember_chrome_pair_key(key, sizeof(key), pid, tid);
    const char *pname = ember_strmap_get(&r->process_names, pid, strlen(pid));
    const char *tname = ember_strmap_get(&r->thread_names, key, klen);
    int n;
    if (pname && tname)
        n = snprintf(buf, size, "%s (pid %s), %s (tid %s)", pname, pid, tname, tid);
    else if (pname || tname)
        n = snprintf(buf, size, "%s (pid %s, tid %s)", pname ? pname : tname, pid, tid);
    else
        n = snprintf(buf, size, "pid %s, tid %s", pid, tid);
    n = n < 0 ? 0 : (size_t)n < size ? n : (int)size - 1;
    ember_json_frame_name(buf, (size_t)n);
    return n;
}

static int metadata(struct chrome_reader *r, struct capture *c)
{
    bool process = text_is(&c->name, "process_name"), thread = text_is(&c->name, "thread_name");
    if ((!process && !thread) || !c->meta.set)
        return 0;
    char key[2 * MAX_ID_TEXT + 2];
    size_t klen = process
                      ? strlen(text_or(&c->pid))
                      : ember_chrome_pair_key(key, sizeof(key), text_or(&c->pid), text_or(&c->tid));
    struct ember_strmap *m = process ? &r->process_names : &r->thread_names;
    char *v = ember_arena_strndup(&m->arena, c->meta.s, c->meta.len);
    if (!v)
        return -ENOMEM;
    return ember_strmap_put(m, process ? text_or(&c->pid) : key, klen, v);
}

/* ---- trace events: spans per thread ---------------------------------------------- */

static void span_warn(struct chrome_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void span_warn(struct chrome_reader *r, const char *fmt, ...)
{
    r->held_total++;
    if (r->nheld == sizeof(r->held) / sizeof(r->held[0]))
        return;
    va_list ap;
    va_start(ap, fmt);
    ember_diag_vset(&r->held[r->nheld++], 0, r->j.file, ember_json_line(&r->j), fmt, ap);
    va_end(ap);
}

static void span_warnings(struct chrome_reader *r)
{
    r->st->skipped += r->held_total;
    for (size_t i = 0; i < r->nheld && r->j.o->warn; i++)
        r->j.o->warn(r->j.o->warn_ctx, &r->held[i]);
    if (r->held_total > r->nheld && r->j.o->warn) {
        struct ember_diag d;
        ember_diag_set(&d, 0, r->j.file, 0, "%llu more problems with spans like these",
                       (unsigned long long)(r->held_total - r->nheld));
        r->j.o->warn(r->j.o->warn_ctx, &d);
    }
}

static int thread_get(struct chrome_reader *r, const char *pid, const char *tid,
                      struct trace_thread **out)
{
    /* most events are of the thread before */
    struct trace_thread *last = r->nthreads ? &r->threads[r->last_thread] : NULL;
    if (last && strcmp(last->tid, tid) == 0 && strcmp(last->pid, pid) == 0) {
        *out = last;
        return 0;
    }
    char key[2 * MAX_ID_TEXT + 2];
    size_t klen = ember_chrome_pair_key(key, sizeof(key), pid, tid);
    uintptr_t v = (uintptr_t)ember_strmap_get(&r->thread_ids, key, klen);
    if (v) {
        r->last_thread = v - 1;
        *out = &r->threads[v - 1];
        return 0;
    }
    if (EMBER_VEC_RESERVE(r->threads, r->tcap, r->nthreads + 1) < 0)
        return -ENOMEM;
    r->last_thread = r->nthreads;
    struct trace_thread *th = &r->threads[r->nthreads];
    memset(th, 0, sizeof(*th));
    snprintf(th->pid, sizeof(th->pid), "%s", pid);
    snprintf(th->tid, sizeof(th->tid), "%s", tid);
    int err = ember_chrome_add_placeholder(r->spans, r->nthreads, &th->root);
    if (err)
        return err;
    r->nthreads++;
    *out = th;
    return ember_strmap_put(&r->thread_ids, key, klen, (void *)(uintptr_t)r->nthreads);
}

/* Closes the innermost open span at time at. */
static int close_span(struct chrome_reader *r, struct trace_thread *th, int64_t at)
{
    struct span *s = &th->open[--th->nopen];
    int64_t dur = at - s->start;
    if (th->nopen)
        th->open[th->nopen - 1].children += dur;
    int err = ember_chrome_add_weight(r, r->spans, s->node, dur - s->children);
    if (!err)
        th->weighed |= dur > s->children;
    return err;
}

/* Closes the "X" spans that have ended by time at. */
static int close_ended(struct chrome_reader *r, struct trace_thread *th, int64_t at)
{
    int err = 0;
    while (!err && th->nopen && th->open[th->nopen - 1].is_x && th->open[th->nopen - 1].end <= at)
        err = close_span(r, th, th->open[th->nopen - 1].end);
    return err;
}

static int open_span(struct chrome_reader *r, struct trace_thread *th, const struct rec *e)
{
    uint32_t parent = th->nopen ? th->open[th->nopen - 1].node : th->root, node;
    int64_t end = e->kind == 'X' ? e->ts + e->dur : INT64_MAX;
    if (th->nopen && th->open[th->nopen - 1].is_x && end > th->open[th->nopen - 1].end)
        end = th->open[th->nopen - 1].end; /* ends after its parent: cut there */
    int err = ember_profile_child(r->spans, parent, e->frame, &node);
    if (!err && EMBER_VEC_RESERVE(th->open, th->ocap, th->nopen + 1) < 0)
        err = -ENOMEM;
    if (!err)
        th->open[th->nopen++] = (struct span){e->ts, end, 0, e->frame, node, e->kind == 'X'};
    return err;
}

static void warn_end(struct chrome_reader *r, struct trace_thread *th, const struct rec *e)
{
    size_t len = 0;
    const char *top =
        th->nopen ? ember_profile_frame_name(r->spans, th->open[th->nopen - 1].frame, &len) : NULL;
    const char *name =
        e->frame != UINT32_MAX ? ember_profile_frame_name(r->spans, e->frame, &len) : "";
    if (!top)
        span_warn(r,
                  "skipped an \"E\" event \"%.80s\" on pid %s, tid %s: no "
                  "span is open (expected a \"B\" before it)",
                  name, th->pid, th->tid);
    else
        span_warn(r,
                  "skipped an \"E\" event \"%.80s\" on pid %s, tid %s: the "
                  "innermost open span is \"%.80s\"",
                  name, th->pid, th->tid, top);
}

/* One event of a thread, in time order. */
static int span_event(struct chrome_reader *r, struct trace_thread *th, const struct rec *e)
{
    int err = close_ended(r, th, e->ts);
    if (err)
        return err;
    th->time = e->ts;
    int64_t end = e->kind == 'X' ? e->ts + e->dur : e->ts;
    if (end > th->max_time || !th->have_time)
        th->max_time = end;
    th->have_time = true;
    if (e->kind != 'E')
        return open_span(r, th, e);
    struct span *top = th->nopen ? &th->open[th->nopen - 1] : NULL;
    if (!top || top->is_x || (e->frame != UINT32_MAX && e->frame != top->frame)) {
        warn_end(r, th, e);
        return 0;
    }
    return close_span(r, th, e->ts);
}

/* Whether e comes before f in time order (an "X" holding one that starts
 * with it comes first). */
static bool before(const struct rec *e, const struct rec *f)
{
    return e->ts < f->ts || (e->ts == f->ts && e->kind == 'X' && f->kind == 'X' && e->dur > f->dur);
}

/* An "X" that starts with the innermost span and ends after it holds it:
 * it goes under it, if nothing was nested in it yet. */
static int hold_innermost(struct chrome_reader *r, struct trace_thread *th, const struct rec *e)
{
    struct span inner = th->open[--th->nopen];
    struct rec again = {
        .ts = inner.start, .dur = inner.end - inner.start, .frame = inner.frame, .kind = 'X'};
    int err = span_event(r, th, e);
    return err ? err : span_event(r, th, &again);
}

static int stream_event(struct chrome_reader *r, struct trace_thread *th, const struct rec *e)
{
    const struct span *top = th->nopen ? &th->open[th->nopen - 1] : NULL;
    if (top && top->is_x && e->kind == 'X' && top->start == e->ts && e->ts + e->dur > top->end &&
        top->children == 0)
        return hold_innermost(r, th, e);
    if (th->have_time && e->ts < th->time) {
        if (!r->warned_order) {
            r->warned_order = true;
            span_warn(r,
                      "skipped an event out of time order on pid %s, tid %s (this "
                      "thread's first %d events were in order, so it is read as it "
                      "comes; more such events are not reported)",
                      th->pid, th->tid, WINDOW);
        } else {
            r->held_total++;
        }
        return 0;
    }
    return span_event(r, th, e);
}

static int cmp_rec(const void *a, const void *b)
{
    const struct rec *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->kind == 'X' && y->kind == 'X' && x->dur != y->dur)
        return x->dur > y->dur ? -1 : 1; /* the longer one holds the other */
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Replays a thread's buffered events, sorted if they were not in order. */
static int replay(struct chrome_reader *r, struct trace_thread *th)
{
    int err = 0;
    if (th->unordered)
        qsort(th->recs, th->nrecs, sizeof(*th->recs), cmp_rec);
    for (size_t i = 0; i < th->nrecs && !err; i++)
        err = span_event(r, th, &th->recs[i]);
    free(th->recs);
    th->recs = NULL;
    th->nrecs = th->rcap = 0;
    return err;
}

static int thread_event(struct chrome_reader *r, struct trace_thread *th, struct rec *e)
{
    if (th->mode == M_STREAM)
        return stream_event(r, th, e);
    if (EMBER_VEC_RESERVE(th->recs, th->rcap, th->nrecs + 1) < 0)
        return -ENOMEM;
    if (th->nrecs && before(e, &th->recs[th->nrecs - 1]))
        th->unordered = true;
    e->seq = (uint32_t)th->nrecs;
    th->recs[th->nrecs++] = *e;
    if (th->mode == M_WINDOW && th->nrecs >= WINDOW) {
        th->mode = th->unordered ? M_SORTED : M_STREAM;
        if (!th->unordered)
            return replay(r, th);
    }
    return 0;
}

/* Closes what is still open when the input ends. */
static int thread_finish(struct chrome_reader *r, struct trace_thread *th)
{
    int err = th->mode != M_STREAM ? replay(r, th) : 0;
    bool warned = false;
    while (!err && th->nopen) {
        const struct span *s = &th->open[th->nopen - 1];
        int64_t at = s->is_x ? s->end : th->max_time > s->start ? th->max_time : s->start;
        if (!s->is_x && !warned) {
            size_t len;
            const char *name = ember_profile_frame_name(r->spans, s->frame, &len);
            span_warn(r,
                      "span \"%.80s\" on pid %s, tid %s has no \"E\": "
                      "closed at the thread's last timestamp",
                      name, th->pid, th->tid);
            warned = true;
        }
        err = close_span(r, th, at);
    }
    return err;
}

static int span_record(struct chrome_reader *r, struct capture *c)
{
    const char *what = c->ph == 'X' ? "an \"X\"" : c->ph == 'B' ? "a \"B\"" : "an \"E\"";
    struct rec e = {.kind = c->ph, .dur = -1, .frame = UINT32_MAX};
    if (!c->has_ts || !to_ns(c->ts, &e.ts)) {
        span_warn(r, "skipped %s event without a usable \"ts\" (expected µs)", what);
        return 0;
    }
    if (c->ph == 'X') {
        ember_fixed d = c->has_dur ? c->dur : c->has_tdur ? c->tdur : 0;
        if (!to_ns(d, &e.dur) || e.dur < 0 || e.ts > INT64_MAX - e.dur) {
            span_warn(r, "skipped an \"X\" event with a bad \"dur\" (expected "
                         "µs, 0 or more)");
            return 0;
        }
    }
    struct trace_thread *th;
    int err = thread_get(r, text_or(&c->pid), text_or(&c->tid), &th);
    if (!err && (c->ph != 'E' || c->name.set)) {
        const char *name = c->name.set ? c->name.s : "(unnamed)";
        ember_json_frame_name(c->name.s, c->name.set ? c->name.len : 0);
        err = ember_profile_intern(r->spans, name, c->name.set ? c->name.len : 9, &e.frame);
    }
    return err ? err : thread_event(r, th, &e);
}

/* ---- the reader's entries ---------------------------------------------------------- */

int ember_trace_events_init(struct chrome_reader *r)
{
    r->spans = ember_profile_new();
    if (!r->spans)
        return -ENOMEM;
    if (ember_profile_has_sequence(r->p))
        ember_profile_keep_sequence(r->spans, true);
    int err = ember_strmap_init(&r->thread_ids);
    if (!err)
        err = ember_strmap_init(&r->process_names);
    return err ? err : ember_strmap_init(&r->thread_names);
}

int ember_trace_events_add(struct chrome_reader *r, struct capture *c)
{
    if (c->ph == 'X' || c->ph == 'B' || c->ph == 'E')
        return span_record(r, c);
    return c->ph == 'M' ? metadata(r, c) : 0;
}

int ember_trace_events_finish(struct chrome_reader *r)
{
    int err = 0;
    for (size_t i = 0; i < r->nthreads && !err; i++)
        err = thread_finish(r, &r->threads[i]);
    return err;
}

/* A thread's placeholder becomes its root frame. */
static int rename_thread(void *ctx, struct ember_frame *fr)
{
    struct chrome_reader *r = ctx;
    long k = ember_chrome_read_placeholder(fr->name, fr->name_len);
    if (k >= 0 && (size_t)k < r->nthreads) {
        const struct trace_thread *th = &r->threads[k];
        fr->name_len =
            (size_t)ember_trace_events_label(r, th->pid, th->tid, r->label, sizeof(r->label));
        fr->name = r->label;
        fr->kind = EMBER_FRAME_THREAD;
    }
    return 0;
}

int ember_trace_events_graft(struct chrome_reader *r)
{
    span_warnings(r);
    return ember_profile_merge_renamed(r->p, r->spans, rename_thread, r);
}

void ember_trace_events_release(struct chrome_reader *r)
{
    for (size_t i = 0; i < r->nthreads; i++) {
        free(r->threads[i].recs);
        free(r->threads[i].open);
    }
    free(r->threads);
    ember_profile_free(r->spans);
    ember_strmap_release(&r->thread_ids);
    ember_strmap_release(&r->process_names);
    ember_strmap_release(&r->thread_names);
}
