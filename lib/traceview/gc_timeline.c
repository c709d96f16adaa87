/*
 * gc_timeline.c - the samples of a recording (and an OCaml program's GC
 * phases, when it has them) on their time axis, as Chrome's Trace Event
 * JSON (Perfetto's UI, chrome://tracing, speedscope): a flame chart per
 * sampled thread, on a track (pid, tid) of its own named after its
 * command, and a track of GC phases per domain, all on the recording's
 * clock (CLOCK_MONOTONIC for ember record; ember/traceview.h).
 *
 * The profile's arrival sequence says which stack each sample had, the
 * filter's times (recorded in the same order, one per sample) when and on
 * which thread: the k samples of a sequence entry are the next k times.
 * A sample lasts until its thread's next sample, at most its period (the
 * entry's nanoseconds over its samples, when the profile counts time).
 * Consecutive samples of a thread that share frames from the root share
 * those frames' spans, as a flame chart draws them.
 *
 * Invariants: spans are written by thread, then start, then depth (outer
 * first): speedscope sorts X events by start and longest duration, stably,
 * so a parent and a child of equal extent keep that order; ts is written as
 * microseconds with three decimals, exact to the nanosecond, and so is dur
 * unless a viewer's doubles would then end a span after its parent, or at
 * a begin of its name (wire/trace_time.h, put_x): then dur is a few ulps
 * shorter, and ts + dur rounds to the exact nanosecond or just before it.
 */
#include "ember/traceview.h"
#include "base/writer.h"
#include "traceview/spans.h"
#include "traceview/timeline.h"
#include "base/diag.h"
#include "base/escape.h"
#include "wire/trace_event.h"
#include "wire/trace_time.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool find_value(const struct ember_profile *p, const char *type, unsigned *v)
{
    for (unsigned i = 0; i < ember_profile_values(p); i++)
        if (strcmp(ember_profile_value_type(p, i), type) == 0) {
            *v = i;
            return true;
        }
    return false;
}

/* A sequence entry: its samples take the next times; those of a stack a
 * transform left out (at the root) are passed over. */
static int on_entry(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct timeline *t = ctx;
    int64_t k = self[t->vsamples] / t->scale;
    if (k <= 0)
        return 0;
    if ((uint64_t)k > t->ns - t->next) {
        t->mismatch = true;
        return -EINVAL;
    }
    if (depth == 0) {
        t->next += (uint64_t)k;
        return 0;
    }
    uint64_t period = t->vtime != t->vsamples ? (uint64_t)(self[t->vtime] / t->scale / k) : 0;
    for (int64_t i = 0; i < k; i++) {
        const struct ember_sample_time *st = &t->f->v[t->next++];
        t->s[t->kept] =
            (struct tl_sample){st->pid, st->tid, st->time, period, path[depth - 1], t->kept};
        t->kept++;
    }
    return 0;
}

static int by_thread_time(const void *a, const void *b)
{
    const struct tl_sample *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int by_thread_start(const void *a, const void *b)
{
    const struct tl_span *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* The nodes from the root's child down to node, into path (cap deep). */
static size_t path_of(const struct ember_profile *p, uint32_t node, uint32_t **path, size_t *cap)
{
    size_t n = 0;
    for (uint32_t k = node; k != EMBER_ROOT; k = ember_profile_node_parent(p, k))
        n++;
    if (EMBER_VEC_RESERVE(*path, *cap, n) < 0)
        return SIZE_MAX;
    size_t i = n;
    for (uint32_t k = node; k != EMBER_ROOT; k = ember_profile_node_parent(p, k))
        (*path)[--i] = k;
    return n;
}

/* The spans of one thread's samples [a, b): a flame chart. */
struct open_frames {
    uint32_t *node;
    uint64_t *since;
    size_t n, cap, scap;
};

static int close_above(struct timeline *t, struct open_frames *o, size_t keep, uint64_t at,
                       const struct tl_sample *s)
{
    while (o->n > keep) {
        o->n--;
        if (EMBER_VEC_RESERVE(t->spans, t->scap, t->nspans + 1) < 0)
            return -ENOMEM;
        t->spans[t->nspans++] =
            (struct tl_span){s->pid, s->tid, o->node[o->n], (uint32_t)o->n, o->since[o->n], at};
    }
    return 0;
}

static int thread_spans(struct timeline *t, size_t a, size_t b, struct open_frames *o,
                        uint32_t **path, size_t *pcap)
{
    uint64_t end = 0;
    o->n = 0;
    for (size_t i = a; i < b; i++) {
        const struct tl_sample *s = &t->s[i];
        uint64_t next = i + 1 < b ? t->s[i + 1].time : s->time + (s->period ? s->period : 1000000);
        uint64_t dur = next - s->time;
        if (s->period && dur > s->period)
            dur = s->period;
        size_t n = path_of(t->p, s->node, path, pcap);
        if (n == SIZE_MAX)
            return -ENOMEM;
        size_t common = 0;
        if (s->time <= end) /* contiguous with the previous sample */
            while (common < o->n && common < n && o->node[common] == (*path)[common])
                common++;
        int err = close_above(t, o, common, o->n && s->time > end ? end : s->time, s);
        if (!err && (EMBER_VEC_RESERVE(o->node, o->cap, n) < 0 ||
                     EMBER_VEC_RESERVE(o->since, o->scap, n) < 0))
            err = -ENOMEM;
        if (err)
            return err;
        for (; o->n < n; o->n++) {
            o->node[o->n] = (*path)[o->n];
            o->since[o->n] = s->time;
        }
        end = s->time + dur;
    }
    return b > a ? close_above(t, o, 0, end, &t->s[b - 1]) : 0;
}

static int make_spans(struct timeline *t)
{
    qsort(t->s, t->ns, sizeof(*t->s), by_thread_time);
    struct open_frames o = {0};
    uint32_t *path = NULL;
    size_t pcap = 0;
    int err = 0;
    for (size_t a = 0, b; a < t->ns && !err; a = b) {
        for (b = a + 1; b < t->ns && t->s[b].pid == t->s[a].pid && t->s[b].tid == t->s[a].tid;)
            b++;
        err = thread_spans(t, a, b, &o, &path, &pcap);
    }
    free(o.node);
    free(o.since);
    free(path);
    if (!err)
        qsort(t->spans, t->nspans, sizeof(*t->spans), by_thread_start);
    return err;
}

static int pair(struct timeline *t, struct ember_diag *d)
{
    const struct ember_profile *p = t->p;
    if (!ember_profile_has_sequence(p) || !t->f->times)
        return ember_diag_set(d, -EINVAL, NULL, 0, "a timeline needs the samples in time order");
    if (t->f->nomem)
        return -ENOMEM;
    if (!find_value(p, "samples", &t->vsamples))
        return ember_diag_set(d, -EINVAL, NULL, 0, "a timeline needs the samples counted");
    unsigned sel = ember_profile_selected(p);
    bool ns = strcmp(ember_profile_value_unit(p, sel), "nanoseconds") == 0;
    t->vtime = ns ? sel : t->vsamples;
    t->scale = 1;
    for (unsigned i = 0; i < ember_profile_decimals(p); i++)
        t->scale *= 10;
    t->ns = t->f->n;
    t->s = malloc((t->ns ? t->ns : 1) * sizeof(*t->s));
    if (!t->s)
        return -ENOMEM;
    int err = ember_profile_walk_sequence_all(p, on_entry, t);
    if (t->mismatch || (!err && t->next != t->ns))
        return ember_diag_set(d, -EINVAL, NULL, 0,
                              "the samples' stacks and times do not pair (%zu times, %zu stacks)",
                              t->ns, t->next);
    t->ns = t->kept;
    return err;
}

int ember_timeline_build(struct timeline *t, struct ember_diag *d)
{
    int err = pair(t, d);
    return err ? err : make_spans(t);
}

void ember_timeline_release(struct timeline *t)
{
    free(t->s);
    free(t->spans);
}

/* The name of the root frame of node's stack: the thread's command. */
static size_t root_name(const struct ember_profile *p, uint32_t node, char *buf, size_t cap)
{
    while (ember_profile_node_parent(p, node) != EMBER_ROOT)
        node = ember_profile_node_parent(p, node);
    size_t n;
    const char *name = ember_profile_frame_name(p, ember_profile_node_frame(p, node), &n);
    int k = snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), name);
    return k > 0 ? (size_t)k : 0;
}

/* The index after the samples of (pid, tid) and those before them. */
static size_t samples_end(const struct timeline *t, uint32_t pid, uint32_t tid)
{
    size_t lo = 0, hi = t->ns;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct tl_sample *s = &t->s[mid];
        if (s->pid < pid || (s->pid == pid && s->tid <= tid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void ember_timeline_thread_name(const struct timeline *t, uint32_t pid, uint32_t tid, char *buf,
                                size_t cap)
{
    size_t end = samples_end(t, pid, tid), n = 0;
    if (end && t->s[end - 1].pid == pid && t->s[end - 1].tid == tid)
        n = root_name(t->p, t->s[end - 1].node, buf, cap);
    if (n == 0)
        n = (size_t)snprintf(buf, cap, "thread %u", tid);
    bool ocaml = t->g && pid == ember_gc_phases_pid(t->g);
    if (ocaml && n < cap)
        snprintf(buf + n, cap - n, "%s",
                 tid == pid ? " (main thread: OCaml domain 0)"
                            : " (OCaml domain not known: runtime events name no thread)");
}

void ember_timeline_process_name(const struct timeline *t, uint32_t pid, char *buf, size_t cap)
{
    size_t end = samples_end(t, pid, pid), first = samples_end(t, pid - 1, UINT32_MAX);
    size_t n = 0;
    if (pid == 0)
        first = 0;
    if (end && t->s[end - 1].pid == pid && t->s[end - 1].tid == pid)
        n = root_name(t->p, t->s[end - 1].node, buf, cap);
    else if (first < t->ns && t->s[first].pid == pid)
        n = root_name(t->p, t->s[first].node, buf, cap);
    if (n == 0)
        snprintf(buf, cap, "process %u", pid);
}

/* Events are separated by commas: the first has none. The spans open on
 * the track being written, outermost first: their exact ends, and the
 * starts, durations and ends viewers compute, which a child must not pass;
 * and where and with which names the track's spans begin. */
struct out {
    struct ember_writer w;
    bool started;
    double t0; /* the track's first ts, as a double */
    struct open_end {
        uint64_t end;
        struct ember_trace_viewed v;
    } * open;
    size_t nopen, ocap;
    struct ember_trace_starts starts;
    int err;
};

static void next_event(struct out *o)
{
    ember_writer_puts(&o->w, o->started ? ",\n" : "\n");
    o->started = true;
}

/* A new track, whose first span begins at ns. */
static void new_track(struct out *o, uint64_t ns)
{
    char ts[EMBER_TRACE_EVENT_TIME_MAX];
    ember_trace_event_time(ts, ns, false);
    o->t0 = strtod(ts, NULL);
    o->nopen = 0;
}

/* Where a span of the current track begins, and with which name. */
static void add_start(struct out *o, uint64_t begin, const char *name, size_t len, const char *mark)
{
    char ts[EMBER_TRACE_EVENT_TIME_MAX];
    ember_trace_event_time(ts, begin, false);
    if (ember_trace_starts_add(&o->starts, ts, ember_trace_name_hash(name, len, mark)))
        o->err = -ENOMEM;
}

/* A span of the current track (spans come by begin, outer first): times as
 * microseconds, exact to the nanosecond; dur is fitted where the end a
 * viewer computes would pass the exact end or the parent's, or meet a
 * begin of its name: speedscope takes each track's times from its first
 * ts, in doubles, and adds dur. */
static void put_x(struct out *o, uint32_t pid, uint32_t tid, uint64_t begin, uint64_t end,
                  const char *name, size_t len, const char *cat, const char *mark)
{
    struct ember_writer *w = &o->w;
    char ts[EMBER_TRACE_EVENT_TIME_MAX], fin[EMBER_TRACE_EVENT_TIME_MAX], dur[40];
    while (o->nopen && o->open[o->nopen - 1].end <= begin)
        o->nopen--;
    ember_trace_event_time(ts, begin, false);
    ember_trace_event_time(fin, end, false);
    ember_trace_event_time(dur, end - begin, false);
    double at = strtod(ts, NULL) - o->t0, exact = strtod(dur, NULL);
    double d = ember_trace_viewer_dur(&o->starts, o->nopen ? &o->open[o->nopen - 1].v : NULL,
                                      ember_trace_name_hash(name, len, mark), at, exact,
                                      strtod(fin, NULL), o->t0);
    if (d != exact)
        snprintf(dur, sizeof(dur), "%.17g", d);
    if (EMBER_VEC_RESERVE(o->open, o->ocap, o->nopen + 1) < 0)
        o->err = -ENOMEM;
    else
        o->open[o->nopen++] = (struct open_end){end, {at, d, at + d}};
    next_event(o);
    ember_trace_event_open(w, "", "X");
    ember_trace_event_cat(w, cat);
    ember_trace_event_ids(w, pid, tid);
    ember_trace_event_ts(w, ts);
    ember_trace_event_dur(w, dur);
    ember_trace_event_name(w, name, len, mark, EMBER_JSON_FFFD_BYTES);
    ember_trace_event_close(w);
}

static void put_name(struct out *o, const char *what, uint32_t pid, uint32_t tid, const char *name)
{
    struct ember_writer *w = &o->w;
    next_event(o);
    ember_trace_event_open(w, "", "M");
    ember_trace_event_meta(w, what);
    ember_trace_event_ids(w, pid, tid);
    ember_trace_event_meta_name(w, name, strlen(name), EMBER_JSON_FFFD_BYTES);
}

static size_t spell_span(const struct timeline *t, const struct tl_span *s, char *buf, size_t cap,
                         struct ember_frame *fr)
{
    ember_profile_frame(t->p, ember_profile_node_frame(t->p, s->node), fr);
    size_t n = ember_frame_spell(fr, buf, cap);
    return n < cap ? n : cap - 1;
}

/* Where the samples' spans of the thread at spans [a, ...) begin; returns
 * the index after the thread's spans. */
static size_t thread_starts(struct out *o, const struct timeline *t, size_t a)
{
    char buf[4096];
    struct ember_frame fr;
    size_t b = a;
    o->starts.n = 0;
    for (;
         b < t->nspans && t->spans[b].pid == t->spans[a].pid && t->spans[b].tid == t->spans[a].tid;
         b++)
        add_start(o, t->spans[b].begin, buf, spell_span(t, &t->spans[b], buf, sizeof(buf), &fr),
                  "");
    ember_trace_starts_seal(&o->starts);
    return b;
}

static void write_samples(struct out *w, const struct timeline *t)
{
    char buf[4096];
    for (size_t i = 0, track_end = 0; i < t->nspans; i++) {
        const struct tl_span *s = &t->spans[i];
        if (i == 0 || s->pid != t->spans[i - 1].pid) {
            ember_timeline_process_name(t, s->pid, buf, sizeof(buf));
            put_name(w, "process_name", s->pid, s->pid, buf);
        }
        if (i == track_end) {
            ember_timeline_thread_name(t, s->pid, s->tid, buf, sizeof(buf));
            put_name(w, "thread_name", s->pid, s->tid, buf);
            new_track(w, s->begin);
            track_end = thread_starts(w, t, i);
        }
        struct ember_frame fr;
        size_t n = spell_span(t, s, buf, sizeof(buf), &fr);
        put_x(w, s->pid, s->tid, s->begin, s->end, buf, n,
              fr.kind == EMBER_FRAME_OFFCPU ? "off-cpu" : "cpu", "");
    }
}

static const char *slice_mark(const struct ember_gc_slice *s)
{
    return s->open_at_end ? EMBER_OPEN_SPAN_MARK : "";
}

static void write_phases(struct out *w, const struct ember_gc_phases *g)
{
    uint32_t pid = ember_gc_phases_pid(g);
    char buf[96];
    for (unsigned dm = 0; dm < ember_gc_phases_domains(g); dm++) {
        size_t n = ember_gc_phases_count(g, dm);
        if (!n)
            continue;
        snprintf(buf, sizeof(buf), "OCaml domain %u: GC phases", dm);
        put_name(w, "thread_name", pid, DOMAIN_TID_BASE + dm, buf);
        new_track(w, ember_gc_phases_slice(g, dm, 0)->begin);
        w->starts.n = 0;
        for (size_t i = 0; i < n; i++) {
            const struct ember_gc_slice *s = ember_gc_phases_slice(g, dm, i);
            add_start(w, s->begin, s->name, strlen(s->name), slice_mark(s));
        }
        ember_trace_starts_seal(&w->starts);
        for (size_t i = 0; i < n; i++) {
            const struct ember_gc_slice *s = ember_gc_phases_slice(g, dm, i);
            put_x(w, pid, DOMAIN_TID_BASE + dm, s->begin, s->end, s->name, strlen(s->name), "gc",
                  slice_mark(s));
        }
    }
}

int ember_gc_timeline_chrome(const struct ember_profile *p, const struct ember_gc_filter *f,
                             const struct ember_gc_phases *g, const struct ember_sink *out,
                             struct ember_diag *d)
{
    struct timeline t = {.p = p, .g = g, .f = f};
    int err = ember_timeline_build(&t, d);
    struct out *o = err ? NULL : calloc(1, sizeof(*o));
    if (!err && !o)
        err = -ENOMEM;
    if (o) {
        ember_writer_init(&o->w, out);
        ember_writer_puts(&o->w, "{\"displayTimeUnit\":\"ns\",\"otherData\":{");
        if (g)
            ember_writer_puts(&o->w, "\"clock\":\"CLOCK_MONOTONIC\",\"domains\":\"domain 0 is "
                                     "the main thread; other domains run on threads the OCaml "
                                     "runtime makes, which runtime events do not name\"");
        ember_writer_puts(&o->w, "},\n\"traceEvents\":[");
        write_samples(o, &t);
        if (g)
            write_phases(o, g);
        ember_writer_puts(&o->w, "\n]}\n");
        err = ember_writer_flush(&o->w);
        err = o->err ? o->err : err;
        free(o->open);
        ember_trace_starts_release(&o->starts);
        free(o);
    }
    ember_timeline_release(&t);
    return err;
}
