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
 */
#include "ember/traceview.h"
#include "io/writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct odump {
    struct ember_writer w;
    struct ember_trace *t;
    uint64_t units; /* user unit events: read_poll does not count them */
};

/* Val_long of a word: OCaml's int, 63 bits. */
static long long ocaml_int(int64_t v)
{
    return (long long)((int64_t)((uint64_t)v << 1) >> 1);
}

/* OCaml's String.escaped. */
static void put_escaped(struct ember_writer *w, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"':
            ember_writer_puts(w, "\\\"");
            break;
        case '\\':
            ember_writer_puts(w, "\\\\");
            break;
        case '\n':
            ember_writer_puts(w, "\\n");
            break;
        case '\t':
            ember_writer_puts(w, "\\t");
            break;
        case '\r':
            ember_writer_puts(w, "\\r");
            break;
        case '\b':
            ember_writer_puts(w, "\\b");
            break;
        default:
            if (c >= ' ' && c <= '~')
                ember_writer_put(w, (const char *)&c, 1);
            else
                ember_writer_printf(w, "\\%03u", c);
        }
    }
}

static int lost(void *ctx, unsigned ring, uint64_t events, uint64_t words)
{
    (void)events;
    struct odump *o = ctx;
    ember_writer_printf(&o->w, "%u\t-\tLOST_WORDS\t-\t-\t%llu\n", ring, (unsigned long long)words);
    return o->w.err;
}

static void runtime_line(struct odump *o, const struct ember_trace_event *e)
{
    const struct ember_trace_site *s = e->site;
    static const char *const kinds[] = {"", "LIFECYCLE", "BEGIN", "END", "COUNTER", "ALLOC"};
    ember_writer_printf(&o->w, "%u\t%llu\t%s\t%d\t%s", e->ring, (unsigned long long)e->ticks,
                        kinds[s->raw_type], s->raw_id, s->name);
    if (s->raw_type == EMBER_OCAML_COUNTER) {
        ember_writer_printf(&o->w, "\t%lld", ocaml_int(e->v[0].i));
    } else if (s->raw_type == EMBER_OCAML_LIFECYCLE) {
        if (s->nfields && e->v[0].i)
            ember_writer_printf(&o->w, "\t%lld", ocaml_int(e->v[0].i));
        else
            ember_writer_puts(&o->w, "\t-");
    } else if (s->raw_type == EMBER_OCAML_ALLOC) {
        const char *sep = "\t";
        for (size_t i = 0; i + 8 <= e->v[0].len; i += 8) {
            int64_t b;
            memcpy(&b, e->v[0].s + i, 8);
            ember_writer_printf(&o->w, "%s%lld", sep, ocaml_int(b));
            sep = " ";
        }
    }
    ember_writer_puts(&o->w, "\n");
}

static void user_line(struct odump *o, const struct ember_trace_event *e)
{
    const struct ember_trace_site *s = e->site;
    static const char *const kinds[] = {"USER_UNIT", "USER_INT", "USER_SPAN", "USER_SPAN",
                                        "USER_CUSTOM"};
    ember_writer_printf(&o->w, "%u\t%llu\t%s\t-\t%s\t", e->ring, (unsigned long long)e->ticks,
                        kinds[s->raw_type], ember_trace_ocaml_user_name(o->t, (unsigned)s->raw_id));
    switch (s->raw_type) {
    case EMBER_OCAML_USER_UNIT:
        o->units++;
        ember_writer_puts(&o->w, "-");
        break;
    case EMBER_OCAML_USER_INT:
        ember_writer_printf(&o->w, "%lld", ocaml_int(e->v[0].i));
        break;
    case EMBER_OCAML_USER_SPAN_BEGIN:
        ember_writer_puts(&o->w, "begin");
        break;
    case EMBER_OCAML_USER_SPAN_END:
        ember_writer_puts(&o->w, "end");
        break;
    default:
        put_escaped(&o->w, e->v[0].s, e->v[0].len);
    }
    ember_writer_puts(&o->w, "\n");
}

static int event(void *ctx, const struct ember_trace_event *e)
{
    struct odump *o = ctx;
    if (e->site->origin == EMBER_ORIGIN_OCAML_USER)
        user_line(o, e);
    else
        runtime_line(o, e);
    return o->w.err;
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
    free(o);
    return err ? err : ferr;
}
