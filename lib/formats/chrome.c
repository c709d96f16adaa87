/*
 * chrome.c - Chrome's Trace Event JSON (the array form, or {"traceEvents":
 * [...]}, as chrome://tracing, Perfetto and ember's own trace export write
 * it) and V8's CPU profiles (.cpuprofile, and the Profile/ProfileChunk/
 * CpuProfile events that DevTools puts in its traces), by the rules of
 * speedscope's importers (trace-event.ts, chrome.ts):
 *
 * Trace events: complete "X" events (ts, dur: µs) and "B"/"E" pairs nest
 * into stacks per (pid, tid) by time; a span's weight is its self time (its
 * duration minus its children's) in µs, exact to the nanosecond; an "E"
 * closes the innermost open span (one naming another span is skipped with a
 * warning, as speedscope does); an "X" that ends after its parent is cut at
 * the parent's end; spans open at the end of the file close at the thread's
 * last timestamp. Each thread gets a root frame named as speedscope names
 * its profiles ("process (pid 1), thread (tid 2)", from "M" metadata
 * events). Frames are named by the event's name alone (speedscope appends
 * the args, which would split a span into one frame per argument value).
 * Other phases are ignored. A file cut short (a crashed tracer) is read up
 * to its last whole event.
 *
 * Order: events are nested as they arrive when each thread's events come in
 * time order (ember's export, Perfetto's). Chrome and clang -ftime-trace
 * write an "X" when it ends, parents after children: a thread whose first
 * WINDOW events are not in time order is buffered (32 bytes an event) and
 * sorted when the input ends, as speedscope sorts every thread. An event out
 * of order on a thread read as it arrives is skipped with a warning.
 *
 * CPU profiles: nodes (id, callFrame, parent or children) and samples with
 * timeDeltas; consecutive equal samples are one run, and a run weighs the
 * time to the next run (times never go back: a negative delta counts 0);
 * "(root)" and "(idle)" are not frames (idle time is no stack), and
 * "(program)" and "(garbage collector)" sit on top of the previous stack,
 * as speedscope places them; a frame without a name is "(anonymous FILE:
 * LINE)". The time before the first sample, which speedscope shows as an
 * empty stack, is not a stack here. A trace that holds a CPU profile is
 * read as that profile (its other events are ignored), as speedscope does;
 * several profiles (workers) get a root frame each, named after their
 * thread.
 *
 * Memory: the stacks (distinct ones, in two scratch profiles: spans, CPU
 * samples; each thread or profile under a placeholder frame that becomes
 * its root frame, or nothing, at the end: ember_json_graft); per thread
 * that streams, its open spans; per CPU profile, its nodes and the samples
 * (8 bytes each) that wait for their time deltas, which in a .cpuprofile
 * come after them; one event's fields and profile chunk at a time.
 */
#include "formats_impl.h"
#include "json.h"
#include "model/profile_impl.h"
#include "u64map.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/strmap.h"
#include "util/vec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

enum {
    MAX_DEPTH = 32,
    WINDOW = 16384,   /* events of a thread looked at before it streams */
    MAX_TEXT = 4096,  /* longest name or id kept (longer ones are cut) */
    MAX_ID_TEXT = 64, /* pid, tid, profile id */
};
#define NS_PER_US 1000
#define MAX_US    ((int64_t)9000000000000000) /* what fits in int64 nanoseconds */

/* ---- what the reader collects ----------------------------------------------------- */

enum ctx {
    C_NONE,
    C_TOP,       /* {"traceEvents": ...} or a .cpuprofile */
    C_EVENTS,    /* the array of events */
    C_EVENT,     /* one event */
    C_ARGS,      /* its args */
    C_DATA,      /* args.data */
    C_CPU,       /* args.data.cpuProfile */
    C_NODES,     /* nodes: [...] */
    C_NODE,      /* one node */
    C_CALLFRAME, /* node.callFrame */
    C_CHILDREN,  /* node.children */
    C_SAMPLES,   /* samples: [...] */
    C_DELTAS,    /* timeDeltas: [...] */
    C_SKIP
};

enum key {
    K_OTHER,
    K_TRACE_EVENTS,
    K_NODES,
    K_SAMPLES,
    K_DELTAS,
    K_PH,
    K_NAME,
    K_TS,
    K_DUR,
    K_TDUR,
    K_PID,
    K_TID,
    K_ID,
    K_ARGS,
    K_DATA,
    K_CPU,
    K_PARENT,
    K_CHILDREN,
    K_CALLFRAME,
    K_FUNCTION,
    K_URL,
    K_LINE
};

/* A growing byte buffer for one value. */
struct text {
    char *s;
    size_t len, cap;
    bool set;
};

struct cap_node {
    int64_t id, parent;
    bool has_id, has_parent;
    uint32_t name_off, name_len;
    uint8_t flags;
};

/* The parts of the current event (or of a .cpuprofile) read so far. */
struct capture {
    char ph;
    struct text name, pid, tid, id, meta, fn, url;
    ember_fixed ts, dur, tdur;
    bool has_ts, has_dur, has_tdur, line_set;
    int64_t line;
    /* CPU profile parts */
    struct cap_node node;
    struct cap_node *nodes;
    size_t nnodes, ncap;
    char *names; /* node names, back to back */
    size_t names_len, names_cap;
    int64_t (*children)[2];                /* (parent id, child id) */
    size_t nchildren, ccap, node_children; /* the current node's start there */
    int64_t *samples, *deltas;
    size_t nsamples, scap, ndeltas, dcap;
};

enum { NODE_IGNORED = 1, NODE_ON_TOP = 2 };

/* ---- CPU profiles ------------------------------------------------------------------ */

struct pnode {
    int64_t id, parent_id;
    uint32_t frame, parent; /* parent: node index, UINT32_MAX until resolved */
    int32_t pos;            /* in the current stack, -1 if not there */
    uint8_t flags;
    bool has_parent_id;
};

struct cpu_profile {
    uint32_t root; /* its placeholder node in the reader's cpu profile */
    char pid[MAX_ID_TEXT], tid[MAX_ID_TEXT];
    struct pnode *nodes;
    size_t nnodes, ncap;
    struct ember_u64map ids;       /* node id -> index */
    struct ember_u64map parent_of; /* child id -> parent index, from children lists */
    bool ready;                    /* its nodes are known: samples can be resolved */
    /* samples and deltas waiting for each other */
    int64_t *samples, *deltas;
    size_t shead, nsamples, scap, dhead, ndeltas, dcap;
    /* the current run */
    bool started, in_run;
    int64_t last_id, elapsed, run_start;
    uint32_t *stack, *stack_node; /* node indices, and their profile nodes */
    size_t depth, stcap, sncap;
    uint32_t *open_tmp;
    size_t otcap;
    bool weighed;
};

/* ---- trace event threads ---------------------------------------------------------- */

enum mode { M_WINDOW, M_STREAM, M_SORTED };

struct rec {
    int64_t ts, dur; /* dur < 0: a B or an E */
    uint32_t frame;  /* UINT32_MAX: an E without a name */
    uint32_t seq;
    char kind; /* 'B', 'E', 'X' */
};

struct span {
    int64_t start, end, children;
    uint32_t frame, node;
    bool is_x;
};

struct thread {
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

struct chrome_reader {
    struct ember_json j;
    struct ember_profile *p;
    /* stacks as they are read: each thread's spans, each CPU profile's
     * samples under a placeholder frame (see ember_json_graft) */
    struct ember_profile *spans, *cpu;
    char label[600]; /* a root frame's name while grafting */
    struct ember_read_stats *st;
    enum ctx ctx[MAX_DEPTH];
    enum key key[MAX_DEPTH];
    struct capture cap;
    bool top_object, saw_events, in_event;
    /* threads and their names */
    struct ember_strmap thread_ids; /* "pid\x1ftid" -> thread index + 1 */
    struct thread *threads;
    size_t nthreads, tcap, last_thread;
    struct ember_strmap process_names, thread_names; /* -> arena strings */
    /* CPU profiles */
    struct ember_strmap profile_ids; /* "pid\x1fid" -> profile index + 1 */
    struct cpu_profile *profiles;
    size_t nprofiles, pcap;
    int top_profile; /* the .cpuprofile's, -1 if none */
    bool warned_order;
    /* warnings about spans, given only if the spans are read (a trace with a
     * CPU profile is read as that profile) */
    struct ember_diag held[8];
    size_t nheld;
    uint64_t held_total;
};

/* ---- small helpers ---------------------------------------------------------------- */

static int text_set(struct text *t, const void *s, size_t n)
{
    if (n > MAX_TEXT)
        n = MAX_TEXT;
    if (EMBER_VEC_RESERVE(t->s, t->cap, n + 1) < 0)
        return -ENOMEM;
    memcpy(t->s, s, n);
    t->s[n] = '\0';
    t->len = n;
    t->set = true;
    return 0;
}

/* The value, or "" if this event has none (the buffer is reused). */
static const char *text_or(const struct text *t)
{
    return t->set ? t->s : "";
}

#define text_is(t, word) text_equals((t), word, sizeof(word) - 1)
static bool text_equals(const struct text *t, const char *word, size_t len)
{
    return t->set && t->len == len && memcmp(t->s, word, len) == 0;
}

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

/* A duration in nanoseconds as µs with as few decimals as it needs. */
static struct ember_decimal ns_to_us(int64_t ns)
{
    struct ember_decimal d = {ns, 3};
    while (d.digits > 0 && d.mant % 10 == 0)
        d.mant /= 10, d.digits--;
    return d;
}

static int add_weight(struct chrome_reader *r, struct ember_profile *t, uint32_t node, int64_t ns)
{
    if (ns <= 0 || node == EMBER_ROOT)
        return 0;
    int err = ember_profile_add_decimal(t, node, 0, ns_to_us(ns));
    if (!err)
        r->st->samples++;
    return err;
}

static bool fixed_integer(const char *s, size_t n, int64_t *v)
{
    ember_fixed f;
    const ember_fixed unit = 1000000000;
    if (!ember_json_fixed(s, n, &f) || f % unit != 0 || f / unit > INT64_MAX / 2 ||
        f / unit < -(INT64_MAX / 2))
        return false;
    *v = (int64_t)(f / unit);
    return true;
}

/* "pid\x1fsecond": the key of a thread or of a profile. */
static size_t pair_key(char *buf, size_t size, const char *a, const char *b)
{
    int n = snprintf(buf, size, "%s\x1f%s", a, b);
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

/* ---- thread names: what speedscope calls each profile ------------------------------ */

static const char *name_of(struct ember_strmap *m, const char *key, size_t len)
{
    return ember_strmap_get(m, key, len);
}

static int thread_label(struct chrome_reader *r, const char *pid, const char *tid, char *buf,
                        size_t size)
{
    char key[2 * MAX_ID_TEXT + 2];
    size_t klen = pair_key(key, sizeof(key), pid, tid);
    const char *pname = name_of(&r->process_names, pid, strlen(pid));
    const char *tname = name_of(&r->thread_names, key, klen);
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
    size_t klen = process ? strlen(text_or(&c->pid))
                          : pair_key(key, sizeof(key), text_or(&c->pid), text_or(&c->tid));
    struct ember_strmap *m = process ? &r->process_names : &r->thread_names;
    char *v = ember_arena_strndup(&m->arena, c->meta.s, c->meta.len);
    if (!v)
        return -ENOMEM;
    return ember_strmap_put(m, process ? text_or(&c->pid) : key, klen, v);
}

/* ---- trace events: spans per thread ---------------------------------------------- */

/* The node under which thread or profile number k builds its stacks. */
static int placeholder(struct ember_profile *t, size_t k, uint32_t *node)
{
    char name[24];
    uint32_t frame;
    int n = snprintf(name, sizeof(name), "%c%zu", EMBER_JSON_PLACEHOLDER, k);
    int err = ember_profile_intern(t, name, (size_t)n, &frame);
    return err ? err : ember_profile_child(t, EMBER_ROOT, frame, node);
}

static void span_warn(struct chrome_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void span_warn(struct chrome_reader *r, const char *fmt, ...)
{
    r->held_total++;
    if (r->nheld == sizeof(r->held) / sizeof(r->held[0]))
        return;
    char msg[480];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ember_diag_set(&r->held[r->nheld++], 0, r->j.file, ember_json_line(&r->j), "%s", msg);
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
                      struct thread **out)
{
    /* most events are of the thread before */
    struct thread *last = r->nthreads ? &r->threads[r->last_thread] : NULL;
    if (last && strcmp(last->tid, tid) == 0 && strcmp(last->pid, pid) == 0) {
        *out = last;
        return 0;
    }
    char key[2 * MAX_ID_TEXT + 2];
    size_t klen = pair_key(key, sizeof(key), pid, tid);
    uintptr_t v = (uintptr_t)ember_strmap_get(&r->thread_ids, key, klen);
    if (v) {
        r->last_thread = v - 1;
        *out = &r->threads[v - 1];
        return 0;
    }
    if (EMBER_VEC_RESERVE(r->threads, r->tcap, r->nthreads + 1) < 0)
        return -ENOMEM;
    r->last_thread = r->nthreads;
    struct thread *th = &r->threads[r->nthreads];
    memset(th, 0, sizeof(*th));
    snprintf(th->pid, sizeof(th->pid), "%s", pid);
    snprintf(th->tid, sizeof(th->tid), "%s", tid);
    int err = placeholder(r->spans, r->nthreads, &th->root);
    if (err)
        return err;
    r->nthreads++;
    *out = th;
    return ember_strmap_put(&r->thread_ids, key, klen, (void *)(uintptr_t)r->nthreads);
}

/* Closes the innermost open span at time at. */
static int close_span(struct chrome_reader *r, struct thread *th, int64_t at)
{
    struct span *s = &th->open[--th->nopen];
    int64_t dur = at - s->start;
    if (th->nopen)
        th->open[th->nopen - 1].children += dur;
    int err = add_weight(r, r->spans, s->node, dur - s->children);
    if (!err)
        th->weighed |= dur > s->children;
    return err;
}

/* Closes the "X" spans that have ended by time at. */
static int close_ended(struct chrome_reader *r, struct thread *th, int64_t at)
{
    int err = 0;
    while (!err && th->nopen && th->open[th->nopen - 1].is_x && th->open[th->nopen - 1].end <= at)
        err = close_span(r, th, th->open[th->nopen - 1].end);
    return err;
}

static int open_span(struct chrome_reader *r, struct thread *th, const struct rec *e)
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

static void warn_end(struct chrome_reader *r, struct thread *th, const struct rec *e)
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
static int span_event(struct chrome_reader *r, struct thread *th, const struct rec *e)
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
static int hold_innermost(struct chrome_reader *r, struct thread *th, const struct rec *e)
{
    struct span inner = th->open[--th->nopen];
    struct rec again = {
        .ts = inner.start, .dur = inner.end - inner.start, .frame = inner.frame, .kind = 'X'};
    int err = span_event(r, th, e);
    return err ? err : span_event(r, th, &again);
}

static int stream_event(struct chrome_reader *r, struct thread *th, const struct rec *e)
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
static int replay(struct chrome_reader *r, struct thread *th)
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

static int thread_event(struct chrome_reader *r, struct thread *th, struct rec *e)
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
static int thread_finish(struct chrome_reader *r, struct thread *th)
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
    struct thread *th;
    int err = thread_get(r, text_or(&c->pid), text_or(&c->tid), &th);
    if (!err && (c->ph != 'E' || c->name.set)) {
        const char *name = c->name.set ? c->name.s : "(unnamed)";
        ember_json_frame_name(c->name.s, c->name.set ? c->name.len : 0);
        err = ember_profile_intern(r->spans, name, c->name.set ? c->name.len : 9, &e.frame);
    }
    return err ? err : thread_event(r, th, &e);
}

/* ---- CPU profiles -------------------------------------------------------------------- */

static int profile_get(struct chrome_reader *r, const char *pid, const char *id, const char *tid,
                       struct cpu_profile **out)
{
    char key[2 * MAX_TEXT + 2];
    size_t klen = pair_key(key, sizeof(key), pid, id);
    uintptr_t v = (uintptr_t)ember_strmap_get(&r->profile_ids, key, klen);
    if (v) {
        *out = &r->profiles[v - 1];
        return 0;
    }
    if (EMBER_VEC_RESERVE(r->profiles, r->pcap, r->nprofiles + 1) < 0)
        return -ENOMEM;
    struct cpu_profile *cp = &r->profiles[r->nprofiles];
    memset(cp, 0, sizeof(*cp));
    snprintf(cp->pid, sizeof(cp->pid), "%s", pid);
    snprintf(cp->tid, sizeof(cp->tid), "%s", tid);
    int err = ember_u64map_init(&cp->ids);
    if (!err)
        err = ember_u64map_init(&cp->parent_of);
    r->nprofiles++; /* released whatever happened */
    if (!err)
        err = placeholder(r->cpu, r->nprofiles - 1, &cp->root);
    if (err)
        return err;
    *out = cp;
    return ember_strmap_put(&r->profile_ids, key, klen, (void *)(uintptr_t)r->nprofiles);
}

/* The display name of a node: speedscope's. */
static int node_name(struct capture *c, struct cap_node *n)
{
    char buf[MAX_TEXT + 64];
    const char *s = buf;
    size_t len;
    n->flags = 0;
    if (text_is(&c->fn, "(root)") || text_is(&c->fn, "(idle)") ||
        text_is(&c->url, "native dummy.js"))
        n->flags |= NODE_IGNORED;
    if (text_is(&c->fn, "(program)") || text_is(&c->fn, "(garbage collector)"))
        n->flags |= NODE_ON_TOP;
    if (c->fn.set && c->fn.len) {
        s = c->fn.s, len = c->fn.len;
    } else if (c->url.set && c->url.len) {
        const char *slash = memrchr(c->url.s, '/', c->url.len);
        const char *base = slash ? slash + 1 : c->url.s;
        int m = c->line_set ? snprintf(buf, sizeof(buf), "(anonymous %.*s:%lld)",
                                       (int)(c->url.len - (size_t)(base - c->url.s)), base,
                                       (long long)c->line + 1)
                            : snprintf(buf, sizeof(buf), "(anonymous %.*s)",
                                       (int)(c->url.len - (size_t)(base - c->url.s)), base);
        len = m < 0 ? 0 : (size_t)m < sizeof(buf) ? (size_t)m : sizeof(buf) - 1;
    } else {
        s = "(anonymous)", len = 11;
    }
    if (EMBER_VEC_RESERVE(c->names, c->names_cap, c->names_len + len + 1) < 0)
        return -ENOMEM;
    memcpy(c->names + c->names_len, s, len);
    ember_json_frame_name(c->names + c->names_len, len);
    n->name_off = (uint32_t)c->names_len;
    n->name_len = (uint32_t)len;
    c->names_len += len;
    return 0;
}

static int add_nodes(struct chrome_reader *r, struct cpu_profile *cp, const struct capture *c)
{
    int err = 0;
    for (size_t i = 0; i < c->nnodes && !err; i++) {
        const struct cap_node *n = &c->nodes[i];
        uint32_t frame, index;
        if (ember_u64map_get(&cp->ids, (uint64_t)n->id, &index))
            continue; /* defined twice: the first one holds */
        if (cp->nnodes >= INT32_MAX || EMBER_VEC_RESERVE(cp->nodes, cp->ncap, cp->nnodes + 1) < 0)
            return -ENOMEM;
        err = ember_profile_intern(r->cpu, c->names + n->name_off, n->name_len, &frame);
        if (!err)
            err = ember_u64map_put(&cp->ids, (uint64_t)n->id, (uint32_t)cp->nnodes);
        cp->nodes[cp->nnodes++] =
            (struct pnode){n->id, n->parent, frame, UINT32_MAX, -1, n->flags, n->has_parent};
    }
    /* children lists: the parent is a node of this capture, known now */
    for (size_t i = 0; i < c->nchildren && !err; i++) {
        uint32_t parent;
        if (ember_u64map_get(&cp->ids, (uint64_t)c->children[i][0], &parent))
            err = ember_u64map_put(&cp->parent_of, (uint64_t)c->children[i][1], parent);
    }
    return err;
}

/* The parent of node n (an index), UINT32_MAX for none. */
static uint32_t parent_of(struct cpu_profile *cp, uint32_t n)
{
    struct pnode *pn = &cp->nodes[n];
    if (pn->parent != UINT32_MAX)
        return pn->parent;
    uint32_t index;
    if (pn->has_parent_id ? !ember_u64map_get(&cp->ids, (uint64_t)pn->parent_id, &index)
                          : !ember_u64map_get(&cp->parent_of, (uint64_t)pn->id, &index))
        return UINT32_MAX;
    if (index == n)
        return UINT32_MAX;
    pn->parent = index; /* cached: nodes never change once known */
    return index;
}

/* Where the walk from node n goes next: its parent, or for "(program)"
 * and "(garbage collector)" the top of the current stack. */
static uint32_t next_up(struct cpu_profile *cp, uint32_t n)
{
    if (cp->nodes[n].flags & NODE_ON_TOP)
        return cp->depth ? cp->stack[cp->depth - 1] : UINT32_MAX;
    return parent_of(cp, n);
}

/* Makes the stack that of node top, as speedscope's importer moves from
 * one sample's stack to the next (the nearest common ancestor stays). */
static int move_to(struct chrome_reader *r, struct cpu_profile *cp, uint32_t top)
{
    size_t steps = 0, limit = cp->nnodes + 1;
    uint32_t lca = top;
    while (lca != UINT32_MAX && cp->nodes[lca].pos < 0) {
        if (++steps > limit)
            return ember_json_fail(&r->j, "the CPU profile's nodes form a cycle (expected each "
                                          "node's parents to lead to the root)");
        lca = next_up(cp, lca);
    }
    while (cp->depth && cp->stack[cp->depth - 1] != lca)
        cp->nodes[cp->stack[--cp->depth]].pos = -1;
    size_t nopen = 0;
    steps = 0;
    for (uint32_t n = top; n != UINT32_MAX && n != lca && !(cp->nodes[n].flags & NODE_IGNORED);
         n = next_up(cp, n)) {
        if (++steps > limit)
            return ember_json_fail(&r->j, "the CPU profile's nodes form a cycle (expected each "
                                          "node's parents to lead to the root)");
        if (EMBER_VEC_RESERVE(cp->open_tmp, cp->otcap, nopen + 1) < 0)
            return ember_json_error(&r->j, -ENOMEM);
        cp->open_tmp[nopen++] = n;
    }
    while (nopen) {
        uint32_t n = cp->open_tmp[--nopen], node;
        uint32_t parent = cp->depth ? cp->stack_node[cp->depth - 1] : cp->root;
        int err = ember_profile_child(r->cpu, parent, cp->nodes[n].frame, &node);
        if (!err && (EMBER_VEC_RESERVE(cp->stack, cp->stcap, cp->depth + 1) < 0 ||
                     EMBER_VEC_RESERVE(cp->stack_node, cp->sncap, cp->depth + 1) < 0))
            err = -ENOMEM;
        if (err)
            return ember_json_error(&r->j, err);
        cp->nodes[n].pos = (int32_t)cp->depth;
        cp->stack[cp->depth] = n;
        cp->stack_node[cp->depth++] = node;
    }
    return 1;
}

/* The current run ends at time `at`: it weighs the time since it began. */
static int end_run(struct chrome_reader *r, struct cpu_profile *cp, int64_t at)
{
    if (!cp->in_run || at <= cp->run_start || !cp->depth)
        return 0;
    int err = add_weight(r, r->cpu, cp->stack_node[cp->depth - 1], at - cp->run_start);
    cp->weighed |= !err;
    return err;
}

/* One sample: node id, and the time since the previous sample (µs). */
static int sample(struct chrome_reader *r, struct cpu_profile *cp, int64_t id, int64_t delta_us)
{
    int64_t delta;
    if (__builtin_mul_overflow(delta_us, NS_PER_US, &delta))
        return ember_json_fail(&r->j, "time delta out of range (expected µs)");
    if (!cp->started) {
        cp->started = true;
        cp->elapsed = delta;
    } else if (__builtin_add_overflow(cp->elapsed, delta, &cp->elapsed)) {
        return ember_json_fail(&r->j, "time deltas overflow (expected µs since the start)");
    }
    if (cp->in_run && id == cp->last_id)
        return 1;
    /* a new run: times never go back */
    int64_t at = cp->in_run && cp->elapsed < cp->run_start ? cp->run_start : cp->elapsed;
    int err = end_run(r, cp, at);
    if (err)
        return ember_json_error(&r->j, err);
    uint32_t index;
    cp->last_id = id;
    cp->in_run = true;
    cp->run_start = at;
    if (!ember_u64map_get(&cp->ids, (uint64_t)id, &index)) {
        ember_json_warn(&r->j, r->st, "sample of unknown node %lld (expected the id of a node)",
                        (long long)id);
        return 1;
    }
    return move_to(r, cp, index);
}

/* Pairs waiting samples and deltas, once the nodes are known. */
static int pair_samples(struct chrome_reader *r, struct cpu_profile *cp)
{
    if (!cp->ready)
        return 1;
    while (cp->shead < cp->nsamples && cp->dhead < cp->ndeltas)
        if (!sample(r, cp, cp->samples[cp->shead++], cp->deltas[cp->dhead++]))
            return 0;
    if (cp->shead == cp->nsamples)
        cp->shead = cp->nsamples = 0;
    if (cp->dhead == cp->ndeltas)
        cp->dhead = cp->ndeltas = 0;
    return 1;
}

static int queue(int64_t **v, size_t *n, size_t *cap, const int64_t *add, size_t nadd)
{
    if (nadd == 0)
        return 0;
    if (EMBER_VEC_RESERVE(*v, *cap, *n + nadd) < 0)
        return -ENOMEM;
    memcpy(*v + *n, add, nadd * sizeof(*add));
    *n += nadd;
    return 0;
}

/* Moves what the capture holds of a profile into cp. */
static int apply_capture(struct chrome_reader *r, struct cpu_profile *cp, struct capture *c,
                         bool ready)
{
    int err = add_nodes(r, cp, c);
    if (!err)
        err = queue(&cp->samples, &cp->nsamples, &cp->scap, c->samples, c->nsamples);
    if (!err)
        err = queue(&cp->deltas, &cp->ndeltas, &cp->dcap, c->deltas, c->ndeltas);
    if (err)
        return ember_json_error(&r->j, err);
    c->nnodes = c->nchildren = c->nsamples = c->ndeltas = c->names_len = 0;
    cp->ready |= ready;
    return pair_samples(r, cp);
}

/* Profile, ProfileChunk and CpuProfile events. */
static int profile_event(struct chrome_reader *r, struct capture *c)
{
    const char *pid = text_or(&c->pid), *tid = text_or(&c->tid);
    char key[2 * MAX_ID_TEXT + 2];
    const char *id = c->id.s;
    if (!c->id.set) {
        pair_key(key, sizeof(key), pid, tid);
        id = key;
    }
    struct cpu_profile *cp;
    int err = profile_get(r, pid, id, tid, &cp);
    if (err)
        return ember_json_error(&r->j, err);
    if (!text_is(&c->name, "ProfileChunk")) {
        /* the event that declares it says whose thread it is */
        snprintf(cp->tid, sizeof(cp->tid), "%s", tid);
    }
    return apply_capture(r, cp, c, true);
}

/* ---- events ---------------------------------------------------------------------------- */

static void capture_reset(struct capture *c)
{
    c->ph = 0;
    c->name.set = c->pid.set = c->tid.set = c->id.set = c->meta.set = false;
    c->has_ts = c->has_dur = c->has_tdur = false;
    c->nnodes = c->nchildren = c->nsamples = c->ndeltas = c->names_len = 0;
}

static int event_end(struct chrome_reader *r)
{
    struct capture *c = &r->cap;
    int err = 0;
    if (text_is(&c->name, "Profile") || text_is(&c->name, "ProfileChunk") ||
        text_is(&c->name, "CpuProfile"))
        return profile_event(r, c);
    if (c->ph == 'X' || c->ph == 'B' || c->ph == 'E')
        err = span_record(r, c);
    else if (c->ph == 'M')
        err = metadata(r, c);
    return err ? ember_json_error(&r->j, err) : 1;
}

/* ---- the JSON paths ----------------------------------------------------------------------- */

static enum ctx here(const struct chrome_reader *r)
{
    unsigned d = r->j.depth;
    return d == 0 ? C_NONE : d <= MAX_DEPTH ? r->ctx[d - 1] : C_SKIP;
}

static enum key here_key(const struct chrome_reader *r)
{
    unsigned d = r->j.depth;
    return d == 0 || d > MAX_DEPTH ? K_OTHER : r->key[d - 1];
}

/* The keys that matter, by context (a key is looked up for every value of
 * the input: by length first). */
struct key_name {
    enum ctx ctx;
    uint8_t len;
    char name[14];
    enum key key;
};

#define KEY(c, s, k)                                                                               \
    {                                                                                              \
        c, sizeof(s) - 1, s, k                                                                     \
    }
static const struct key_name keys[] = {
    KEY(C_TOP, "traceEvents", K_TRACE_EVENTS),
    KEY(C_TOP, "nodes", K_NODES),
    KEY(C_TOP, "samples", K_SAMPLES),
    KEY(C_TOP, "timeDeltas", K_DELTAS),
    KEY(C_EVENT, "ph", K_PH),
    KEY(C_EVENT, "name", K_NAME),
    KEY(C_EVENT, "ts", K_TS),
    KEY(C_EVENT, "dur", K_DUR),
    KEY(C_EVENT, "tdur", K_TDUR),
    KEY(C_EVENT, "pid", K_PID),
    KEY(C_EVENT, "tid", K_TID),
    KEY(C_EVENT, "id", K_ID),
    KEY(C_EVENT, "args", K_ARGS),
    KEY(C_ARGS, "name", K_NAME),
    KEY(C_ARGS, "data", K_DATA),
    KEY(C_DATA, "cpuProfile", K_CPU),
    KEY(C_DATA, "timeDeltas", K_DELTAS),
    KEY(C_CPU, "nodes", K_NODES),
    KEY(C_CPU, "samples", K_SAMPLES),
    KEY(C_CPU, "timeDeltas", K_DELTAS),
    KEY(C_NODE, "id", K_ID),
    KEY(C_NODE, "parent", K_PARENT),
    KEY(C_NODE, "children", K_CHILDREN),
    KEY(C_NODE, "callFrame", K_CALLFRAME),
    KEY(C_CALLFRAME, "functionName", K_FUNCTION),
    KEY(C_CALLFRAME, "url", K_URL),
    KEY(C_CALLFRAME, "lineNumber", K_LINE),
};
#undef KEY

/* The keys of an event, the most frequent lookup, without a loop. */
static enum key event_key(const unsigned char *s, size_t n)
{
    switch (n) {
    case 2:
        return s[0] == 'p' && s[1] == 'h'   ? K_PH
               : s[0] == 't' && s[1] == 's' ? K_TS
               : s[0] == 'i' && s[1] == 'd' ? K_ID
                                            : K_OTHER;
    case 3:
        return memcmp(s, "dur", 3) == 0   ? K_DUR
               : memcmp(s, "pid", 3) == 0 ? K_PID
               : memcmp(s, "tid", 3) == 0 ? K_TID
                                          : K_OTHER;
    case 4:
        return memcmp(s, "name", 4) == 0   ? K_NAME
               : memcmp(s, "args", 4) == 0 ? K_ARGS
               : memcmp(s, "tdur", 4) == 0 ? K_TDUR
                                           : K_OTHER;
    default:
        return K_OTHER;
    }
}

static enum key key_of(enum ctx c, const unsigned char *s, size_t n)
{
    if (c == C_EVENT)
        return event_key(s, n);
    if (c != C_TOP && c != C_EVENT && c != C_ARGS && c != C_DATA && c != C_CPU && c != C_NODE &&
        c != C_CALLFRAME)
        return K_OTHER;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (keys[i].ctx == c && keys[i].len == n && memcmp(keys[i].name, s, n) == 0)
            return keys[i].key;
    return K_OTHER;
}

static enum ctx child(const struct chrome_reader *r, bool map)
{
    enum ctx c = here(r);
    enum key k = here_key(r);
    if (c == C_NONE)
        return map ? C_TOP : C_EVENTS;
    if (c == C_EVENTS)
        return map ? C_EVENT : C_SKIP;
    if (c == C_NODES)
        return map ? C_NODE : C_SKIP;
    if (map) {
        if ((c == C_EVENT && k == K_ARGS) || (c == C_ARGS && k == K_DATA) ||
            (c == C_DATA && k == K_CPU) || (c == C_NODE && k == K_CALLFRAME))
            return c == C_EVENT ? C_ARGS : c == C_ARGS ? C_DATA : c == C_DATA ? C_CPU : C_CALLFRAME;
        return C_SKIP;
    }
    if (c == C_TOP && k == K_TRACE_EVENTS)
        return C_EVENTS;
    if ((c == C_TOP || c == C_CPU) && k == K_NODES)
        return C_NODES;
    if ((c == C_TOP || c == C_CPU) && k == K_SAMPLES)
        return C_SAMPLES;
    if ((c == C_TOP || c == C_CPU || c == C_DATA) && k == K_DELTAS)
        return C_DELTAS;
    if (c == C_NODE && k == K_CHILDREN)
        return C_CHILDREN;
    return C_SKIP;
}

static int top_profile(struct chrome_reader *r, struct cpu_profile **cp)
{
    if (r->top_profile < 0) {
        int err = profile_get(r, "", "", "", cp);
        if (err)
            return ember_json_error(&r->j, err);
        r->top_profile = (int)(*cp - r->profiles);
    }
    *cp = &r->profiles[r->top_profile];
    return 1;
}

static int open_container(struct chrome_reader *r, bool map)
{
    enum ctx c = child(r, map);
    if (c == C_EVENT) {
        capture_reset(&r->cap);
        r->in_event = true;
    }
    if (c == C_NODE) {
        r->cap.node = (struct cap_node){0};
        r->cap.node_children = r->cap.nchildren;
        r->cap.fn.set = r->cap.url.set = r->cap.line_set = false;
    }
    if (c == C_EVENTS)
        r->saw_events = true;
    if (c == C_TOP)
        r->top_object = true;
    ember_json_begin(&r->j);
    if (r->j.depth <= MAX_DEPTH) {
        r->ctx[r->j.depth - 1] = c;
        r->key[r->j.depth - 1] = K_OTHER;
    }
    return 1;
}

static int node_end(struct chrome_reader *r)
{
    struct capture *c = &r->cap;
    if (!c->node.has_id)
        return ember_json_fail(&r->j, "CPU profile node without an \"id\" (expected {\"id\": N, "
                                      "\"callFrame\": {...}, ...})");
    for (size_t i = c->node_children; i < c->nchildren; i++)
        c->children[i][0] = c->node.id;
    int err = node_name(c, &c->node);
    if (!err && EMBER_VEC_RESERVE(c->nodes, c->ncap, c->nnodes + 1) < 0)
        err = -ENOMEM;
    if (err)
        return ember_json_error(&r->j, err);
    c->nodes[c->nnodes++] = c->node;
    return 1;
}

static int close_container(struct chrome_reader *r)
{
    enum ctx c = here(r);
    ember_json_end(&r->j);
    if (c == C_EVENT) {
        r->in_event = false;
        return event_end(r);
    }
    if (c == C_NODE)
        return node_end(r);
    if (here(r) == C_TOP && (c == C_NODES || c == C_SAMPLES || c == C_DELTAS)) {
        /* a .cpuprofile: its parts go to its profile as they end */
        struct cpu_profile *cp;
        return top_profile(r, &cp) && apply_capture(r, cp, &r->cap, cp->ready || c == C_NODES);
    }
    return 1;
}

/* Numbers of CPU profiles; -1 for the others. */
static int profile_number(struct chrome_reader *r, enum ctx c, enum key k, const char *s, size_t n)
{
    struct capture *cap = &r->cap;
    int64_t v;
    if (c == C_SAMPLES || c == C_DELTAS || c == C_CHILDREN) {
        if (!fixed_integer(s, n, &v))
            return ember_json_fail(&r->j, "expected an integer in %s, not %.*s",
                                   c == C_SAMPLES  ? "samples"
                                   : c == C_DELTAS ? "timeDeltas"
                                                   : "children",
                                   (int)(n > 30 ? 30 : n), s);
        int err = 0;
        if (c == C_SAMPLES) {
            err = queue(&cap->samples, &cap->nsamples, &cap->scap, &v, 1);
        } else if (c == C_DELTAS) {
            err = queue(&cap->deltas, &cap->ndeltas, &cap->dcap, &v, 1);
        } else if (EMBER_VEC_RESERVE(cap->children, cap->ccap, cap->nchildren + 1) < 0) {
            err = -ENOMEM;
        } else {
            /* (parent, child): the parent's id may come after, at the node's end */
            cap->children[cap->nchildren][0] = 0;
            cap->children[cap->nchildren++][1] = v;
        }
        return err ? ember_json_error(&r->j, err) : 1;
    }
    if (c == C_NODE && (k == K_ID || k == K_PARENT)) {
        if (!fixed_integer(s, n, &v))
            return ember_json_fail(&r->j, "expected an integer node %s",
                                   k == K_ID ? "id" : "parent");
        if (k == K_ID)
            cap->node.id = v, cap->node.has_id = true;
        else
            cap->node.parent = v, cap->node.has_parent = true;
        return 1;
    }
    if (c == C_CALLFRAME && k == K_LINE) {
        cap->line_set = fixed_integer(s, n, &cap->line);
        return 1;
    }
    return -1;
}

static int on_number(void *ctx, const char *s, size_t n)
{
    struct chrome_reader *r = ctx;
    enum ctx c = here(r);
    enum key k = here_key(r);
    struct capture *cap = &r->cap;
    int done = profile_number(r, c, k, s, n);
    if (done >= 0)
        return done;
    if (c == C_EVENT) {
        switch (k) {
        case K_TS:
            cap->has_ts = ember_json_fixed(s, n, &cap->ts);
            break;
        case K_DUR:
            cap->has_dur = ember_json_fixed(s, n, &cap->dur);
            break;
        case K_TDUR:
            cap->has_tdur = ember_json_fixed(s, n, &cap->tdur);
            break;
        case K_PID:
        case K_TID:
        case K_ID:
            return text_set(k == K_PID   ? &cap->pid
                            : k == K_TID ? &cap->tid
                                         : &cap->id,
                            s, n > MAX_ID_TEXT - 1 ? MAX_ID_TEXT - 1 : n)
                       ? ember_json_error(&r->j, -ENOMEM)
                       : 1;
        default:
            break;
        }
    }
    if (c == C_NONE)
        return ember_json_fail(&r->j, "expected a Chrome trace ([events] or {\"traceEvents\": "
                                      "[...]}) or a .cpuprofile, not a number");
    return 1;
}

static int on_string(void *ctx, const unsigned char *s, size_t n)
{
    struct chrome_reader *r = ctx;
    enum ctx c = here(r);
    enum key k = here_key(r);
    struct capture *cap = &r->cap;
    struct text *t = NULL;
    if (c == C_EVENT && k == K_PH)
        cap->ph = n == 1 ? (char)s[0] : '?';
    else if (c == C_EVENT && k == K_NAME)
        t = &cap->name;
    else if (c == C_EVENT && (k == K_PID || k == K_TID || k == K_ID))
        t = k == K_PID ? &cap->pid : k == K_TID ? &cap->tid : &cap->id;
    else if (c == C_ARGS && k == K_NAME)
        t = &cap->meta;
    else if (c == C_CALLFRAME && (k == K_FUNCTION || k == K_URL))
        t = k == K_FUNCTION ? &cap->fn : &cap->url;
    else if (c == C_SAMPLES || c == C_DELTAS || c == C_CHILDREN)
        return ember_json_fail(&r->j, "expected an integer, not a string");
    else if (c == C_NONE)
        return ember_json_fail(&r->j, "expected a Chrome trace ([events] or {\"traceEvents\": "
                                      "[...]}) or a .cpuprofile, not a string");
    if (t && (k == K_PID || k == K_TID || k == K_ID) && n > MAX_ID_TEXT - 1)
        n = MAX_ID_TEXT - 1;
    if (t && text_set(t, s, n))
        return ember_json_error(&r->j, -ENOMEM);
    return 1;
}

static int on_scalar(void *ctx)
{
    struct chrome_reader *r = ctx;
    enum ctx c = here(r);
    if (c == C_SAMPLES || c == C_DELTAS || c == C_CHILDREN || c == C_NONE)
        return on_string(ctx, (const unsigned char *)"", 0);
    return 1;
}

static int on_bool(void *ctx, int b)
{
    (void)b;
    return on_scalar(ctx);
}

static int on_key(void *ctx, const unsigned char *s, size_t n)
{
    struct chrome_reader *r = ctx;
    if (r->j.depth > 0 && r->j.depth <= MAX_DEPTH)
        r->key[r->j.depth - 1] = key_of(here(r), s, n);
    return 1;
}

static int on_start_map(void *ctx)
{
    return open_container(ctx, true);
}

static int on_start_array(void *ctx)
{
    return open_container(ctx, false);
}

static int on_end(void *ctx)
{
    return close_container(ctx);
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_scalar,
    .yajl_boolean = on_bool,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = on_end,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end,
};

/* ---- the result ------------------------------------------------------------------------ */

/* Placeholder k: its number, or -1 if name is not a placeholder. */
static long placeholder_index(const char *name, size_t len)
{
    if (len < 2 || name[0] != EMBER_JSON_PLACEHOLDER)
        return -1;
    return strtol(name + 1, NULL, 10);
}

/* A thread's placeholder becomes its root frame. */
static int rename_thread(void *ctx, const char **name, size_t *len)
{
    struct chrome_reader *r = ctx;
    long k = placeholder_index(*name, *len);
    if (k >= 0 && (size_t)k < r->nthreads) {
        const struct thread *th = &r->threads[k];
        *len = (size_t)thread_label(r, th->pid, th->tid, r->label, sizeof(r->label));
        *name = r->label;
    }
    return 0;
}

/* A CPU profile's placeholder becomes its thread's root frame when there
 * are several, and goes otherwise. */
static int rename_profile(void *ctx, const char **name, size_t *len)
{
    struct chrome_reader *r = ctx;
    long k = placeholder_index(*name, *len);
    size_t weighed = 0;
    if (k < 0 || (size_t)k >= r->nprofiles)
        return 0;
    for (size_t i = 0; i < r->nprofiles; i++)
        weighed += r->profiles[i].weighed;
    if (weighed < 2) {
        *name = NULL;
        return 0;
    }
    const struct cpu_profile *cp = &r->profiles[k];
    *len = (size_t)thread_label(r, cp->pid, cp->tid, r->label, sizeof(r->label));
    *name = r->label;
    return 0;
}

static int finish(struct chrome_reader *r, struct ember_diag *d)
{
    const char *file = r->j.file;
    if (r->j.truncated && !r->saw_events)
        return ember_diag_set(d, -EINVAL, file, ember_json_line(&r->j),
                              "the input ends inside a JSON value (a truncated file?)");
    /* a trace may lack its closing "]" (the format allows it), not half an event */
    if (r->j.truncated && r->in_event)
        ember_json_warn(&r->j, r->st,
                        "the input ends inside an event (a trace cut short?): "
                        "read the events before it");
    if (!r->saw_events && r->top_profile < 0)
        return ember_diag_set(d, -EINVAL, file, 1,
                              "expected a Chrome trace ([events] or {\"traceEvents\": [...]}) or "
                              "a .cpuprofile ({\"nodes\": [...], \"samples\": [...], ...})");
    int err = 0;
    for (size_t i = 0; i < r->nprofiles && !err; i++) {
        struct cpu_profile *cp = &r->profiles[i];
        cp->ready = true;
        if (pair_samples(r, cp)) /* the last run ends at the last sample */
            err = end_run(r, cp, cp->elapsed > cp->run_start ? cp->elapsed : cp->run_start);
        else
            err = r->j.err;
    }
    for (size_t i = 0; i < r->nthreads && !err; i++)
        err = thread_finish(r, &r->threads[i]);
    size_t weighed = 0;
    for (size_t i = 0; i < r->nprofiles; i++)
        weighed += r->profiles[i].weighed;
    if (!err && !weighed)
        span_warnings(r);
    if (!err)
        err = weighed ? ember_json_graft(r->p, r->cpu, rename_profile, r)
                      : ember_json_graft(r->p, r->spans, rename_thread, r);
    if (!err && (weighed || r->nthreads)) /* for the writers that say it */
        ember_profile_set_unit(r->p, weighed ? "cpu" : "time", "microseconds");
    if (err == -ERANGE)
        return ember_diag_set(d, err, file, 0, "weights overflow a 64-bit total");
    return err;
}

static void release(struct chrome_reader *r)
{
    struct capture *c = &r->cap;
    struct text *texts[] = {&c->name, &c->pid, &c->tid, &c->id, &c->meta, &c->fn, &c->url};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        free(texts[i]->s);
    free(c->nodes);
    free(c->names);
    free(c->children);
    free(c->samples);
    free(c->deltas);
    for (size_t i = 0; i < r->nthreads; i++) {
        free(r->threads[i].recs);
        free(r->threads[i].open);
    }
    free(r->threads);
    for (size_t i = 0; i < r->nprofiles; i++) {
        struct cpu_profile *cp = &r->profiles[i];
        ember_u64map_release(&cp->ids);
        ember_u64map_release(&cp->parent_of);
        free(cp->nodes);
        free(cp->samples);
        free(cp->deltas);
        free(cp->stack);
        free(cp->stack_node);
        free(cp->open_tmp);
    }
    free(r->profiles);
    ember_profile_free(r->spans);
    ember_profile_free(r->cpu);
    ember_strmap_release(&r->thread_ids);
    ember_strmap_release(&r->process_names);
    ember_strmap_release(&r->thread_names);
    ember_strmap_release(&r->profile_ids);
}

static int chrome_read(struct ember_profile *p, struct ember_input *in,
                       const struct ember_read_opts *o, struct ember_read_stats *st,
                       struct ember_diag *d)
{
    struct chrome_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->p = p;
    r->st = st;
    r->top_profile = -1;
    r->j = (struct ember_json){
        .in = in, .file = ember_input_name(in), .d = d, .o = o, .allow_cut = true};
    r->spans = ember_profile_new();
    r->cpu = ember_profile_new();
    int err = r->spans && r->cpu ? ember_strmap_init(&r->thread_ids) : -ENOMEM;
    if (!err && ember_profile_has_sequence(p)) {
        ember_profile_keep_sequence(r->spans, true);
        ember_profile_keep_sequence(r->cpu, true);
    }
    if (!err)
        err = ember_strmap_init(&r->process_names);
    if (!err)
        err = ember_strmap_init(&r->thread_names);
    if (!err)
        err = ember_strmap_init(&r->profile_ids);
    if (!err)
        err = ember_json_parse(&r->j, &callbacks, r);
    if (!err)
        err = finish(r, d);
    release(r);
    free(r);
    return err;
}

/* '[' then an object with "ph" (trace events), or '{' with "traceEvents",
 * or with a .cpuprofile's "nodes" and "callFrame". */
static enum ember_probe chrome_probe(const char *data, size_t len)
{
    size_t i = 0;
    if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
        i = 3;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    if (i == len)
        return EMBER_PROBE_NO;
    if (data[i] == '[') {
        while (++i < len &&
               (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
            ;
        if (i < len && data[i] != '{' && data[i] != ']')
            return EMBER_PROBE_NO;
        return memmem(data, len, "\"ph\"", 4) ? EMBER_PROBE_YES : EMBER_PROBE_MAYBE;
    }
    if (data[i] != '{')
        return EMBER_PROBE_NO;
    if (memmem(data, len, "\"traceEvents\"", 13) ||
        (memmem(data, len, "\"nodes\"", 7) && memmem(data, len, "\"callFrame\"", 11)))
        return EMBER_PROBE_YES;
    return EMBER_PROBE_NO;
}

const struct ember_format ember_format_chrome = {
    .name = "chrome",
    .description = "Chrome trace events (X, B/E spans) and V8 CPU profiles (.cpuprofile)",
    .probe = chrome_probe,
    .read = chrome_read,
};
