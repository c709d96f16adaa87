/*
 * ctf.c - a CTF 1.8 trace directory for babeltrace2 and Trace Compass:
 * the ring packets already are CTF packets, so this writes their metadata
 * (TSDL: one event class per call site, named "kind:name") and copies each
 * thread's valid packets, in sequence order, into a stream file.
 * Alignments in TSDL are in bits.
 */
#include "ember/trace.h"
#include "ember/traceview.h"
#include "io/writer.h"
#include "util/diag.h"

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

static void write_metadata(struct ember_trace *t, struct ember_writer *w)
{
    const uint8_t *u = ember_trace_uuid(t);
    char uuid[40];
    snprintf(uuid, sizeof(uuid),
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
             u[15]);
    uint64_t hz = ember_trace_ticks_per_sec(t);
    /* clock value v is at wall time base_real + (v - base_ticks) / hz, so
     * the origin (v = 0) is base_real - base_ticks / hz */
    long double origin = (long double)ember_trace_start_realtime(t) / 1e9L -
                         (long double)ember_trace_base_ticks(t) / (long double)hz;
    long long offset_s = (long long)origin;
    if ((long double)offset_s > origin)
        offset_s--;
    unsigned long long offset = (unsigned long long)((origin - (long double)offset_s) * hz);
    ember_writer_printf(w,
                        "/* CTF 1.8 */\n"
                        "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
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
    ember_writer_printf(w,
                        "env {\n\ttracer_name = \"ember\";\n\ttracer_major = 0;\n"
                        "\ttracer_minor = 1;\n\tvpid = %u;\n\tprocname = \"",
                        ember_trace_pid(t));
    const char *exe = ember_trace_exe(t), *slash = strrchr(exe, '/');
    tsdl_string(w, slash ? slash + 1 : exe);
    ember_writer_puts(w, "\";\n};\n\n");
    ember_writer_printf(w,
                        "clock {\n\tname = ember;\n\tdescription = \"%s\";\n\tfreq = %llu;\n"
                        "\toffset_s = %lld;\n\toffset = %llu;\n",
                        hz == 1000000000 ? "CLOCK_MONOTONIC" : "TSC", (unsigned long long)hz,
                        offset_s, offset);
    ember_writer_puts(w, "\tabsolute = true;\n};\n\n"
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
    for (unsigned i = 0; i < ember_trace_site_count(t); i++) {
        const struct ember_trace_site *s = ember_trace_site_at(t, i);
        ember_writer_printf(w, "event {\n\tname = \"%s:", kind_prefix(s->kind));
        tsdl_string(w, s->name);
        ember_writer_printf(w, "\";\n\tid = %u;\n\tstream_id = 0;\n\tfields := struct {", s->id);
        for (unsigned k = 0; k < s->nfields; k++) {
            ember_writer_puts(w, s->field_types[k] == EMBER_FT_STR   ? " string "
                                 : s->field_types[k] == EMBER_FT_F64 ? " double "
                                                                     : " int64_t ");
            tsdl_ident(w, s->field_names[k]);
            ember_writer_puts(w, ";");
        }
        ember_writer_puts(w, " };\n};\n\n");
    }
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

int ember_trace_export_ctf(struct ember_trace *t, const char *dir, struct ember_diag *d)
{
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return ember_diag_set(d, -EIO, dir, 0, "cannot create the directory: %s", strerror(errno));
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
    struct streams s = {dir, -1, 0, d};
    if (!err)
        err = ember_trace_each_packet(t, write_packet, &s);
    if (s.fd >= 0)
        close(s.fd);
    return err;
}
