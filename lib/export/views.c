/*
 * views.c - the trace as text: one line per event, per-span statistics,
 * latency histograms.
 */
#include "ember/trace.h"
#include "ember/traceview.h"
#include "io/writer.h"
#include "spans.h"
#include "util/diag.h"
#include "util/hdr.h"
#include "util/strmap.h"
#include "util/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *kind_name(int kind)
{
    switch (kind) {
    case EMBER_EV_BEGIN:
        return "begin";
    case EMBER_EV_END:
        return "end";
    case EMBER_EV_INSTANT:
        return "instant";
    case EMBER_EV_COUNTER:
        return "counter";
    default:
        return "event";
    }
}

/* A field value as text: integers and doubles as printf does, strings
 * quoted with '"' and '\' escaped and control bytes as \xNN. */
static void put_value(struct ember_writer *w, int type, const struct ember_trace_value *v)
{
    if (type == EMBER_FT_I64) {
        ember_writer_printf(w, "%lld", (long long)v->i);
    } else if (type == EMBER_FT_F64) {
        ember_writer_printf(w, "%.17g", v->f);
    } else {
        ember_writer_put(w, "\"", 1);
        for (const unsigned char *s = (const unsigned char *)v->s; *s; s++) {
            if (*s == '"' || *s == '\\')
                ember_writer_printf(w, "\\%c", *s);
            else if (*s < 0x20 || *s == 0x7f)
                ember_writer_printf(w, "\\x%02x", *s);
            else
                ember_writer_put(w, (const char *)s, 1);
        }
        ember_writer_put(w, "\"", 1);
    }
}

static void event_line(struct ember_writer *w, const struct ember_trace_event *e,
                       const char *thread, bool ticks)
{
    if (ticks)
        ember_writer_printf(w, "%llu", (unsigned long long)e->ticks);
    else
        ember_writer_printf(w, "%s%lld.%09lld", e->ns < 0 ? "-" : "",
                            (long long)(llabs(e->ns) / 1000000000),
                            (long long)(llabs(e->ns) % 1000000000));
    ember_writer_printf(w, " %u %s %s %s", e->tid, thread && thread[0] ? thread : "-",
                        kind_name(e->site->kind), e->site->name);
    for (unsigned i = 0; i < e->site->nfields; i++) {
        ember_writer_printf(w, " %s=", e->site->field_names[i]);
        put_value(w, e->site->field_types[i], &e->v[i]);
    }
    ember_writer_put(w, "\n", 1);
}

struct line_buf {
    char *buf;
    size_t cap, len;
};

static int line_write(void *ctx, const char *buf, size_t len)
{
    struct line_buf *l = ctx;
    size_t room = l->cap > l->len + 1 ? l->cap - l->len - 1 : 0;
    size_t k = len < room ? len : room;
    memcpy(l->buf + l->len, buf, k);
    l->len += k;
    return 0;
}

size_t ember_trace_event_line(const struct ember_trace_event *e, const char *thread, bool ticks,
                              char *buf, size_t cap)
{
    struct line_buf l = {buf, cap, 0};
    struct ember_sink sink = {line_write, &l};
    struct ember_writer w; /* 64 KiB on the stack: this runs per event */
    if (cap == 0)
        return 0;
    ember_writer_init(&w, &sink);
    event_line(&w, e, thread, ticks);
    ember_writer_flush(&w);
    buf[l.len] = '\0';
    return l.len;
}

struct dump_ctx {
    struct ember_writer w;
    struct ember_trace *t;
    bool ticks;
};

static int dump_event(void *ctx, const struct ember_trace_event *e)
{
    struct dump_ctx *c = ctx;
    event_line(&c->w, e, ember_trace_ring(c->t, e->ring)->name, c->ticks);
    return c->w.err;
}

int ember_trace_dump(struct ember_trace *t, const struct ember_sink *out, bool ticks)
{
    struct dump_ctx *c = malloc(sizeof(*c));
    if (!c)
        return -ENOMEM;
    ember_writer_init(&c->w, out);
    c->t = t;
    c->ticks = ticks;
    int err = ember_trace_each(t, dump_event, c);
    int ferr = ember_writer_flush(&c->w);
    free(c);
    return err ? err : ferr;
}

/* ---- statistics ------------------------------------------------------- */

struct name_stats {
    const char *name;
    struct ember_hdr h;
    int64_t total;
    uint64_t unclosed;
};

struct stats_ctx {
    struct ember_strmap by_name;
    struct name_stats **all;
    size_t n, cap;
    const char *only; /* latency: one span name, or NULL */
    int err;
};

static int stats_span(void *ctx, const struct ember_span *s)
{
    struct stats_ctx *c = ctx;
    if (c->only && strcmp(c->only, s->name) != 0)
        return 0;
    const char *key = c->only ? "" : s->name;
    struct name_stats *ns = ember_strmap_get(&c->by_name, key, strlen(key));
    if (!ns) {
        ns = calloc(1, sizeof(*ns));
        if (!ns || EMBER_VEC_RESERVE(c->all, c->cap, c->n + 1) < 0 ||
            ember_hdr_init(&ns->h, 1, 3600LL * 1000000000, 3) < 0) {
            free(ns);
            return -ENOMEM;
        }
        ns->name = s->name;
        c->all[c->n++] = ns;
        int err = ember_strmap_put(&c->by_name, key, strlen(key), ns);
        if (err)
            return err;
    }
    int64_t d = s->end_ns - s->begin_ns;
    ember_hdr_record(&ns->h, d > 0 ? d : 1);
    ns->total += d;
    ns->unclosed += s->unclosed;
    return 0;
}

static int by_total(const void *a, const void *b)
{
    const struct name_stats *x = *(struct name_stats *const *)a,
                            *y = *(struct name_stats *const *)b;
    return x->total < y->total ? 1 : x->total > y->total ? -1 : strcmp(x->name, y->name);
}

static void stats_free(struct stats_ctx *c)
{
    for (size_t i = 0; i < c->n; i++) {
        ember_hdr_release(&c->all[i]->h);
        free(c->all[i]);
    }
    free(c->all);
    ember_strmap_release(&c->by_name);
}

/* Durations as text with a unit that keeps them readable. */
static void put_duration(struct ember_writer *w, double ns)
{
    if (ns < 1e3)
        ember_writer_printf(w, " %9.0fns", ns);
    else if (ns < 1e6)
        ember_writer_printf(w, " %9.3fus", ns / 1e3);
    else if (ns < 1e9)
        ember_writer_printf(w, " %9.3fms", ns / 1e6);
    else
        ember_writer_printf(w, " %9.3fs ", ns / 1e9);
}

int ember_trace_stats(struct ember_trace *t, const struct ember_sink *out)
{
    struct stats_ctx c = {0};
    struct ember_span_stats st;
    int err = ember_strmap_init(&c.by_name);
    if (!err)
        err = ember_trace_each_span(t, stats_span, &c, &st);
    struct ember_writer *w = malloc(sizeof(*w));
    if (!err && !w)
        err = -ENOMEM;
    if (!err) {
        qsort(c.all, c.n, sizeof(*c.all), by_total);
        ember_writer_init(w, out);
        ember_writer_printf(w, "%-32s %9s %11s %11s %11s %11s %11s %11s %11s\n", "span", "count",
                            "total", "mean", "min", "p50", "p90", "p99", "max");
        for (size_t i = 0; i < c.n; i++) {
            struct name_stats *ns = c.all[i];
            ember_writer_printf(w, "%-32s %9lld", ns->name, (long long)ns->h.total);
            put_duration(w, (double)ns->total);
            put_duration(w, (double)ns->total / (double)ns->h.total);
            put_duration(w, (double)ns->h.min);
            put_duration(w, (double)ember_hdr_value_at_percentile(&ns->h, 50));
            put_duration(w, (double)ember_hdr_value_at_percentile(&ns->h, 90));
            put_duration(w, (double)ember_hdr_value_at_percentile(&ns->h, 99));
            put_duration(w, (double)ns->h.max);
            if (ns->unclosed)
                ember_writer_printf(w, "  (%llu unclosed)", (unsigned long long)ns->unclosed);
            ember_writer_puts(w, "\n");
        }
        if (st.unmatched_ends)
            ember_writer_printf(w,
                                "# %llu span ends had no begin (tracing started inside them, "
                                "or their begin was overwritten)\n",
                                (unsigned long long)st.unmatched_ends);
        err = ember_writer_flush(w);
    }
    free(w);
    stats_free(&c);
    return err;
}

/* ---- latency ---------------------------------------------------------- */

/* Counts per power-of-two range of durations, as bars. */
static void bar_chart(struct ember_writer *w, const struct ember_hdr *h)
{
    uint64_t bins[64] = {0}, most = 0;
    int lo = 63, hi = 0;
    for (int32_t i = 0; i < h->counts_len; i++) {
        if (!h->counts[i])
            continue;
        int32_t b = (i >> h->sub_bucket_half_count_magnitude) - 1;
        int32_t sb = (i & (h->sub_bucket_half_count - 1)) + h->sub_bucket_half_count;
        if (b < 0)
            sb -= h->sub_bucket_half_count, b = 0;
        int64_t v = (int64_t)sb << (b + h->unit_magnitude);
        int k = v > 0 ? 63 - __builtin_clzll((unsigned long long)v) : 0;
        bins[k] += (uint64_t)h->counts[i];
    }
    for (int k = 0; k < 64; k++) {
        if (!bins[k])
            continue;
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
        most = bins[k] > most ? bins[k] : most;
    }
    ember_writer_puts(w, "\n      duration from  count\n");
    for (int k = lo; k <= hi && most; k++) {
        put_duration(w, (double)(1ULL << k));
        int width = (int)((double)bins[k] * 50 / (double)most + 0.5);
        ember_writer_printf(w, " %9llu |", (unsigned long long)bins[k]);
        for (int x = 0; x < width; x++)
            ember_writer_puts(w, "#");
        ember_writer_puts(w, "\n");
    }
}

int ember_trace_latency(struct ember_trace *t, const char *span, const struct ember_sink *out,
                        struct ember_diag *d)
{
    struct stats_ctx c = {.only = span};
    struct ember_span_stats st;
    int err = ember_strmap_init(&c.by_name);
    /* all spans together: one histogram under the empty key */
    if (!err && !span)
        c.only = NULL;
    if (!err)
        err = ember_trace_each_span(t, stats_span, &c, &st);
    struct name_stats *ns = NULL;
    if (!err) {
        if (!span) {
            /* merge every name's histogram into the first */
            for (size_t i = 1; i < c.n; i++)
                for (int32_t k = 0; k < c.all[0]->h.counts_len; k++)
                    c.all[0]->h.counts[k] += c.all[i]->h.counts[k];
            for (size_t i = 1; i < c.n; i++) {
                c.all[0]->h.total += c.all[i]->h.total;
                c.all[0]->h.max =
                    c.all[i]->h.max > c.all[0]->h.max ? c.all[i]->h.max : c.all[0]->h.max;
                c.all[0]->h.min =
                    c.all[i]->h.min < c.all[0]->h.min ? c.all[i]->h.min : c.all[0]->h.min;
            }
        }
        ns = c.n ? c.all[0] : NULL;
        if (!ns)
            err = ember_diag_set(d, -ENODATA, NULL, 0,
                                 span ? "no span named \"%s\" in the trace"
                                      : "no spans in the trace%s",
                                 span ? span : "");
    }
    struct ember_writer *w = err ? NULL : malloc(sizeof(*w));
    if (!err && !w)
        err = -ENOMEM;
    if (!err) {
        ember_writer_init(w, out);
        ember_writer_printf(w, "# %s: %lld spans, durations in microseconds\n",
                            span ? span : "all spans", (long long)ns->h.total);
        ember_hdr_print_classic(&ns->h, w, 5, 1000.0);
        bar_chart(w, &ns->h);
        err = ember_writer_flush(w);
    }
    free(w);
    stats_free(&c);
    return err;
}
