/*
 * ocaml_dump.c - `ember trace dump --format ocaml`: an OCaml runtime_events
 * file as OCaml's own consumer library reads it (Runtime_events.read_poll
 * with every callback set), in the text of the corpus's ocaml5/
 * runtime-events/NAME.expected.txt files, so that the two compare byte for
 * byte:
 *
 *   # file_size N, # header ..., # ring_header I head=H tail=T (rings with
 *   a tail), # user_event_name ID NAME (names set), then one line per
 *   callback in read_poll's order (ring 0 from oldest to newest, then ring
 *   1...): RING TAB TIMESTAMP TAB KIND TAB ID TAB NAME [TAB VALUE], lost
 *   words where the consumer reports them, and the trailer: # ring I:
 *   events=E lost_words=W, # total: events=E (read_poll count R).
 *
 * Values are OCaml ints (63 bits) as the consumer hands them over; a
 * lifecycle event without payload or with payload 0 shows "-"; custom
 * payloads go through String.escaped. read_poll's own count leaves out user
 * unit events (it compares their type, 0, with padding's): R does too.
 *
 * Lines are written in place, without printf (a dump has tens of millions):
 * what a site's lines share ("\tKIND\tID\tNAME\t...") is made once per
 * site, then each line is its ring, timestamp, that text and its value.
 */
#include "base/digits.h"
#include "ember/traceview.h"
#include "base/writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What every line of a site has after its timestamp, up to its value
 * (unit events and spans: the whole rest of the line). */
struct site_text {
    char *text;
    size_t len;
};

struct odump {
    struct ember_writer w;
    struct ember_trace *t;
    uint64_t units;          /* user unit events: read_poll does not count them */
    struct site_text *sites; /* by site id */
    uint32_t nsites;
};

/* Val_long of a word: OCaml's int, 63 bits. */
static long long ocaml_int(int64_t v)
{
    return (long long)((int64_t)((uint64_t)v << 1) >> 1);
}

/* OCaml's String.escaped of n bytes: at most 4 bytes each. */
static char *put_escaped(char *p, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = c == '"'    ? "\\\""
                          : c == '\\' ? "\\\\"
                          : c == '\n' ? "\\n"
                          : c == '\t' ? "\\t"
                          : c == '\r' ? "\\r"
                          : c == '\b' ? "\\b"
                                      : NULL;
        if (esc) {
            memcpy(p, esc, 2);
            p += 2;
        } else if (c >= ' ' && c <= '~') {
            *p++ = (char)c;
        } else {
            *p++ = '\\';
            *p++ = (char)('0' + c / 100);
            *p++ = (char)('0' + c / 10 % 10);
            *p++ = (char)('0' + c % 10);
        }
    }
    return p;
}

static int lost(void *ctx, unsigned ring, uint64_t events, uint64_t words)
{
    (void)events;
    struct odump *o = ctx;
    ember_writer_printf(&o->w, "%u\t-\tLOST_WORDS\t-\t-\t%llu\n", ring, (unsigned long long)words);
    return o->w.err;
}

/* The text of a site's lines after the timestamp: "\tKIND\tID\tNAME",
 * then for user events "\t" and, when the value is fixed, it and the end
 * of the line. */
static int site_text_make(struct odump *o, const struct ember_trace_site *s, struct site_text *st)
{
    static const char *const runtime[] = {"", "LIFECYCLE", "BEGIN", "END", "COUNTER", "ALLOC"};
    static const char *const user[] = {"USER_UNIT", "USER_INT", "USER_SPAN", "USER_SPAN",
                                       "USER_CUSTOM"};
    static const char *const fixed[] = {"-\n", "", "begin\n", "end\n", ""};
    char *text;
    int n;
    if (s->origin == EMBER_ORIGIN_OCAML_USER)
        n = asprintf(&text, "\t%s\t-\t%s\t%s", user[s->raw_type],
                     ember_trace_ocaml_user_name(o->t, (unsigned)s->raw_id), fixed[s->raw_type]);
    else
        n = asprintf(&text, "\t%s\t%d\t%s", runtime[s->raw_type], s->raw_id, s->name);
    if (n < 0)
        return -ENOMEM;
    st->text = text;
    st->len = (size_t)n;
    return 0;
}

static const struct site_text *site_text(struct odump *o, const struct ember_trace_site *s)
{
    if (s->id >= o->nsites) {
        uint32_t n = s->id * 2 + 16;
        struct site_text *st = realloc(o->sites, n * sizeof(*st));
        if (!st)
            return NULL;
        memset(st + o->nsites, 0, (n - o->nsites) * sizeof(*st));
        o->sites = st;
        o->nsites = n;
    }
    struct site_text *st = &o->sites[s->id];
    return st->text || site_text_make(o, s, st) == 0 ? st : NULL;
}

/* A line's value and end: room for 20 numbers of an allocation event or a
 * custom payload (8 KiB at most) escaped. */
static char *runtime_value(char *p, const struct ember_trace_event *e)
{
    const struct ember_trace_site *s = e->site;
    if (s->raw_type == EMBER_OCAML_COUNTER) {
        *p++ = '\t';
        p = put_i64(p, ocaml_int(e->v[0].i));
    } else if (s->raw_type == EMBER_OCAML_LIFECYCLE) {
        *p++ = '\t';
        if (s->nfields && e->v[0].i)
            p = put_i64(p, ocaml_int(e->v[0].i));
        else
            *p++ = '-';
    } else if (s->raw_type == EMBER_OCAML_ALLOC) {
        for (size_t i = 0; i + 8 <= e->v[0].len; i += 8) {
            int64_t b;
            memcpy(&b, e->v[0].s + i, 8);
            *p++ = i ? ' ' : '\t';
            p = put_i64(p, ocaml_int(b));
        }
    }
    *p++ = '\n';
    return p;
}

static char *user_value(struct odump *o, char *p, const struct ember_trace_event *e)
{
    switch (e->site->raw_type) {
    case EMBER_OCAML_USER_UNIT:
        o->units++;
        return p;
    case EMBER_OCAML_USER_INT:
        p = put_i64(p, ocaml_int(e->v[0].i));
        break;
    case EMBER_OCAML_USER_SPAN_BEGIN:
    case EMBER_OCAML_USER_SPAN_END:
        return p;
    default:
        p = put_escaped(p, e->v[0].s, e->v[0].len);
    }
    *p++ = '\n';
    return p;
}

/* Longest line: a ring and a timestamp (40), a site's text (names of at
 * most 127 bytes: 200), a custom payload of 8168 bytes, 4 each escaped. */
enum { LINE_MAX = 40 + 200 + 4 * 8168 + 1 };

static int event(void *ctx, const struct ember_trace_event *e)
{
    struct odump *o = ctx;
    const struct site_text *st = site_text(o, e->site);
    char *start = st ? ember_writer_reserve(&o->w, LINE_MAX) : NULL;
    if (!start)
        return st ? o->w.err : -ENOMEM;
    char *p = put_u32(start, e->ring);
    *p++ = '\t';
    p = put_u64(p, e->ticks);
    memcpy(p, st->text, st->len);
    p += st->len;
    p = e->site->origin == EMBER_ORIGIN_OCAML_USER ? user_value(o, p, e) : runtime_value(p, e);
    ember_writer_commit(&o->w, (size_t)(p - start));
    return 0;
}

static void header_lines(struct odump *o, const struct ember_ocaml_layout *L)
{
    ember_writer_printf(&o->w, "# file_size %llu\n", (unsigned long long)L->file_size);
    ember_writer_printf(
        &o->w,
        "# header version=%llu max_domains=%llu ring_header_size_bytes=%llu "
        "ring_size_bytes=%llu ring_size_elements=%llu headers_offset=%llu "
        "data_offset=%llu custom_events_offset=%llu\n",
        (unsigned long long)L->version, (unsigned long long)L->max_domains,
        (unsigned long long)L->ring_header_size_bytes, (unsigned long long)L->ring_size_bytes,
        (unsigned long long)L->ring_size_elements, (unsigned long long)L->headers_offset,
        (unsigned long long)L->data_offset, (unsigned long long)L->custom_events_offset);
    for (unsigned i = 0; i < L->max_domains; i++) {
        uint64_t head, tail;
        ember_trace_ocaml_ring(o->t, i, &head, &tail);
        if (tail)
            ember_writer_printf(&o->w, "# ring_header %u head=%llu tail=%llu\n", i,
                                (unsigned long long)head, (unsigned long long)tail);
    }
    for (unsigned id = 0; id < 8192; id++) {
        const char *name = ember_trace_ocaml_user_name(o->t, id);
        if (name[0])
            ember_writer_printf(&o->w, "# user_event_name %u %s\n", id, name);
    }
}

static void trailer(struct odump *o, const struct ember_ocaml_layout *L)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < L->max_domains; i++) {
        uint64_t head, tail;
        ember_trace_ocaml_ring(o->t, i, &head, &tail);
        const struct ember_trace_ring *r = ember_trace_ring(o->t, i);
        if (!tail || !r)
            continue;
        ember_writer_printf(&o->w, "# ring %u: events=%llu lost_words=%llu\n", i,
                            (unsigned long long)r->events, (unsigned long long)r->lost_words);
        total += r->events;
    }
    ember_writer_printf(&o->w, "# total: events=%llu (read_poll count %llu)\n",
                        (unsigned long long)total, (unsigned long long)(total - o->units));
}

int ember_trace_dump_ocaml(struct ember_trace *t, const struct ember_sink *out)
{
    struct ember_ocaml_layout L;
    if (ember_trace_ocaml_layout(t, &L) < 0)
        return -EINVAL;
    struct odump *o = calloc(1, sizeof(*o));
    if (!o)
        return -ENOMEM;
    ember_writer_init(&o->w, out);
    o->t = t;
    header_lines(o, &L);
    struct ember_trace_visitor v = {event, lost, o, true};
    int err = ember_trace_visit(t, &v);
    if (!err)
        trailer(o, &L);
    int ferr = ember_writer_flush(&o->w);
    for (uint32_t i = 0; i < o->nsites; i++)
        free(o->sites[i].text);
    free(o->sites);
    free(o);
    return err ? err : ferr;
}
