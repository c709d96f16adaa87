/*
 * perfetto.c - Perfetto's protobuf trace format (what ui.perfetto.dev and
 * trace_processor read), written directly: a Trace is a sequence of
 * length-delimited TracePacket messages, so a few varint and length
 * helpers suffice (the field numbers are those of perfetto's
 * protos/perfetto/trace/). One track per thread under a process track, one
 * counter track per (thread, counter); spans are SLICE_BEGIN/END, instants
 * INSTANT, fields debug annotations.
 */
#include "ember/trace.h"
#include "ember/traceview.h"
#include "io/writer.h"
#include "util/strmap.h"
#include "util/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A protobuf message being built. */
struct msg {
    uint8_t *b;
    size_t n, cap;
    int err;
};

static void put(struct msg *m, const void *p, size_t n)
{
    if (m->err || EMBER_VEC_RESERVE(m->b, m->cap, m->n + n) < 0) {
        m->err = -ENOMEM;
        return;
    }
    memcpy(m->b + m->n, p, n);
    m->n += n;
}

static void varint(struct msg *m, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;
    do {
        b[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    put(m, b, n);
}

static void field_varint(struct msg *m, unsigned field, uint64_t v)
{
    varint(m, (uint64_t)field << 3);
    varint(m, v);
}

static void field_bytes(struct msg *m, unsigned field, const void *p, size_t n)
{
    varint(m, (uint64_t)field << 3 | 2);
    varint(m, n);
    put(m, p, n);
}

static void field_string(struct msg *m, unsigned field, const char *s)
{
    field_bytes(m, field, s, strlen(s));
}

static void field_double(struct msg *m, unsigned field, double d)
{
    varint(m, (uint64_t)field << 3 | 1);
    put(m, &d, 8); /* little-endian, as the format */
}

static void field_msg(struct msg *m, unsigned field, struct msg *sub)
{
    if (sub->err)
        m->err = sub->err;
    field_bytes(m, field, sub->b, sub->n);
    sub->n = 0;
}

enum {
    TRACE_PACKET = 1,
    TP_TIMESTAMP = 8,
    TP_SEQUENCE_ID = 10,
    TP_TRACK_EVENT = 11,
    TP_SEQUENCE_FLAGS = 13,
    TP_TRACK_DESCRIPTOR = 60,
    TD_UUID = 1,
    TD_NAME = 2,
    TD_PROCESS = 3,
    TD_THREAD = 4,
    TD_PARENT = 5,
    TD_COUNTER = 8,
    PD_PID = 1,
    PD_NAME = 6,
    THD_PID = 1,
    THD_TID = 2,
    THD_NAME = 5,
    TE_ANNOTATION = 4,
    TE_TYPE = 9,
    TE_TRACK = 11,
    TE_NAME = 23,
    TE_COUNTER = 30,
    TE_DOUBLE_COUNTER = 44,
    DA_INT = 4,
    DA_DOUBLE = 5,
    DA_STRING = 6,
    DA_NAME = 10,
    SEQ = 1, /* our one packet sequence */
};

struct perfetto {
    struct ember_writer w;
    struct ember_trace *t;
    uint64_t base_ns;
    struct msg packet, sub, sub2;
    struct ember_strmap counters; /* "ring/name" -> uuid */
    uint64_t next_uuid;
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
    const char *exe = ember_trace_exe(p->t), *slash = strrchr(exe, '/');
    field_varint(&p->sub2, PD_PID, ember_trace_pid(p->t));
    field_string(&p->sub2, PD_NAME, slash ? slash + 1 : exe);
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

static int perfetto_event(void *ctx, const struct ember_trace_event *e)
{
    struct perfetto *p = ctx;
    const struct ember_trace_site *s = e->site;
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
            field_string(te, TE_NAME, s->name);
        for (unsigned i = 0; i < s->nfields; i++) {
            field_string(&p->sub2, DA_NAME, s->field_names[i]);
            if (s->field_types[i] == EMBER_FT_STR)
                field_string(&p->sub2, DA_STRING, e->v[i].s);
            else if (s->field_types[i] == EMBER_FT_F64)
                field_double(&p->sub2, DA_DOUBLE, e->v[i].f);
            else
                field_varint(&p->sub2, DA_INT, (uint64_t)e->v[i].i);
            field_msg(te, TE_ANNOTATION, &p->sub2);
        }
    }
    field_varint(&p->packet, TP_TIMESTAMP, p->base_ns + (uint64_t)(e->ns > 0 ? e->ns : 0));
    field_varint(&p->packet, TP_SEQUENCE_ID, SEQ);
    field_msg(&p->packet, TP_TRACK_EVENT, te);
    emit_packet(p);
    return p->err ? p->err : p->w.err;
}

int ember_trace_export_perfetto(struct ember_trace *t, const struct ember_sink *out)
{
    struct perfetto *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    ember_writer_init(&p->w, out);
    p->t = t;
    p->next_uuid = 0x100000;
    p->base_ns = ember_trace_start_realtime(t);
    int err = ember_strmap_init(&p->counters);
    if (!err) {
        descriptor_process(p);
        for (unsigned i = 0; i < ember_trace_ring_count(t); i++)
            descriptor_thread(p, i);
        err = ember_trace_each(t, perfetto_event, p);
    }
    int ferr = ember_writer_flush(&p->w);
    err = err ? err : p->err ? p->err : ferr;
    free(p->packet.b);
    free(p->sub.b);
    free(p->sub2.b);
    ember_strmap_release(&p->counters);
    free(p);
    return err;
}
