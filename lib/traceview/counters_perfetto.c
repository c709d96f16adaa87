/*
 * counters_perfetto.c - a profile's counters over time (the heap in use of
 * a heap recording or a memtrace trace) as Perfetto's protobuf trace, for
 * `ember convert --to perfetto` of a profile that has them and no
 * perf.data timeline: a process track, a counter track per counter under
 * it, and one TYPE_COUNTER event per point.
 *
 * Invariants: descriptors come before the events on their tracks, in one
 * packet sequence whose first packet clears incremental state; events are
 * in time order across counters (each counter's points already are: the
 * merge keeps a counter's equal times in their order).
 */
#include "ember/traceview.h"
#include "base/writer.h"
#include "traceview/perfetto_proto.h"
#include "base/diag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { PROCESS_UUID = 1, COUNTER_UUID_BASE = 16, PID = 1 };

/* A point to write: its time, counter and index among that counter's. */
struct point {
    uint64_t ts;
    unsigned counter;
    size_t i;
};

struct cp {
    struct ember_writer w;
    struct msg packet, sub, sub2;
};

static void cp_emit(struct cp *c)
{
    struct msg frame = {0};
    field_varint(&c->packet, TP_SEQUENCE_ID, SEQ);
    field_msg(&frame, TRACE_PACKET, &c->packet);
    ember_writer_put(&c->w, (const char *)frame.b, frame.n);
    c->packet.err = c->packet.err ? c->packet.err : frame.err;
    free(frame.b);
}

/* The process, then a counter track per counter, named as the counter. */
static void cp_tracks(struct cp *c, const struct ember_profile *p, const char *name)
{
    field_varint(&c->sub2, PD_PID, PID);
    field_string(&c->sub2, PD_NAME, name);
    field_varint(&c->sub, TD_UUID, PROCESS_UUID);
    field_msg(&c->sub, TD_PROCESS, &c->sub2);
    field_msg(&c->packet, TP_TRACK_DESCRIPTOR, &c->sub);
    field_varint(&c->packet, TP_SEQUENCE_FLAGS, 1); /* incremental state cleared */
    cp_emit(c);
    for (unsigned k = 0; k < ember_profile_counter_count(p); k++) {
        const char *unit = ember_profile_counter_unit(p, k);
        field_varint(&c->sub, TD_UUID, COUNTER_UUID_BASE + k);
        field_varint(&c->sub, TD_PARENT, PROCESS_UUID);
        field_string(&c->sub, TD_NAME, ember_profile_counter_name(p, k));
        if (strcmp(unit, "bytes") == 0 || strcmp(unit, "count") == 0)
            field_varint(&c->sub2, CD_UNIT, strcmp(unit, "bytes") == 0 ? 3 : 2);
        field_msg(&c->sub, TD_COUNTER, &c->sub2);
        field_msg(&c->packet, TP_TRACK_DESCRIPTOR, &c->sub);
        cp_emit(c);
    }
}

static int by_time(const void *a, const void *b)
{
    const struct point *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->counter != y->counter)
        return x->counter < y->counter ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Every counter's points, in time order. */
static struct point *all_points(const struct ember_profile *p, size_t *n)
{
    size_t total = 0;
    const uint64_t *times;
    const int64_t *values;
    for (unsigned k = 0; k < ember_profile_counter_count(p); k++)
        total += ember_profile_counter_points(p, k, &times, &values);
    struct point *pts = malloc((total ? total : 1) * sizeof(*pts));
    if (!pts)
        return NULL;
    *n = 0;
    for (unsigned k = 0; k < ember_profile_counter_count(p); k++) {
        size_t m = ember_profile_counter_points(p, k, &times, &values);
        for (size_t i = 0; i < m; i++)
            pts[(*n)++] = (struct point){times[i], k, i};
    }
    qsort(pts, *n, sizeof(*pts), by_time);
    return pts;
}

static void cp_point(struct cp *c, const struct ember_profile *p, const struct point *pt)
{
    const uint64_t *times;
    const int64_t *values;
    ember_profile_counter_points(p, pt->counter, &times, &values);
    field_varint(&c->sub, TE_TYPE, 4); /* TYPE_COUNTER */
    field_varint(&c->sub, TE_TRACK, COUNTER_UUID_BASE + pt->counter);
    field_varint(&c->sub, TE_COUNTER, (uint64_t)values[pt->i]); /* int64: two's complement */
    field_varint(&c->packet, TP_TIMESTAMP, pt->ts);
    field_msg(&c->packet, TP_TRACK_EVENT, &c->sub);
    cp_emit(c);
}

int ember_counters_perfetto(const struct ember_profile *p, const char *name,
                            const struct ember_sink *out, struct ember_diag *d)
{
    if (!ember_profile_counter_count(p))
        return ember_diag_set(d, -ENODATA, NULL, 0,
                              "the profile has no counter over time to draw (heap recordings and "
                              "memtrace traces have the heap in use)");
    size_t n = 0;
    struct point *pts = all_points(p, &n);
    struct cp *c = pts ? calloc(1, sizeof(*c)) : NULL;
    int err = c ? 0 : -ENOMEM;
    if (!err) {
        ember_writer_init(&c->w, out);
        cp_tracks(c, p, name);
        for (size_t i = 0; i < n; i++)
            cp_point(c, p, &pts[i]);
        int ferr = ember_writer_flush(&c->w);
        err = c->packet.err ? c->packet.err
              : c->sub.err  ? c->sub.err
              : c->sub2.err ? c->sub2.err
                            : ferr;
    }
    if (c) {
        free(c->packet.b);
        free(c->sub.b);
        free(c->sub2.b);
    }
    free(c);
    free(pts);
    return err;
}
