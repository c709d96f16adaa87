/*
 * views.c - the trace as text: one line per event, per-span statistics,
 * latency histograms.
 */
#include "ember/trace.h"
#include "base/digits.h"
#include "ember/traceview.h"
#include "base/writer.h"
#include "traceview/latency.h"
#include "traceview/spans.h"
#include "base/diag.h"
#include "base/strmap.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
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

/* Short texts copied 32 bytes at a time, beyond their end: the caller's
 * sources have 32 readable bytes, and the line's room is reserved. */
enum { OVERCOPY = 32 };

static char *put_padded(char *p, const char *s, size_t n)
{
    if (n <= OVERCOPY)
        memcpy(p, s, OVERCOPY);
    else
        memcpy(p, s, n);
    return p + n;
}

/* Whether byte c of a name or value is written as an escape: control
 * bytes and DEL as \xNN, so that one event is one line whatever its
 * names hold, and '\' as "\\", so that the text says which is which. */
static bool escaped(unsigned char c)
{
    return c < 0x20 || c == 0x7f || c == '\\';
}

/* Escapes take at most 4 bytes: names need room for 4 per byte. */
enum { ESCAPE_MAX = 4 };

static char *put_escape(char *p, unsigned char c)
{
    *p++ = '\\';
    if (c == '\\' || c == '"') {
        *p++ = (char)c;
        return p;
    }
    *p++ = 'x';
    *p++ = "0123456789abcdef"[c >> 4];
    *p++ = "0123456789abcdef"[c & 15];
    return p;
}

/* A name (of an event, field or thread), escaped. */
static char *put_name(char *p, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (escaped(*c))
            p = put_escape(p, *c);
        else
            *p++ = (char)*c;
    }
    return p;
}

size_t ember_trace_escape(const char *s, char *buf, size_t cap)
{
    size_t need = 0, used = 0;
    char esc[ESCAPE_MAX];
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        size_t n = escaped(*c) ? (size_t)(put_escape(esc, *c) - esc) : 1;
        if (n == 1)
            esc[0] = (char)*c;
        if (used == need && used + n < cap) { /* whole escapes only */
            memcpy(buf + used, esc, n);
            used += n;
        }
        need += n;
    }
    if (cap)
        buf[used] = '\0';
    return need;
}

/* A quoted value: string (up to its NUL) or bytes (len of them), with '"'
 * escaped too. */
static char *put_quoted(char *p, const char *s, size_t len)
{
    *p++ = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (escaped(c) || c == '"')
            p = put_escape(p, c);
        else
            *p++ = (char)c;
    }
    *p++ = '"';
    return p;
}

/* A field value as text: integers and doubles as printf does, strings and
 * bytes quoted. The caller leaves room: strings are at most EMBER_MAX_STR
 * bytes, bytes need value_room, ESCAPE_MAX each escaped. */
static char *put_value(char *p, int type, const struct ember_trace_value *v)
{
    if (type == EMBER_FT_I64)
        return put_i64(p, v->i);
    if (type == EMBER_FT_F64)
        return p + snprintf(p, 32, "%.17g", v->f);
    if (type == EMBER_FT_BYTES)
        return put_quoted(p, v->s, v->len);
    return put_quoted(p, v->s, strlen(v->s));
}

/* Room beyond LINE_MAX that an event's bytes fields need. */
static size_t value_room(const struct ember_trace_event *e)
{
    size_t n = 0;
    for (unsigned i = 0; i < e->site->nfields; i++)
        if (e->site->field_types[i] == EMBER_FT_BYTES)
            n += ESCAPE_MAX * e->v[i].len + 2;
    return n;
}

/* The fixed parts of a site's lines, made once: "kind name", then
 * " field=" for each field, all in one buffer with OVERCOPY bytes of
 * slack. */
struct site_text {
    char *text;
    uint16_t len;
    bool bytes; /* a field is bytes: lines need more room */
    uint16_t field_off[EMBER_TRACE_MAX_FIELDS], field_len[EMBER_TRACE_MAX_FIELDS];
};

static size_t site_text_size(const struct ember_trace_site *site)
{
    size_t n = strlen(kind_name(site->kind)) + 1 + ESCAPE_MAX * strlen(site->name) + OVERCOPY;
    for (unsigned i = 0; i < site->nfields; i++)
        n += ESCAPE_MAX * strlen(site->field_names[i]) + 2;
    return n;
}

/* buf has site_text_size(site) bytes. */
static void site_text_make(struct site_text *st, const struct ember_trace_site *site, char *buf)
{
    memset(buf, 0, site_text_size(site));
    st->bytes = false;
    char *p = put_name(buf, kind_name(site->kind));
    *p++ = ' ';
    p = put_name(p, site->name);
    st->text = buf;
    st->len = (uint16_t)(p - buf);
    for (unsigned i = 0; i < site->nfields; i++) {
        st->bytes |= site->field_types[i] == EMBER_FT_BYTES;
        st->field_off[i] = (uint16_t)(p - buf);
        *p++ = ' ';
        p = put_name(p, site->field_names[i]);
        *p++ = '=';
        st->field_len[i] = (uint16_t)(p - buf - st->field_off[i]);
    }
}

/* " tid thread " into buf (RING_TEXT bytes, OVERCOPY of them slack): its
 * length. Thread names are cut to 63 bytes (rings keep 55). */
enum { THREAD_MAX = 63, RING_TEXT = 16 + ESCAPE_MAX * THREAD_MAX + OVERCOPY };

static uint16_t ring_text_make(char *buf, uint32_t tid, const char *thread)
{
    char name[THREAD_MAX + 1];
    snprintf(name, sizeof(name), "%s", thread && thread[0] ? thread : "-");
    memset(buf, 0, RING_TEXT);
    char *p = buf + snprintf(buf, 16, " %u ", tid);
    p = put_name(p, name);
    *p++ = ' ';
    return (uint16_t)(p - buf);
}

/* The line of an event after its time: " tid thread kind name fields\n".
 * Inlined into dump's loop: a call per line costs as much as a field. */
static inline __attribute__((always_inline)) char *line_body(char *p,
                                                             const struct ember_trace_event *e,
                                                             const char *ring_text, size_t ring_len,
                                                             const struct site_text *st)
{
    p = put_padded(p, ring_text, ring_len);
    p = put_padded(p, st->text, st->len);
    for (unsigned i = 0; i < e->site->nfields; i++) {
        p = put_padded(p, st->text + st->field_off[i], st->field_len[i]);
        p = put_value(p, e->site->field_types[i], &e->v[i]);
    }
    *p++ = '\n';
    return p;
}

static char *line_time(char *p, const struct ember_trace_event *e, bool ticks)
{
    if (ticks)
        return put_u64(p, e->ticks);
    uint64_t ns = e->ns < 0 ? -(uint64_t)e->ns : (uint64_t)e->ns;
    if (e->ns < 0)
        *p++ = '-';
    p = put_u64(p, ns / 1000000000);
    *p++ = '.';
    return put_9(p, (uint32_t)(ns % 1000000000));
}

/* Longest line: names of at most 255 bytes and 8 values of 64 bytes, all
 * escaped: under 12 KiB. */
enum { LINE_MAX = 16 * 1024 };

size_t ember_trace_event_line(const struct ember_trace_event *e, const char *thread, bool ticks,
                              char *buf, size_t cap)
{
    char ring[RING_TEXT];
    char *text = malloc(site_text_size(e->site)), *line = malloc(LINE_MAX + value_room(e));
    if (cap == 0 || !text || !line) {
        free(text);
        free(line);
        return 0;
    }
    struct site_text st;
    site_text_make(&st, e->site, text);
    uint16_t ring_len = ring_text_make(ring, e->tid, thread);
    char *p = line_body(line_time(line, e, ticks), e, ring, ring_len, &st);
    free(text);
    size_t n = (size_t)(p - line) < cap ? (size_t)(p - line) : cap - 1;
    memcpy(buf, line, n);
    buf[n] = '\0';
    free(line);
    return n;
}

struct dump_ctx {
    struct ember_writer w;
    struct ember_trace *t;
    bool ticks;
    char (*ring_text)[RING_TEXT]; /* " tid thread " per ring */
    uint16_t *ring_len;
    struct site_text *sites; /* by site id */
    uint32_t nsites;
    int64_t head;             /* the time last written / 10 us, -1 before the first */
    char head_text[OVERCOPY]; /* its text: "SECONDS.ddddd" */
    size_t head_len;
};

static const struct site_text *site_text(struct dump_ctx *c, const struct ember_trace_site *site)
{
    uint32_t id = site->id;
    if (id >= c->nsites) {
        uint32_t n = id * 2 + 16;
        struct site_text *st = realloc(c->sites, n * sizeof(*st));
        if (!st)
            return NULL;
        memset(st + c->nsites, 0, (n - c->nsites) * sizeof(*st));
        c->sites = st;
        c->nsites = n;
    }
    struct site_text *st = &c->sites[id];
    if (!st->text) {
        char *buf = malloc(site_text_size(site));
        if (!buf)
            return NULL;
        site_text_make(st, site, buf);
    }
    return st;
}

/* Times mostly share all but their last 4 digits with the line before
 * (events microseconds apart): the seconds and the first 5 digits of the
 * nanoseconds are written when they change. */
static char *dump_time(struct dump_ctx *c, char *p, const struct ember_trace_event *e)
{
    if (c->ticks || e->ns < 0)
        return line_time(p, e, c->ticks);
    int64_t head = e->ns / 10000;
    if (head != c->head) {
        char *q = put_u64(c->head_text, (uint64_t)(head / 100000));
        uint32_t frac = (uint32_t)(head % 100000);
        *q++ = '.';
        *q++ = (char)('0' + frac / 10000);
        put_4(q, frac % 10000);
        c->head_len = (size_t)(q + 4 - c->head_text);
        c->head = head;
    }
    p = put_padded(p, c->head_text, c->head_len);
    put_4(p, (uint32_t)(e->ns % 10000));
    return p + 4;
}

static int dump_event(void *ctx, const struct ember_trace_event *e)
{
    struct dump_ctx *c = ctx;
    const struct site_text *st = site_text(c, e->site);
    if (!st)
        return -ENOMEM;
    char *start = ember_writer_reserve(&c->w, LINE_MAX + (st->bytes ? value_room(e) : 0));
    if (!start)
        return c->w.err ? c->w.err : -ENOMEM;
    char *p = dump_time(c, start, e);
    p = line_body(p, e, c->ring_text[e->ring], c->ring_len[e->ring], st);
    ember_writer_commit(&c->w, (size_t)(p - start));
    return 0;
}

int ember_trace_dump(struct ember_trace *t, const struct ember_sink *out, bool ticks)
{
    struct dump_ctx *c = calloc(1, sizeof(*c));
    unsigned nrings = ember_trace_ring_count(t);
    if (c) {
        c->ring_text = calloc(nrings ? nrings : 1, sizeof(*c->ring_text));
        c->ring_len = calloc(nrings ? nrings : 1, sizeof(*c->ring_len));
    }
    int err = c && c->ring_text && c->ring_len ? 0 : -ENOMEM;
    if (!err) {
        ember_writer_init(&c->w, out);
        c->t = t;
        c->ticks = ticks;
        c->head = -1;
        for (unsigned i = 0; i < nrings; i++) {
            const struct ember_trace_ring *r = ember_trace_ring(t, i);
            c->ring_len[i] = ring_text_make(c->ring_text[i], r->tid, r->name);
        }
        err = ember_trace_each(t, dump_event, c);
        int ferr = ember_writer_flush(&c->w);
        err = err ? err : ferr;
    }
    for (uint32_t i = 0; c && i < c->nsites; i++)
        free(c->sites[i].text);
    if (c) {
        free(c->sites);
        free(c->ring_text);
        free(c->ring_len);
    }
    free(c);
    return err;
}

/* ---- statistics ------------------------------------------------------- */

struct name_stats {
    const char *name;
    struct ember_values d; /* durations, ns */
    int64_t total;
    uint64_t unclosed;
    uint64_t open; /* still open at the end: not in d */
};

struct stats_ctx {
    struct ember_strmap by_name;
    struct name_stats **all;
    size_t n, cap;
    const char *only; /* latency: one span name, or NULL */
    int err;
};

static struct name_stats *name_stats_of(struct stats_ctx *c, const char *name, const char *key)
{
    struct name_stats *ns = ember_strmap_get(&c->by_name, key, strlen(key));
    if (ns)
        return ns;
    ns = calloc(1, sizeof(*ns));
    if (!ns || EMBER_VEC_RESERVE(c->all, c->cap, c->n + 1) < 0) {
        free(ns);
        return NULL;
    }
    ns->name = name;
    c->all[c->n++] = ns;
    return ember_strmap_put(&c->by_name, key, strlen(key), ns) < 0 ? NULL : ns;
}

static int stats_span(void *ctx, const struct ember_span *s)
{
    struct stats_ctx *c = ctx;
    if (c->only && strcmp(c->only, s->name) != 0)
        return 0;
    struct name_stats *ns = name_stats_of(c, s->name, c->only ? "" : s->name);
    if (!ns)
        return -ENOMEM;
    if (s->open) {
        ns->open++; /* it has no duration yet */
        return 0;
    }
    /* times from a damaged file can be anything: saturate, never wrap */
    int64_t d;
    if (__builtin_sub_overflow(s->end_ns, s->begin_ns, &d))
        d = INT64_MAX;
    if (ember_values_add(&ns->d, d) < 0)
        return -ENOMEM;
    if (__builtin_add_overflow(ns->total, d, &ns->total))
        ns->total = INT64_MAX;
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
        ember_values_release(&c->all[i]->d);
        free(c->all[i]);
    }
    free(c->all);
    ember_strmap_release(&c->by_name);
}

/* A name escaped (ember_trace_escape), left-aligned in width columns. */
static void put_name_column(struct ember_writer *w, const char *name, int width)
{
    char text[ESCAPE_MAX * 256 + 1];
    ember_trace_escape(name, text, sizeof(text));
    ember_writer_printf(w, "%-*s", width, text);
}

/* A sorted name's row: its percentiles by nearest rank (percentile.h). */
static void stats_row(struct ember_writer *w, const struct name_stats *ns)
{
    static const struct ember_percent at[] = {{50, 1}, {90, 1}, {99, 1}};
    put_name_column(w, ns->name, 32);
    ember_writer_printf(w, " %9zu", ns->d.n);
    ember_put_duration(w, (double)ns->total);
    ember_put_duration(w, ember_values_mean(&ns->d));
    ember_put_duration(w, (double)ember_values_min(&ns->d));
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
        ember_put_duration(w, (double)ember_percentile(&ns->d, at[i]));
    ember_put_duration(w, (double)ember_values_max(&ns->d));
    if (ns->unclosed)
        ember_writer_printf(w, "  (%llu unclosed)", (unsigned long long)ns->unclosed);
    ember_writer_puts(w, "\n");
}

/* "# N spans still open at the end (not counted): a 1, b 2" */
static void open_spans_line(struct ember_writer *w, const struct stats_ctx *c, uint64_t open)
{
    if (!open)
        return;
    ember_writer_printf(w, "# %llu span%s still open at the end of the trace (not counted):",
                        (unsigned long long)open, open == 1 ? "" : "s");
    const char *sep = " ";
    for (size_t i = 0; i < c->n; i++) {
        if (!c->all[i]->open)
            continue;
        ember_writer_puts(w, sep);
        put_name_column(w, c->all[i]->name, 0);
        ember_writer_printf(w, " %llu", (unsigned long long)c->all[i]->open);
        sep = ", ";
    }
    ember_writer_puts(w, "\n");
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
        if (c.n)
            qsort(c.all, c.n, sizeof(*c.all), by_total);
        ember_writer_init(w, out);
        ember_writer_printf(w, "%-32s %9s %11s %11s %11s %11s %11s %11s %11s\n", "span", "count",
                            "total", "mean", "min", "p50", "p90", "p99", "max");
        for (size_t i = 0; i < c.n; i++) {
            ember_values_sort(&c.all[i]->d);
            if (c.all[i]->d.n)
                stats_row(w, c.all[i]);
        }
        open_spans_line(w, &c, st.open);
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

/* Why there is no histogram to show: no such span, or none ended. */
static int no_durations(struct ember_diag *d, const char *name, uint64_t open)
{
    char span[ESCAPE_MAX * 256 + 1];
    if (name)
        ember_trace_escape(name, span, sizeof(span));
    if (name && open)
        return ember_diag_set(
            d, -ENODATA, NULL, 0,
            "no span named \"%s\" ended in the trace (%llu still open at its end)", span,
            (unsigned long long)open);
    if (name)
        return ember_diag_set(d, -ENODATA, NULL, 0, "no span named \"%s\" in the trace", span);
    if (open)
        return ember_diag_set(d, -ENODATA, NULL, 0,
                              "no span ended in the trace (%llu still open at its end)",
                              (unsigned long long)open);
    return ember_diag_set(d, -ENODATA, NULL, 0, "no spans in the trace");
}

int ember_trace_latency(struct ember_trace *t, const char *span, const struct ember_sink *out,
                        struct ember_diag *d)
{
    struct stats_ctx c = {.only = span};
    struct ember_span_stats st;
    int err = ember_strmap_init(&c.by_name);
    if (!err)
        err = ember_trace_each_span(t, stats_span, &c, &st);
    struct name_stats *ns = NULL;
    uint64_t open = 0;
    if (!err) {
        /* all spans: every name's durations merged into the first */
        for (size_t i = 1; !span && i < c.n && !err; i++)
            err = ember_values_merge(&c.all[0]->d, &c.all[i]->d);
        ns = c.n ? c.all[0] : NULL;
        open = span ? (ns ? ns->open : 0) : st.open;
        if (!err)
            err = ns && ns->d.n ? 0 : no_durations(d, span, open);
    }
    struct ember_writer *w = err ? NULL : malloc(sizeof(*w));
    if (!err && !w)
        err = -ENOMEM;
    if (!err) {
        ember_writer_init(w, out);
        ember_writer_puts(w, "# ");
        put_name_column(w, span ? span : "all spans", 0);
        ember_writer_printf(w, ": %zu spans", ns->d.n);
        if (open)
            ember_writer_printf(w, " (%llu more still open at the end of the trace, not counted)",
                                (unsigned long long)open);
        ember_writer_puts(w, ", durations in microseconds\n");
        ember_values_sort(&ns->d);
        ember_latency_table(w, &ns->d);
        ember_latency_chart(w, &ns->d);
        err = ember_writer_flush(w);
    }
    free(w);
    stats_free(&c);
    return err;
}
