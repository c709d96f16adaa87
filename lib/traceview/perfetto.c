/*
 * perfetto.c - Perfetto's protobuf trace format (what ui.perfetto.dev and
 * trace_processor read), written directly: a Trace is a sequence of
 * length-delimited TracePacket messages, so a few varint and length
 * helpers suffice (the field numbers are those of perfetto's
 * protos/perfetto/trace/). One track per thread under a process track, one
 * counter track per (thread, counter); spans are SLICE_BEGIN/END, instants
 * INSTANT, fields debug annotations.
 *
 * Spans are paired as spans.h says, as in the Chrome export: ends without
 * a begin are left out, spans still open at the end of the trace end at
 * its last timestamp, their names marked (EMBER_OPEN_SPAN_MARK; a first
 * pass finds them), so that the trace processor never sees a slice
 * without its end and does not sum them with the complete ones.
 */
#include "ember/trace.h"
#include "ember/traceview.h"
#include "base/writer.h"
#include "traceview/perfetto_proto.h"
#include "traceview/spans.h"
#include "base/strmap.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct perfetto {
    struct ember_writer w;
    struct ember_trace *t;
    uint64_t base_ns;
    struct msg packet, sub, sub2;
    struct ember_strmap counters; /* "ring/name" -> uuid */
    uint64_t next_uuid;
    struct ember_span_stack *open; /* per ring */
    struct ember_open_set still_open;
    int64_t last; /* the last timestamp so far */
    int err;
};

static void emit_packet(struct perfetto *p)
{
    struct msg frame = {0};
    field_msg(&frame, TRACE_PACKET, &p->packet);
    if (frame.err)
        p->err = frame.err;
    ember_writer_put(&p->w, (const char *)frame.b, frame.n);
    free(frame.b);
}

static uint64_t thread_uuid(unsigned ring)
{
    return 0x1000 + ring;
}

static void descriptor_process(struct perfetto *p)
{
    char pname[64];
    field_varint(&p->sub2, PD_PID, ember_trace_pid(p->t));
    field_string(&p->sub2, PD_NAME, ember_export_process_name(p->t, pname, sizeof(pname)));
    field_varint(&p->sub, TD_UUID, 1);
    field_msg(&p->sub, TD_PROCESS, &p->sub2);
    field_msg(&p->packet, TP_TRACK_DESCRIPTOR, &p->sub);
    field_varint(&p->packet, TP_SEQUENCE_ID, SEQ);
    field_varint(&p->packet, TP_SEQUENCE_FLAGS, 1); /* incremental state cleared */
    emit_packet(p);
}

static void descriptor_thread(struct perfetto *p, unsigned ring)
{
    const struct ember_trace_ring *r = ember_trace_ring(p->t, ring);
    field_varint(&p->sub2, THD_PID, ember_trace_pid(p->t));
    field_varint(&p->sub2, THD_TID, r->tid);
    if (r->name[0])
        field_string(&p->sub2, THD_NAME, r->name);
    field_varint(&p->sub, TD_UUID, thread_uuid(ring));
    field_varint(&p->sub, TD_PARENT, 1);
    field_msg(&p->sub, TD_THREAD, &p->sub2);
    field_msg(&p->packet, TP_TRACK_DESCRIPTOR, &p->sub);
    field_varint(&p->packet, TP_SEQUENCE_ID, SEQ);
    emit_packet(p);
}

/* The counter track of (ring, name), described when first used. */
static uint64_t counter_track(struct perfetto *p, unsigned ring, const char *name)
{
    char key[320];
    int n = snprintf(key, sizeof(key), "%u/%s", ring, name);
    uint64_t *uuid = ember_strmap_get(&p->counters, key, (size_t)n);
    if (uuid)
        return *uuid;
    uuid = ember_arena_alloc(&p->counters.arena, sizeof(*uuid));
    if (!uuid || ember_strmap_put(&p->counters, key, (size_t)n, uuid) < 0) {
        p->err = -ENOMEM;
        return 0;
    }
    *uuid = p->next_uuid++;
    field_varint(&p->sub, TD_UUID, *uuid);
    field_string(&p->sub, TD_NAME, name);
    field_varint(&p->sub, TD_PARENT, thread_uuid(ring));
    field_bytes(&p->sub, TD_COUNTER, "", 0);
    field_msg(&p->packet, TP_TRACK_DESCRIPTOR, &p->sub);
    field_varint(&p->packet, TP_SEQUENCE_ID, SEQ);
    emit_packet(p);
    return *uuid;
}

/* The packet around the track event in p->sub, at ns. */
static void emit_track_event(struct perfetto *p, int64_t ns)
{
    field_varint(&p->packet, TP_TIMESTAMP, p->base_ns + (uint64_t)(ns > 0 ? ns : 0));
    field_varint(&p->packet, TP_SEQUENCE_ID, SEQ);
    field_msg(&p->packet, TP_TRACK_EVENT, &p->sub);
    emit_packet(p);
}

/* Ends the open spans of ring above depth keep, at ns. */
static void end_to(struct perfetto *p, unsigned ring, size_t keep, int64_t ns)
{
    struct ember_span_stack *o = &p->open[ring];
    while (o->n > keep) {
        o->n--;
        field_varint(&p->sub, TE_TYPE, 2);
        field_varint(&p->sub, TE_TRACK, thread_uuid(ring));
        emit_track_event(p, ns);
    }
}

/* Pairs a span event: false if it is to be left out (an end whose begin
 * is not in the trace); *open tells a begin that never ends. */
static bool pair(struct perfetto *p, const struct ember_trace_event *e, bool *open)
{
    struct ember_span_stack *o = &p->open[e->ring];
    *open = false;
    if (e->site->kind == EMBER_EV_BEGIN) {
        *open = ember_open_set_has(&p->still_open, e->ring, e->seq);
        if (ember_span_stack_push(o, e, *open) < 0)
            p->err = -ENOMEM;
    } else if (e->site->kind == EMBER_EV_END) {
        size_t k = ember_span_stack_match(o, e->site->name);
        if (k == 0)
            return false;
        end_to(p, e->ring, k, e->ns); /* the spans it encloses first */
        o->n--;
    }
    return true;
}

static void put_name(struct msg *m, const char *name, bool open)
{
    if (!open) {
        field_string(m, TE_NAME, name);
        return;
    }
    char marked[256 + sizeof(EMBER_OPEN_SPAN_MARK)]; /* site names: at most 255 bytes */
    int n = snprintf(marked, sizeof(marked), "%s%s", name, EMBER_OPEN_SPAN_MARK);
    field_bytes(m, TE_NAME, marked, (size_t)n < sizeof(marked) ? (size_t)n : sizeof(marked) - 1);
}

static int perfetto_event(void *ctx, const struct ember_trace_event *e)
{
    struct perfetto *p = ctx;
    const struct ember_trace_site *s = e->site;
    bool open;
    p->last = e->ns > p->last ? e->ns : p->last;
    if (!pair(p, e, &open))
        return 0;
    uint64_t track = thread_uuid(e->ring);
    if (s->kind == EMBER_EV_COUNTER)
        track = counter_track(p, e->ring, s->name);
    struct msg *te = &p->sub;
    int type = s->kind == EMBER_EV_BEGIN     ? 1
               : s->kind == EMBER_EV_END     ? 2
               : s->kind == EMBER_EV_COUNTER ? 4
                                             : 3;
    field_varint(te, TE_TYPE, (uint64_t)type);
    field_varint(te, TE_TRACK, track);
    if (type == 4) {
        if (s->nfields && s->field_types[0] == EMBER_FT_F64)
            field_double(te, TE_DOUBLE_COUNTER, e->v[0].f);
        else
            field_varint(te, TE_COUNTER, (uint64_t)(s->nfields ? e->v[0].i : 0));
    } else {
        if (type != 2)
            put_name(te, s->name, open);
        for (unsigned i = 0; i < s->nfields; i++) {
            field_string(&p->sub2, DA_NAME, s->field_names[i]);
            if (s->field_types[i] == EMBER_FT_STR)
                field_string(&p->sub2, DA_STRING, e->v[i].s);
            else if (s->field_types[i] == EMBER_FT_BYTES)
                field_text(&p->sub2, DA_STRING, e->v[i].s, e->v[i].len);
            else if (s->field_types[i] == EMBER_FT_F64)
                field_double(&p->sub2, DA_DOUBLE, e->v[i].f);
            else
                field_varint(&p->sub2, DA_INT, (uint64_t)e->v[i].i);
            field_msg(te, TE_ANNOTATION, &p->sub2);
        }
    }
    emit_track_event(p, e->ns);
    return p->err ? p->err : p->w.err;
}

int ember_trace_export_perfetto(struct ember_trace *t, const struct ember_sink *out)
{
    struct perfetto *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    unsigned nrings = ember_trace_ring_count(t);
    ember_writer_init(&p->w, out);
    p->t = t;
    p->next_uuid = 0x100000;
    p->base_ns = ember_trace_start_realtime(t);
    p->last = INT64_MIN;
    p->open = calloc(nrings ? nrings : 1, sizeof(*p->open));
    int err = p->open ? ember_strmap_init(&p->counters) : -ENOMEM;
    if (!err)
        err = ember_open_set_find(t, &p->still_open);
    if (!err) {
        descriptor_process(p);
        for (unsigned i = 0; i < nrings; i++)
            descriptor_thread(p, i);
        err = ember_trace_each(t, perfetto_event, p);
    }
    /* what is still open ends with the trace */
    for (unsigned i = 0; i < nrings && !err; i++)
        end_to(p, i, 0, p->last);
    int ferr = ember_writer_flush(&p->w);
    err = err ? err : p->err ? p->err : ferr;
    for (unsigned i = 0; p->open && i < nrings; i++)
        free(p->open[i].s);
    free(p->open);
    ember_open_set_release(&p->still_open);
    free(p->packet.b);
    free(p->sub.b);
    free(p->sub2.b);
    ember_strmap_release(&p->counters);
    free(p);
    return err;
}
