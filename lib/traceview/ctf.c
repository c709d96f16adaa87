/*
 * ctf.c - a CTF 1.8 trace directory for babeltrace2 and Trace Compass:
 * ember's ring packets already are CTF packets, so this writes their
 * metadata (TSDL: one event class per site, named "kind:name") and copies
 * each thread's valid packets, in sequence order, into a stream file. A
 * trace without packets of its own (OCaml runtime_events) gets packets of
 * the same layout written here, a stream file per ring, its events in ring
 * order (a ring's events are in time order); the metadata follows the pass,
 * when every site is known. Alignments in TSDL are in bits.
 */
#include "ember/trace.h"
#include "ember/traceview.h"
#include "base/writer.h"
#include "wire/ring_format.h"
#include "base/diag.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fd_write(void *ctx, const char *buf, size_t len)
{
    int fd = *(int *)ctx;
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* TSDL string literal contents. */
static void tsdl_string(struct ember_writer *w, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            ember_writer_printf(w, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            ember_writer_puts(w, "?");
        else
            ember_writer_put(w, s, 1);
    }
}

/* A field name that is a valid TSDL identifier: [A-Za-z_][A-Za-z0-9_]*,
 * prefixed so that it never is a keyword. */
static void tsdl_ident(struct ember_writer *w, const char *s)
{
    ember_writer_puts(w, "_");
    for (; *s; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        ember_writer_put(w, ok ? s : "_", 1);
    }
}

static const char *kind_prefix(int kind)
{
    static const char *const k[] = {"", "begin", "end", "instant", "counter", "event"};
    return kind >= 1 && kind <= 5 ? k[kind] : "event";
}

/* The types, and the trace block with the trace's uuid. */
static void write_trace_block(struct ember_trace *t, struct ember_writer *w)
{
    const uint8_t *u = ember_trace_uuid(t);
    char uuid[40];
    snprintf(uuid, sizeof(uuid),
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
             u[15]);
    ember_writer_printf(w,
                        "/* CTF 1.8 */\n"
                        "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
                        "typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; "
                        "} := text8_t;\n"
                        "typealias integer { size = 32; align = 32; signed = false; } := "
                        "uint32_t;\n"
                        "typealias integer { size = 64; align = 64; signed = false; } := "
                        "uint64_t;\n"
                        "typealias integer { size = 64; align = 64; signed = true; } := int64_t;\n"
                        "typealias floating_point { exp_dig = 11; mant_dig = 53; align = 64; } "
                        ":= double;\n\n"
                        "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"%s\";\n"
                        "\tbyte_order = le;\n"
                        "\tpacket.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t "
                        "stream_id; };\n};\n\n",
                        uuid);
}

/* The environment: ember as the tracer, the traced process. */
static void write_env(struct ember_trace *t, struct ember_writer *w)
{
    ember_writer_printf(w,
                        "env {\n\ttracer_name = \"ember\";\n\ttracer_major = 0;\n"
                        "\ttracer_minor = 1;\n\tvpid = %u;\n\tprocname = \"",
                        ember_trace_pid(t));
    const char *exe = ember_trace_exe(t), *slash = strrchr(exe, '/');
    tsdl_string(w, slash ? slash + 1 : exe);
    ember_writer_puts(w, "\";\n};\n\n");
}

static void write_clock(struct ember_trace *t, struct ember_writer *w)
{
    uint64_t hz = ember_trace_ticks_per_sec(t);
    /* clock value v is at wall time base_real + (v - base_ticks) / hz, so
     * the origin (v = 0) is base_real - base_ticks / hz; without a wall
     * time, the clock's own origin */
    bool absolute = ember_trace_start_realtime(t) != 0;
    long double origin = (long double)ember_trace_start_realtime(t) / 1e9L -
                         (long double)ember_trace_base_ticks(t) / (long double)hz;
    long long offset_s = absolute ? (long long)origin : 0;
    if (absolute && (long double)offset_s > origin)
        offset_s--;
    unsigned long long offset =
        absolute ? (unsigned long long)((origin - (long double)offset_s) * hz) : 0;
    ember_writer_printf(w,
                        "clock {\n\tname = ember;\n\tdescription = \"%s\";\n\tfreq = %llu;\n"
                        "\toffset_s = %lld;\n\toffset = %llu;\n",
                        hz == 1000000000 ? "CLOCK_MONOTONIC" : "TSC", (unsigned long long)hz,
                        offset_s, offset);
    ember_writer_puts(w, absolute ? "\tabsolute = true;\n};\n\n" : "};\n\n");
}

/* An event's declaration: its name, its id, its fields. */
static void write_event_decl(struct ember_writer *w, const struct ember_trace_site *s)
{
    ember_writer_printf(w, "event {\n\tname = \"%s:", kind_prefix(s->kind));
    tsdl_string(w, s->name);
    ember_writer_printf(w, "\";\n\tid = %u;\n\tstream_id = 0;\n\tfields := struct {", s->id);
    for (unsigned k = 0; k < s->nfields; k++) {
        if (s->field_types[k] == EMBER_FT_BYTES) {
            /* a length, then the bytes */
            ember_writer_puts(w, " uint64_t ");
            tsdl_ident(w, s->field_names[k]);
            ember_writer_puts(w, "_len; text8_t ");
            tsdl_ident(w, s->field_names[k]);
            ember_writer_puts(w, "[");
            tsdl_ident(w, s->field_names[k]);
            ember_writer_puts(w, "_len];");
            continue;
        }
        ember_writer_puts(w, s->field_types[k] == EMBER_FT_STR   ? " string "
                             : s->field_types[k] == EMBER_FT_F64 ? " double "
                                                                 : " int64_t ");
        tsdl_ident(w, s->field_names[k]);
        ember_writer_puts(w, ";");
    }
    ember_writer_puts(w, " };\n};\n\n");
}

static void write_metadata(struct ember_trace *t, struct ember_writer *w)
{
    write_trace_block(t, w);
    write_env(t, w);
    write_clock(t, w);
    ember_writer_puts(w, ""
                         "typealias integer { size = 64; align = 64; signed = false; "
                         "map = clock.ember.value; } := clock_t64;\n\n"
                         "stream {\n\tid = 0;\n"
                         "\tpacket.context := struct {\n"
                         "\t\tclock_t64 timestamp_begin;\n\t\tclock_t64 timestamp_end;\n"
                         "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n"
                         "\t\tuint64_t packet_seq_num;\n\t\tuint64_t events_discarded;\n"
                         "\t\tuint64_t event_seq_begin;\n\t\tuint32_t tid;\n"
                         "\t\tuint32_t reserved;\n\t};\n"
                         "\tevent.header := struct { uint32_t id; uint32_t size; clock_t64 "
                         "timestamp; } align(64);\n};\n\n");
    for (unsigned i = 0; i < ember_trace_site_count(t); i++)
        write_event_decl(w, ember_trace_site_at(t, i));
}

struct streams {
    const char *dir;
    int fd;
    unsigned ring;
    struct ember_diag *d;
};

static int write_packet(void *ctx, unsigned ring, const void *packet, size_t size)
{
    struct streams *s = ctx;
    if (s->fd < 0 || s->ring != ring) {
        if (s->fd >= 0)
            close(s->fd);
        char path[4200];
        snprintf(path, sizeof(path), "%s/stream_%u", s->dir, ring);
        s->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        s->ring = ring;
        if (s->fd < 0)
            return ember_diag_set(s->d, -EIO, path, 0, "cannot create: %s", strerror(errno));
    }
    return fd_write(&s->fd, packet, size);
}

/* ---- packets written here: for traces that have none ---------------------- */

enum { PACKET = 64 * 1024 };

struct encoder {
    struct streams *out;
    struct ember_trace *t;
    char buf[PACKET];
    size_t used;     /* 0: no packet open */
    size_t end;      /* where its last event's fields end (no padding after) */
    unsigned ring;   /* the open packet's */
    uint64_t seq;    /* packets written in the ring */
    uint64_t events; /* events of the ring before the open packet... */
    uint64_t in_packet;
    uint64_t first, last; /* the open packet's times */
    int err;
};

static void flush_packet(struct encoder *en)
{
    if (!en->used || en->err)
        return;
    struct ember_packet_header ph = {
        .magic = EMBER_CTF_MAGIC,
        .stream_id = 0,
        .ctx = {.timestamp_begin = en->first,
                .timestamp_end = en->last,
                .content_size = (uint64_t)en->end * 8,
                .packet_size = PACKET * 8,
                .packet_seq_num = en->seq++,
                .event_seq_begin = en->events,
                .tid = ember_trace_ring(en->t, en->ring)->tid},
    };
    memcpy(ph.uuid, ember_trace_uuid(en->t), sizeof(ph.uuid));
    memcpy(en->buf, &ph, sizeof(ph));
    memset(en->buf + en->used, 0, PACKET - en->used);
    en->err = write_packet(en->out, en->ring, en->buf, PACKET);
    en->events += en->in_packet;
    en->used = 0;
    en->in_packet = 0;
}

/* Bytes an event takes: header, then each field 8-byte aligned. */
static size_t event_size(const struct ember_trace_event *e)
{
    size_t n = EMBER_EVENT_HEADER;
    for (unsigned i = 0; i < e->site->nfields; i++) {
        int ty = e->site->field_types[i];
        if (ty == EMBER_FT_STR)
            n += (strlen(e->v[i].s) + 1 + 7) / 8 * 8;
        else if (ty == EMBER_FT_BYTES)
            n += 8 + (e->v[i].len + 7) / 8 * 8;
        else
            n += 8;
    }
    return n;
}

static int encode_event(void *ctx, const struct ember_trace_event *e)
{
    struct encoder *en = ctx;
    size_t size = event_size(e);
    if (size > PACKET - EMBER_PACKET_HEADER)
        return -E2BIG;
    if (en->used && (en->ring != e->ring || en->used + size > PACKET))
        flush_packet(en);
    if (en->ring != e->ring)
        en->ring = e->ring, en->seq = en->events = 0;
    if (!en->used) {
        en->used = EMBER_PACKET_HEADER;
        en->first = e->ticks;
    }
    char *p = en->buf + en->used;
    en->end = en->used + size;
    memset(p, 0, size);
    uint32_t hdr[2] = {e->site->id, (uint32_t)size};
    memcpy(p, hdr, 8);
    memcpy(p + 8, &e->ticks, 8);
    p += EMBER_EVENT_HEADER;
    for (unsigned i = 0; i < e->site->nfields; i++) {
        int ty = e->site->field_types[i];
        if (ty == EMBER_FT_STR) {
            size_t n = strlen(e->v[i].s) + 1;
            memcpy(p, e->v[i].s, n);
            if (i + 1 == e->site->nfields) /* CTF readers: the content ends there */
                en->end = (size_t)(p - en->buf) + n;
            p += (n + 7) / 8 * 8;
        } else if (ty == EMBER_FT_BYTES) {
            uint64_t n = e->v[i].len;
            memcpy(p, &n, 8);
            memcpy(p + 8, e->v[i].s, (size_t)n);
            if (i + 1 == e->site->nfields)
                en->end = (size_t)(p - en->buf) + 8 + (size_t)n;
            p += 8 + (n + 7) / 8 * 8;
        } else {
            memcpy(p, ty == EMBER_FT_F64 ? (const void *)&e->v[i].f : (const void *)&e->v[i].i, 8);
            p += 8;
        }
    }
    en->used += size;
    en->in_packet++;
    en->last = e->ticks;
    return en->err;
}

static int encode_streams(struct ember_trace *t, struct streams *s)
{
    struct encoder *en = calloc(1, sizeof(*en));
    if (!en)
        return -ENOMEM;
    en->out = s;
    en->t = t;
    struct ember_trace_visitor v = {encode_event, NULL, en, true};
    int err = ember_trace_visit(t, &v);
    if (!err)
        flush_packet(en);
    err = err ? err : en->err;
    free(en);
    return err;
}

static int metadata(struct ember_trace *t, const char *dir, struct ember_diag *d)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/metadata", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return ember_diag_set(d, -EIO, path, 0, "cannot create: %s", strerror(errno));
    struct ember_sink sink = {fd_write, &fd};
    struct ember_writer *w = malloc(sizeof(*w));
    int err = w ? 0 : -ENOMEM;
    if (!err) {
        ember_writer_init(w, &sink);
        write_metadata(t, w);
        err = ember_writer_flush(w);
    }
    free(w);
    close(fd);
    return err;
}

int ember_trace_export_ctf(struct ember_trace *t, const char *dir, struct ember_diag *d)
{
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return ember_diag_set(d, -EIO, dir, 0, "cannot create the directory: %s", strerror(errno));
    struct streams s = {dir, -1, 0, d};
    bool native = ember_trace_has_packets(t);
    int err = native ? metadata(t, dir, d) : 0;
    if (!err)
        err = native ? ember_trace_each_packet(t, write_packet, &s) : encode_streams(t, &s);
    if (s.fd >= 0)
        close(s.fd);
    if (!err && !native)
        err = metadata(t, dir, d); /* now that every site has been met */
    return err;
}
