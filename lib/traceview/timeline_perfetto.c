/*
 * timeline_perfetto.c - the timeline of gc_timeline.c as Perfetto's
 * protobuf trace (ui.perfetto.dev, trace_processor): a track per thread and
 * per domain, each span a SLICE_BEGIN and a SLICE_END, every packet in time
 * order (a track's own events in the order its nesting gives them).
 */
#include "ember/traceview.h"
#include "base/writer.h"
#include "traceview/perfetto_proto.h"
#include "traceview/spans.h"
#include "traceview/timeline.h"
#include "base/diag.h"
#include "base/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        const struct tl_span *s = &t->spans[i];
        bool new_pid = i == 0 || s->pid != t->spans[i - 1].pid;
        if (new_pid) {
            ember_timeline_process_name(t, s->pid, buf, sizeof(buf));
            pf_process(f, s->pid, buf, first);
            first = false;
            gc_described = gc_described || s->pid == ember_gc_phases_pid(g);
        }
        if (new_pid || s->tid != t->spans[i - 1].tid) {
            ember_timeline_thread_name(t, s->pid, s->tid, buf, sizeof(buf));
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
        const struct tl_span *s = &t->spans[i];
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
    int err = ember_timeline_build(&t, d);
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
    ember_timeline_release(&t);
    return err;
}
