/*
 * chrome_trace.c - a profile as Chrome's Trace Event JSON: complete ("X")
 * events on one thread, laid out as a flame chart (in arrival order when
 * the profile kept it, else in folded order), for Perfetto's UI and
 * speedscope.
 *
 * Events are written in the order frames open, outermost first: speedscope
 * sorts X events by start and then by longest duration, stably, so a parent
 * and its only child (same start, same duration) keep file order. That needs
 * each frame's end before it is written, so the layout is made first; it
 * has one event per frame drawn (memory as the profile's nodes, or as its
 * arrival sequence, which the profile already holds).
 *
 * Counters over time (a heap recording's heap in use) follow as "C"
 * events on a process of their own.
 *
 * Times are microseconds. Viewers compute an event's end as ts + dur in
 * doubles: integral times are exact; where the exact dur would not do, dur
 * is the largest double that keeps that sum at most the exact end, at most
 * the parent's computed end, and before a begin of the span's name at its
 * exact end (wire/trace_time.h), which keeps children inside their parents
 * and siblings in order (ts is always the double of the exact start).
 */
#include "write/write_impl.h"
#include "base/escape.h"
#include "wire/trace_event.h"
#include "wire/trace_time.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct span {
    uint32_t node;
    int64_t start, end;
};

struct chrome {
    struct ember_writer w;
    const struct ember_profile *p;
    unsigned metric;
    struct ember_us us;
    struct span *spans;
    size_t nspans, scap;
    size_t *open; /* spans of the frames open, outermost first */
    size_t nopen, ocap;
    struct ember_trace_starts starts;
};

static int on_open(void *ctx, uint32_t node, int64_t at)
{
    struct chrome *c = ctx;
    if (EMBER_VEC_RESERVE(c->spans, c->scap, c->nspans + 1) < 0 ||
        EMBER_VEC_RESERVE(c->open, c->ocap, c->nopen + 1) < 0)
        return -ENOMEM;
    c->spans[c->nspans] = (struct span){node, at, at};
    c->open[c->nopen++] = c->nspans++;
    return 0;
}

static int on_close(void *ctx, uint32_t node, int64_t start, int64_t end)
{
    struct chrome *c = ctx;
    (void)node;
    (void)start;
    c->spans[c->open[--c->nopen]].end = end;
    return 0;
}

static int chart_stack(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct ember_chart *ch = ctx;
    struct chrome *c = ch->ctx;
    return ember_chart_step(ch, path, depth, self[c->metric]);
}

static int layout(struct chrome *c)
{
    struct ember_chart ch = {.on_open = on_open, .on_close = on_close, .ctx = c};
    int err = ember_profile_has_sequence(c->p) ? ember_profile_walk_sequence(c->p, chart_stack, &ch)
                                               : ember_profile_walk(c->p, chart_stack, &ch);
    int ferr = ember_chart_finish(&ch);
    return err ? err : ferr;
}

static int put_time(struct chrome *c, int64_t v, char *text)
{
    int n = ember_us_format(&c->us, v, text);
    return n < 0 ? n : 0;
}

/* Where the spans begin, by name. */
static int span_starts(struct chrome *c)
{
    char ts[48];
    for (size_t i = 0; i < c->nspans; i++) {
        size_t len;
        const char *name =
            ember_profile_frame_name(c->p, ember_profile_node_frame(c->p, c->spans[i].node), &len);
        int err = put_time(c, c->spans[i].start, ts);
        if (!err)
            err = ember_trace_starts_add(&c->starts, ts, ember_trace_name_hash(name, len, ""));
        if (err)
            return err;
    }
    ember_trace_starts_seal(&c->starts);
    return 0;
}

/* A span open around the one being written: its exact end, and as
 * viewers compute it. */
struct open_end {
    int64_t end;
    struct ember_trace_viewed v;
};

/* Writes span s inside up (NULL at the root); *o is s as viewers see it. */
static int put_span(struct chrome *c, const struct span *s, const struct open_end *up,
                    struct open_end *o)
{
    char ts[48], end[48], dur[48];
    int err = put_time(c, s->start, ts);
    if (!err)
        err = put_time(c, s->end, end);
    if (!err)
        err = put_time(c, s->end - s->start, dur);
    if (err)
        return err;
    size_t len;
    const char *name =
        ember_profile_frame_name(c->p, ember_profile_node_frame(c->p, s->node), &len);
    double at = strtod(ts, NULL), exact = strtod(dur, NULL);
    double d =
        ember_trace_viewer_dur(&c->starts, up ? &up->v : NULL, ember_trace_name_hash(name, len, ""),
                               at, exact, strtod(end, NULL), 0);
    if (d != exact)
        snprintf(dur, sizeof(dur), "%.17g", d); /* integral times are exact */
    *o = (struct open_end){s->end, {at, d, at + d}};
    ember_trace_event_open(&c->w, ",\n", "X");
    ember_trace_event_ids(&c->w, 1, 1);
    ember_trace_event_ts(&c->w, ts);
    ember_trace_event_dur(&c->w, dur);
    ember_trace_event_name(&c->w, name, len, "", EMBER_JSON_SHORT);
    ember_trace_event_close(&c->w);
    return c->w.err;
}

/* The spans in open order, each kept inside its parent as viewers compute
 * ends: the enclosing spans are stacked. */
static int put_spans(struct chrome *c)
{
    struct open_end *ends = NULL;
    size_t n = 0, cap = 0;
    int err = span_starts(c);
    for (size_t i = 0; i < c->nspans && !err; i++) {
        const struct span *s = &c->spans[i];
        while (n && ends[n - 1].end <= s->start)
            n--;
        struct open_end o;
        err = put_span(c, s, n ? &ends[n - 1] : NULL, &o);
        if (!err && EMBER_VEC_RESERVE(ends, cap, n + 1) < 0)
            err = -ENOMEM;
        if (!err)
            ends[n++] = o;
    }
    free(ends);
    return err;
}

static void put_metadata(struct chrome *c, const struct ember_convert_opts *o)
{
    struct ember_writer *w = &c->w;
    char thread[2 * EMBER_UNIT_MAX + 8];
    snprintf(thread, sizeof(thread), "%s (%s)", ember_profile_sample_type(c->p),
             ember_profile_unit(c->p));
    ember_writer_puts(w, "{\"traceEvents\":[");
    ember_trace_event_open(w, "\n", "M");
    ember_trace_event_meta(w, "process_name");
    ember_trace_event_ids(w, 1, 1);
    ember_trace_event_meta_name(w, o->name, strlen(o->name), EMBER_JSON_SHORT);
    ember_trace_event_open(w, ",\n", "M");
    ember_trace_event_meta(w, "thread_name");
    ember_trace_event_ids(w, 1, 1);
    ember_trace_event_meta_name(w, thread, strlen(thread), EMBER_JSON_SHORT);
}

/* Each counter over time (a heap recording's "heap") as "C" events on a
 * process of their own (pid 2): their times are the recording's, ns from
 * its start, where the flame chart's are its weights (bytes drawn as
 * microseconds), so the two are not one axis. */
static void put_counters(struct chrome *c, const struct ember_convert_opts *o)
{
    struct ember_writer *w = &c->w;
    const struct ember_profile *p = c->p;
    if (!ember_profile_counter_count(p))
        return;
    char name[256], ts[EMBER_TRACE_EVENT_TIME_MAX];
    int n = snprintf(name, sizeof(name), "%s: counters", o->name);
    ember_trace_event_open(w, ",\n", "M");
    ember_trace_event_meta(w, "process_name");
    ember_trace_event_ids(w, 2, 1);
    ember_trace_event_meta_name(w, name, (size_t)n < sizeof(name) ? (size_t)n : sizeof(name) - 1,
                                EMBER_JSON_SHORT);
    for (unsigned k = 0; k < ember_profile_counter_count(p); k++) {
        const char *cname = ember_profile_counter_name(p, k);
        const char *unit = ember_profile_counter_unit(p, k);
        const uint64_t *times;
        const int64_t *values;
        size_t points = ember_profile_counter_points(p, k, &times, &values);
        for (size_t i = 0; i < points; i++) {
            ember_trace_event_time(ts, times[i], false);
            ember_trace_event_open(w, ",\n", "C");
            ember_trace_event_ids(w, 2, 1);
            ember_trace_event_ts(w, ts);
            ember_trace_event_name(w, cname, strlen(cname), "", EMBER_JSON_SHORT);
            ember_trace_event_counter(w, unit, strlen(unit), values[i], EMBER_JSON_SHORT);
        }
    }
}

static void put_trailer(struct chrome *c, const struct ember_convert_opts *o)
{
    struct ember_writer *w = &c->w;
    ember_writer_puts(w, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"exporter\":");
    ember_json_string(w, o->exporter, strlen(o->exporter));
    ember_writer_puts(w, ",\"sample_type\":");
    ember_json_string(w, ember_profile_sample_type(c->p), strlen(ember_profile_sample_type(c->p)));
    ember_writer_puts(w, ",\"unit\":");
    ember_json_string(w, ember_profile_unit(c->p), strlen(ember_profile_unit(c->p)));
    ember_writer_puts(w, "}}\n");
}

static int write_chrome(const struct ember_profile *p, const struct ember_convert_opts *opts,
                        const struct ember_sink *out, struct ember_diag *d)
{
    struct ember_convert_opts o = ember_convert_opts_fill(opts);
    struct chrome *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->p = p;
    c->metric = ember_convert_metric(p);
    c->us = ember_us_of(p);
    ember_writer_init(&c->w, out);
    int err = ember_convert_check_positive(p, c->metric, "a Chrome trace", d);
    if (!err)
        err = layout(c);
    if (!err) {
        put_metadata(c, &o);
        err = put_spans(c);
        put_counters(c, &o);
        put_trailer(c, &o);
    }
    int ferr = ember_writer_flush(&c->w);
    free(c->spans);
    free(c->open);
    ember_trace_starts_release(&c->starts);
    free(c);
    return err ? err : ferr;
}

int ember_write_chrome(const struct ember_profile *p, const struct ember_convert_opts *opts,
                       const struct ember_sink *out, struct ember_diag *d)
{
    struct ember_profile *named; /* a flame chart of names */
    int err = ember_profile_function_names(p, &named);
    if (!err)
        err = write_chrome(named ? named : p, opts, out, d);
    ember_profile_free(named);
    return err;
}
