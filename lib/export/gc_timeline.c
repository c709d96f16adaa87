/*
 * gc_timeline.c - CPU samples and an OCaml program's GC phases on one time
 * axis, as Chrome's Trace Event JSON (Perfetto's UI, chrome://tracing,
 * speedscope): a flame chart per sampled thread and a track of GC phases
 * per domain, both on CLOCK_MONOTONIC (ember/gcphases.h).
 *
 * The profile's arrival sequence says which stack each sample had, the
 * filter's times (recorded in the same order, one per sample) when and on
 * which thread: the k samples of a sequence entry are the next k times.
 * A sample lasts until its thread's next sample, at most its period (the
 * entry's nanoseconds over its samples, when the profile counts time).
 * Consecutive samples of a thread that share frames from the root share
 * those frames' spans, as a flame chart draws them.
 *
 * The same timeline as Perfetto's protobuf trace: a track per thread and
 * per domain, each span a SLICE_BEGIN and a SLICE_END, every packet in
 * time order (a track's own events in the order its nesting gives them).
 *
 * Invariants: spans are written by thread, then start, then depth (outer
 * first): speedscope sorts X events by start and longest duration, stably,
 * so a parent and a child of equal extent keep that order; every time is
 * written as microseconds with three decimals, exact to the nanosecond.
 */
#include "ember/gcphases.h"
#include "io/writer.h"
#include "protobuf.h"
#include "spans.h"
#include "util/diag.h"
#include "util/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DOMAIN_TID_BASE = 4194304 }; /* above Linux's largest pid_max */

struct sample {
    uint32_t pid, tid;
    uint64_t time, period;
    uint32_t node;
    size_t order;
};

struct span {
    uint32_t pid, tid, node, depth;
    uint64_t begin, end;
};

struct timeline {
    const struct ember_profile *p;
    const struct ember_gc_phases *g;
    const struct ember_gc_filter *f;
    unsigned vsamples, vtime; /* vtime == vsamples: no time value */
    int64_t scale;            /* 10^decimals */
    struct sample *s;
    size_t ns, next;
    struct span *spans;
    size_t nspans, scap;
    bool mismatch;
};

static bool find_value(const struct ember_profile *p, const char *type, unsigned *v)
{
    for (unsigned i = 0; i < ember_profile_values(p); i++)
        if (strcmp(ember_profile_value_type(p, i), type) == 0) {
            *v = i;
            return true;
        }
    return false;
}

/* A sequence entry: its samples take the next times. */
static int on_entry(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct timeline *t = ctx;
    int64_t k = self[t->vsamples] / t->scale;
    if (k <= 0 || depth == 0)
        return 0;
    if ((uint64_t)k > t->ns - t->next) {
        t->mismatch = true;
        return -EINVAL;
    }
    uint64_t period = t->vtime != t->vsamples ? (uint64_t)(self[t->vtime] / t->scale / k) : 0;
    for (int64_t i = 0; i < k; i++) {
        const struct ember_sample_time *st = &t->f->v[t->next];
        t->s[t->next] =
            (struct sample){st->pid, st->tid, st->time, period, path[depth - 1], t->next};
        t->next++;
    }
    return 0;
}

static int by_thread_time(const void *a, const void *b)
{
    const struct sample *x = a, *y = b;
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
    const struct span *x = a, *y = b;
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
                       const struct sample *s)
{
    while (o->n > keep) {
        o->n--;
        if (EMBER_VEC_RESERVE(t->spans, t->scap, t->nspans + 1) < 0)
            return -ENOMEM;
        t->spans[t->nspans++] =
            (struct span){s->pid, s->tid, o->node[o->n], (uint32_t)o->n, o->since[o->n], at};
    }
    return 0;
}

static int thread_spans(struct timeline *t, size_t a, size_t b, struct open_frames *o,
                        uint32_t **path, size_t *pcap)
{
    uint64_t end = 0;
    o->n = 0;
    for (size_t i = a; i < b; i++) {
        const struct sample *s = &t->s[i];
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

static void put_time(struct ember_writer *w, const char *key, uint64_t ns)
{
    ember_writer_printf(w, ",\"%s\":%llu.%03llu", key, (unsigned long long)(ns / 1000),
                        (unsigned long long)(ns % 1000));
}

/* Events are separated by commas: the first has none. */
struct out {
    struct ember_writer w;
    bool started;
};

static void next_event(struct out *o)
{
    ember_writer_puts(&o->w, o->started ? ",\n" : "\n");
    o->started = true;
}

static void put_x(struct out *o, uint32_t pid, uint32_t tid, uint64_t begin, uint64_t end,
                  const char *name, size_t len, const char *cat, const char *mark)
{
    struct ember_writer *w = &o->w;
    next_event(o);
    ember_writer_printf(w, "{\"ph\":\"X\",\"cat\":\"%s\",\"pid\":%u,\"tid\":%u", cat, pid, tid);
    put_time(w, "ts", begin);
    put_time(w, "dur", end - begin);
    ember_writer_puts(w, ",\"name\":");
    ember_export_json_bytes(w, name, len, mark);
    ember_writer_puts(w, "}");
}

static void put_name(struct out *o, const char *what, uint32_t pid, uint32_t tid, const char *name)
{
    struct ember_writer *w = &o->w;
    next_event(o);
    ember_writer_printf(
        w, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":", what, pid,
        tid);
    ember_export_json_bytes(w, name, strlen(name), "");
    ember_writer_puts(w, "}}");
}

static void write_samples(struct out *w, const struct timeline *t)
{
    char buf[4096];
    for (size_t i = 0; i < t->nspans; i++) {
        const struct span *s = &t->spans[i];
        if (i == 0 || s->tid != t->spans[i - 1].tid || s->pid != t->spans[i - 1].pid) {
            snprintf(buf, sizeof(buf), "thread %u: samples%s", s->tid,
                     s->tid == s->pid ? " (main thread: OCaml domain 0)"
                     : t->g && s->pid == ember_gc_phases_pid(t->g)
                         ? " (OCaml domain not known: runtime events name no thread)"
                         : "");
            put_name(w, "thread_name", s->pid, s->tid, buf);
        }
        struct ember_frame fr;
        ember_profile_frame(t->p, ember_profile_node_frame(t->p, s->node), &fr);
        size_t n = ember_frame_spell(&fr, buf, sizeof(buf));
        put_x(w, s->pid, s->tid, s->begin, s->end, buf, n < sizeof(buf) ? n : sizeof(buf) - 1,
              fr.kind == EMBER_FRAME_OFFCPU ? "off-cpu" : "cpu", "");
    }
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
        for (size_t i = 0; i < n; i++) {
            const struct ember_gc_slice *s = ember_gc_phases_slice(g, dm, i);
            put_x(w, pid, DOMAIN_TID_BASE + dm, s->begin, s->end, s->name, strlen(s->name), "gc",
                  s->open_at_end ? EMBER_OPEN_SPAN_MARK : "");
        }
    }
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
    int err = ember_profile_walk_sequence(p, on_entry, t);
    if (t->mismatch || (!err && t->next != t->ns))
        return ember_diag_set(d, -EINVAL, NULL, 0,
                              "the samples' stacks and times do not pair (%zu times, %zu stacks): "
                              "a timeline cannot be drawn after transforms that drop samples",
                              t->ns, t->next);
    return err;
}

/* ---- Perfetto ------------------------------------------------------------ */

/* A slice's begin or end on a track, in time order when sorted by (ts,
 * order): order numbers a track's events as its nesting gives them. */
struct pf_event {
    uint64_t ts, order, track;
    int type;      /* 1 begin, 2 end */
    uint32_t node; /* a sample span's frame node, or UINT32_MAX */
    const struct ember_gc_slice *gc;
};

struct pf {
    struct ember_writer w;
    struct msg packet, sub, sub2;
    struct pf_event *ev;
    size_t nev, evcap;
    uint64_t *ends; /* the open slices' ends, outermost first */
    size_t nends, endcap;
    int err;
};

static uint64_t process_uuid(uint32_t pid)
{
    return 0x100000000ULL | pid;
}

static uint64_t thread_track(uint32_t tid)
{
    return 0x200000000ULL | tid;
}

static void pf_emit(struct pf *f)
{
    struct msg frame = {0};
    field_msg(&frame, TRACE_PACKET, &f->packet);
    if (frame.err)
        f->err = frame.err;
    ember_writer_put(&f->w, (const char *)frame.b, frame.n);
    free(frame.b);
}

static void pf_process(struct pf *f, uint32_t pid, const char *name, bool first)
{
    field_varint(&f->sub2, PD_PID, pid);
    field_string(&f->sub2, PD_NAME, name);
    field_varint(&f->sub, TD_UUID, process_uuid(pid));
    field_msg(&f->sub, TD_PROCESS, &f->sub2);
    field_msg(&f->packet, TP_TRACK_DESCRIPTOR, &f->sub);
    field_varint(&f->packet, TP_SEQUENCE_ID, SEQ);
    if (first)
        field_varint(&f->packet, TP_SEQUENCE_FLAGS, 1); /* incremental state cleared */
    pf_emit(f);
}

static void pf_thread(struct pf *f, uint32_t pid, uint32_t tid, const char *name)
{
    field_varint(&f->sub2, THD_PID, pid);
    field_varint(&f->sub2, THD_TID, tid);
    field_string(&f->sub2, THD_NAME, name);
    field_varint(&f->sub, TD_UUID, thread_track(tid));
    field_varint(&f->sub, TD_PARENT, process_uuid(pid));
    field_msg(&f->sub, TD_THREAD, &f->sub2);
    field_msg(&f->packet, TP_TRACK_DESCRIPTOR, &f->sub);
    field_varint(&f->packet, TP_SEQUENCE_ID, SEQ);
    pf_emit(f);
}

static void pf_add(struct pf *f, uint64_t ts, uint64_t track, int type, uint32_t node,
                   const struct ember_gc_slice *gc)
{
    if (EMBER_VEC_RESERVE(f->ev, f->evcap, f->nev + 1) < 0) {
        f->err = -ENOMEM;
        return;
    }
    f->ev[f->nev] = (struct pf_event){ts, f->nev, track, type, node, gc};
    f->nev++;
}

/* The ends of the slices open on track that end by ts (all: UINT64_MAX). */
static void pf_close(struct pf *f, uint64_t track, uint64_t ts)
{
    while (f->nends && (ts == UINT64_MAX || f->ends[f->nends - 1] <= ts)) {
        uint64_t at = f->ends[--f->nends];
        pf_add(f, at, track, 2, UINT32_MAX, NULL);
    }
}

static void pf_open(struct pf *f, uint64_t begin, uint64_t end, uint64_t track, uint32_t node,
                    const struct ember_gc_slice *gc)
{
    pf_close(f, track, begin);
    if (EMBER_VEC_RESERVE(f->ends, f->endcap, f->nends + 1) < 0) {
        f->err = -ENOMEM;
        return;
    }
    f->ends[f->nends++] = end;
    pf_add(f, begin, track, 1, node, gc);
}

static int by_time(const void *a, const void *b)
{
    const struct pf_event *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The descriptors: a process per pid, a track per thread and domain. */
static void pf_tracks(struct pf *f, const struct timeline *t, const struct ember_gc_phases *g)
{
    char buf[256];
    bool first = true, gc_described = !g;
    for (size_t i = 0; i < t->nspans; i++) {
        const struct span *s = &t->spans[i];
        bool new_pid = i == 0 || s->pid != t->spans[i - 1].pid;
        if (new_pid) {
            struct ember_frame fr;
            ember_profile_frame(t->p, ember_profile_node_frame(t->p, s->node), &fr);
            size_t n = ember_frame_spell(&fr, buf, sizeof(buf) - 24);
            snprintf(buf + (n < sizeof(buf) - 24 ? n : sizeof(buf) - 25), 24, " %u", s->pid);
            pf_process(f, s->pid, buf, first);
            first = false;
            gc_described = gc_described || s->pid == ember_gc_phases_pid(g);
        }
        if (new_pid || s->tid != t->spans[i - 1].tid) {
            snprintf(buf, sizeof(buf), "thread %u: samples%s", s->tid,
                     s->tid == s->pid ? " (main thread: OCaml domain 0)" : "");
            pf_thread(f, s->pid, s->tid, buf);
        }
    }
    if (!g)
        return;
    uint32_t pid = ember_gc_phases_pid(g);
    if (!gc_described) {
        snprintf(buf, sizeof(buf), "OCaml process %u", pid);
        pf_process(f, pid, buf, first);
    }
    for (unsigned dm = 0; dm < ember_gc_phases_domains(g); dm++) {
        snprintf(buf, sizeof(buf), "OCaml domain %u: GC phases", dm);
        if (ember_gc_phases_count(g, dm))
            pf_thread(f, pid, DOMAIN_TID_BASE + dm, buf);
    }
}

/* Every slice's begin and end, in time order. */
static void pf_slices(struct pf *f, const struct timeline *t, const struct ember_gc_phases *g)
{
    for (size_t i = 0; i < t->nspans; i++) {
        const struct span *s = &t->spans[i];
        if (i && (s->tid != t->spans[i - 1].tid || s->pid != t->spans[i - 1].pid))
            pf_close(f, thread_track(t->spans[i - 1].tid), UINT64_MAX);
        pf_open(f, s->begin, s->end, thread_track(s->tid), s->node, NULL);
    }
    if (t->nspans)
        pf_close(f, thread_track(t->spans[t->nspans - 1].tid), UINT64_MAX);
    for (unsigned dm = 0; g && dm < ember_gc_phases_domains(g); dm++) {
        for (size_t i = 0; i < ember_gc_phases_count(g, dm); i++) {
            const struct ember_gc_slice *s = ember_gc_phases_slice(g, dm, i);
            pf_open(f, s->begin, s->end, thread_track(DOMAIN_TID_BASE + dm), UINT32_MAX, s);
        }
        pf_close(f, thread_track(DOMAIN_TID_BASE + dm), UINT64_MAX);
    }
    if (f->ev)
        qsort(f->ev, f->nev, sizeof(*f->ev), by_time);
}

static void pf_write_event(struct pf *f, const struct timeline *t, const struct pf_event *e)
{
    field_varint(&f->sub, TE_TYPE, (uint64_t)e->type);
    field_varint(&f->sub, TE_TRACK, e->track);
    if (e->type == 1 && e->gc) {
        char marked[512];
        int n = snprintf(marked, sizeof(marked), "%s%s", e->gc->name,
                         e->gc->open_at_end ? EMBER_OPEN_SPAN_MARK : "");
        field_text(&f->sub, TE_NAME, marked,
                   (size_t)n < sizeof(marked) ? (size_t)n : sizeof(marked) - 1);
    } else if (e->type == 1) {
        char buf[4096];
        struct ember_frame fr;
        ember_profile_frame(t->p, ember_profile_node_frame(t->p, e->node), &fr);
        size_t n = ember_frame_spell(&fr, buf, sizeof(buf));
        field_text(&f->sub, TE_NAME, buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
    }
    field_varint(&f->packet, TP_TIMESTAMP, e->ts);
    field_varint(&f->packet, TP_SEQUENCE_ID, SEQ);
    field_msg(&f->packet, TP_TRACK_EVENT, &f->sub);
    pf_emit(f);
}

int ember_gc_timeline_perfetto(const struct ember_profile *p, const struct ember_gc_filter *flt,
                               const struct ember_gc_phases *g, const struct ember_sink *out,
                               struct ember_diag *d)
{
    struct timeline t = {.p = p, .g = g, .f = flt};
    int err = pair(&t, d);
    if (!err)
        err = make_spans(&t);
    struct pf *f = err ? NULL : calloc(1, sizeof(*f));
    if (!err && !f)
        err = -ENOMEM;
    if (!err) {
        ember_writer_init(&f->w, out);
        pf_tracks(f, &t, g);
        pf_slices(f, &t, g);
        for (size_t i = 0; i < f->nev && !f->err; i++)
            pf_write_event(f, &t, &f->ev[i]);
        int ferr = ember_writer_flush(&f->w);
        err = f->err ? f->err : ferr;
    }
    if (f) {
        free(f->packet.b);
        free(f->sub.b);
        free(f->sub2.b);
        free(f->ev);
        free(f->ends);
        free(f);
    }
    free(t.s);
    free(t.spans);
    return err;
}

int ember_gc_timeline_chrome(const struct ember_profile *p, const struct ember_gc_filter *f,
                             const struct ember_gc_phases *g, const struct ember_sink *out,
                             struct ember_diag *d)
{
    struct timeline t = {.p = p, .g = g, .f = f};
    int err = pair(&t, d);
    if (!err)
        err = make_spans(&t);
    if (!err) {
        struct out *o = calloc(1, sizeof(*o));
        if (!o) {
            err = -ENOMEM;
        } else {
            ember_writer_init(&o->w, out);
            ember_writer_puts(&o->w, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":"
                                     "\"CLOCK_MONOTONIC\",\"domains\":\"domain 0 is the main "
                                     "thread; other domains run on threads the OCaml runtime "
                                     "makes, which runtime events do not name\"},\n"
                                     "\"traceEvents\":[");
            write_samples(o, &t);
            if (g)
                write_phases(o, g);
            ember_writer_puts(&o->w, "\n]}\n");
            err = ember_writer_flush(&o->w);
            free(o);
        }
    }
    free(t.s);
    free(t.spans);
    return err;
}
