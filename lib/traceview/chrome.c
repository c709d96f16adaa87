/*
 * chrome.c - Chrome's Trace Event JSON (what chrome://tracing, Perfetto's UI
 * and speedscope open): spans as B/E pairs, instants and user events as
 * thread-scoped "i", counters as "C", thread names as metadata events.
 * Times are microseconds since the trace started, to the nanosecond.
 *
 * Spans are paired as spans.h says: viewers (speedscope) reject ends
 * without a begin and begins never ended, which a flight recorder
 * produces. A span still open at the end of the trace ends at the trace's
 * last timestamp, its name marked (EMBER_OPEN_SPAN_MARK) on both B and E:
 * a first pass finds those spans, so the mark is there where they begin.
 *
 * A thread's ends are held until its next event: where that is a begin,
 * at the same time, of a name one of them has, they are written a hair
 * before that time, as viewers compute times (wire/trace_time.h: speedscope
 * would open the begin first and close the wrong span). Other threads'
 * events may come between; viewers take each thread's events apart.
 */
#include "ember/trace.h"
#include "ember/traceview.h"
#include "base/writer.h"
#include "traceview/spans.h"
#include "base/escape.h"
#include "wire/trace_event.h"
#include "base/vec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The len bytes at s as a JSON string, with suffix (never escaped) before
 * its end quote. */
void ember_export_json_bytes(struct ember_writer *w, const char *s, size_t len, const char *suffix)
{
    ember_writer_put(w, "\"", 1);
    ember_escape_json(w, s, len, EMBER_JSON_FFFD_BYTES);
    ember_writer_puts(w, suffix);
    ember_writer_put(w, "\"", 1);
}

static void json_string(struct ember_writer *w, const char *s)
{
    ember_export_json_bytes(w, s, strlen(s), "");
}

/* An end held: its name, and what follows its "ts" in its ring's text. */
struct held_end {
    const char *name;
    bool open;
    size_t tail, ntail;
};

/* A ring's ends held, all at time ns, and the text of their tails. */
struct held {
    int64_t ns;
    uint32_t tid;
    struct held_end *e;
    size_t n, cap;
    char *text;
    size_t ntext, tcap;
};

struct chrome {
    struct ember_writer w;
    struct ember_trace *t;
    uint32_t pid;
    struct ember_span_stack *open; /* per ring */
    struct held *held;             /* per ring */
    struct ember_writer *tw;       /* into the text of held[into] */
    unsigned into;
    struct ember_open_set still_open;
    int64_t last; /* the last timestamp so far */
    int err;
};

static void put_args(struct ember_writer *w, const struct ember_trace_event *e)
{
    ember_writer_puts(w, ",\"args\":{");
    for (unsigned i = 0; i < e->site->nfields; i++) {
        if (i)
            ember_writer_puts(w, ",");
        json_string(w, e->site->field_names[i]);
        ember_writer_puts(w, ":");
        if (e->site->field_types[i] == EMBER_FT_STR)
            json_string(w, e->v[i].s);
        else if (e->site->field_types[i] == EMBER_FT_BYTES)
            ember_export_json_bytes(w, e->v[i].s, e->v[i].len, "");
        else if (e->site->field_types[i] == EMBER_FT_F64 && e->v[i].f == e->v[i].f &&
                 e->v[i].f - e->v[i].f == 0)
            ember_writer_printf(w, "%.17g", e->v[i].f);
        else if (e->site->field_types[i] == EMBER_FT_F64)
            ember_writer_puts(w, "null"); /* JSON has no NaN or infinity */
        else
            ember_writer_printf(w, "%lld", (long long)e->v[i].i);
    }
    ember_writer_puts(w, "}");
}

static void put_time(char *ts, int64_t ns)
{
    ember_trace_event_time(ts, ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns, ns < 0);
}

static void put_head(struct chrome *c, const char *ph, uint32_t tid, const char *ts)
{
    ember_trace_event_open(&c->w, ",\n", ph);
    ember_trace_event_ids(&c->w, c->pid, tid);
    ember_trace_event_ts(&c->w, ts);
}

static void put_event(struct chrome *c, const char *ph, uint32_t tid, int64_t ns, const char *name,
                      bool open)
{
    char ts[EMBER_TRACE_EVENT_TIME_MAX];
    put_time(ts, ns);
    put_head(c, ph, tid, ts);
    ember_trace_event_name(&c->w, name, strlen(name), open ? EMBER_OPEN_SPAN_MARK : "",
                           EMBER_JSON_FFFD_BYTES);
}

static int to_text(void *ctx, const char *buf, size_t len)
{
    struct chrome *c = ctx;
    struct held *h = &c->held[c->into];
    if (EMBER_VEC_RESERVE(h->text, h->tcap, h->ntext + len) < 0)
        return -ENOMEM;
    memcpy(h->text + h->ntext, buf, len);
    h->ntext += len;
    return 0;
}

/* Writes ring's held ends: a hair early where a begin of one of their
 * names follows at their time (name NULL: none follows). */
static void put_held(struct chrome *c, unsigned ring, const char *name, bool open)
{
    struct held *h = &c->held[ring];
    bool early = false;
    for (size_t i = 0; name && i < h->n && !early; i++)
        early = h->e[i].open == open && strcmp(h->e[i].name, name) == 0;
    char ts[EMBER_TRACE_EVENT_TIME_MAX];
    put_time(ts, h->ns);
    if (early)
        snprintf(ts, sizeof(ts), "%.17g", nextafter(strtod(ts, NULL), -INFINITY));
    for (size_t i = 0; i < h->n; i++) {
        put_head(c, "E", h->tid, ts);
        ember_writer_put(&c->w, h->text + h->e[i].tail, h->e[i].ntail);
    }
    h->n = h->ntext = 0;
}

/* Holds an end of ring's span name at ns; args, if any, follow its name. */
static void hold(struct chrome *c, unsigned ring, uint32_t tid, int64_t ns, const char *name,
                 bool open, const struct ember_trace_event *args)
{
    struct held *h = &c->held[ring];
    if (h->n && h->ns != ns)
        put_held(c, ring, NULL, false);
    if (EMBER_VEC_RESERVE(h->e, h->cap, h->n + 1) < 0) {
        c->err = -ENOMEM;
        return;
    }
    size_t at = h->ntext;
    c->into = ring;
    ember_trace_event_name(c->tw, name, strlen(name), open ? EMBER_OPEN_SPAN_MARK : "",
                           EMBER_JSON_FFFD_BYTES);
    if (args)
        put_args(c->tw, args);
    ember_trace_event_close(c->tw);
    int err = ember_writer_flush(c->tw);
    if (err) {
        c->err = err;
        return;
    }
    h->ns = ns;
    h->tid = tid;
    h->e[h->n++] = (struct held_end){name, open, at, h->ntext - at};
}

/* Ends the open spans of a thread above depth keep (held). */
static void end_to(struct chrome *c, unsigned ring, uint32_t tid, size_t keep, int64_t ns)
{
    struct ember_span_stack *o = &c->open[ring];
    while (o->n > keep) {
        const struct ember_open_span *s = &o->s[--o->n];
        hold(c, ring, tid, ns, s->name, s->open, NULL);
    }
}

static const char *phase(int kind)
{
    switch (kind) {
    case EMBER_EV_BEGIN:
        return "B";
    case EMBER_EV_END:
        return "E";
    case EMBER_EV_COUNTER:
        return "C";
    default:
        return "i";
    }
}

static int chrome_event(void *ctx, const struct ember_trace_event *e)
{
    struct chrome *c = ctx;
    struct ember_span_stack *o = &c->open[e->ring];
    bool open = false;
    c->last = e->ns > c->last ? e->ns : c->last;
    if (e->site->kind == EMBER_EV_END) {
        size_t k = ember_span_stack_match(o, e->site->name);
        if (k == 0)
            return 0; /* its begin is not in the trace */
        end_to(c, e->ring, e->tid, k, e->ns);
        open = o->s[--o->n].open;
        hold(c, e->ring, e->tid, e->ns, e->site->name, open, e->site->nfields ? e : NULL);
        return c->err ? c->err : c->w.err;
    }
    if (e->site->kind == EMBER_EV_BEGIN) {
        open = ember_open_set_has(&c->still_open, e->ring, e->seq);
        if (ember_span_stack_push(o, e, open) < 0)
            return -ENOMEM;
    }
    struct held *h = &c->held[e->ring];
    if (h->n)
        put_held(c, e->ring,
                 e->site->kind == EMBER_EV_BEGIN && e->ns == h->ns ? e->site->name : NULL, open);
    const char *ph = phase(e->site->kind);
    put_event(c, ph, e->tid, e->ns, e->site->name, open);
    if (*ph == 'i')
        ember_trace_event_thread_scope(&c->w);
    if (e->site->nfields)
        put_args(&c->w, e);
    ember_trace_event_close(&c->w);
    return c->err ? c->err : c->w.err;
}

static void put_names(struct chrome *c)
{
    char pname[64];
    const char *name = ember_export_process_name(c->t, pname, sizeof(pname));
    ember_writer_puts(&c->w, "{\"traceEvents\":[");
    ember_trace_event_open(&c->w, "\n", "M");
    ember_trace_event_ids(&c->w, c->pid, 0);
    ember_trace_event_meta(&c->w, "process_name");
    ember_trace_event_meta_name(&c->w, name, strlen(name), EMBER_JSON_FFFD_BYTES);
    for (unsigned i = 0; i < ember_trace_ring_count(c->t); i++) {
        const struct ember_trace_ring *r = ember_trace_ring(c->t, i);
        if (!r->name[0])
            continue;
        ember_trace_event_open(&c->w, ",\n", "M");
        ember_trace_event_ids(&c->w, c->pid, r->tid);
        ember_trace_event_meta(&c->w, "thread_name");
        ember_trace_event_meta_name(&c->w, r->name, strlen(r->name), EMBER_JSON_FFFD_BYTES);
    }
}

static int chrome_export(struct chrome *c)
{
    unsigned nrings = ember_trace_ring_count(c->t);
    int err = ember_open_set_find(c->t, &c->still_open);
    if (!err) {
        put_names(c);
        err = ember_trace_each(c->t, chrome_event, c);
    }
    /* what is still open ends with the trace */
    for (unsigned i = 0; i < nrings && !err; i++) {
        end_to(c, i, ember_trace_ring(c->t, i)->tid, 0, c->last);
        if (c->held[i].n)
            put_held(c, i, NULL, false);
    }
    ember_writer_puts(&c->w, "\n],\"displayTimeUnit\":\"ns\"}\n");
    int ferr = ember_writer_flush(&c->w);
    return err ? err : c->err ? c->err : ferr;
}

int ember_trace_export_chrome(struct ember_trace *t, const struct ember_sink *out)
{
    struct chrome *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    unsigned nrings = ember_trace_ring_count(t);
    ember_writer_init(&c->w, out);
    c->t = t;
    c->pid = ember_trace_pid(t);
    c->last = INT64_MIN;
    c->open = calloc(nrings ? nrings : 1, sizeof(*c->open));
    c->held = calloc(nrings ? nrings : 1, sizeof(*c->held));
    c->tw = malloc(sizeof(*c->tw));
    struct ember_sink text = {to_text, c};
    if (c->tw)
        ember_writer_init(c->tw, &text);
    int err = c->open && c->held && c->tw ? chrome_export(c) : -ENOMEM;
    for (unsigned i = 0; i < nrings; i++) {
        free(c->open ? c->open[i].s : NULL);
        free(c->held ? c->held[i].e : NULL);
        free(c->held ? c->held[i].text : NULL);
    }
    free(c->open);
    free(c->held);
    free(c->tw);
    ember_open_set_release(&c->still_open);
    free(c);
    return err;
}
