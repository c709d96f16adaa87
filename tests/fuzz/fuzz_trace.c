/*
 * fuzz_trace.c - libFuzzer target for the trace readers: the bytes become
 * a file (ring file or packet log) that is opened, dumped, summarised,
 * exported, and followed as a live trace would be. The reader treats the
 * file as untrusted: any crash, leak, undefined behaviour or hang is a bug.
 *
 * OCaml runtime_events files end in a 1 MiB table of user-event names, and
 * their rings are mostly zeros: OCaml writes them sparse. Inputs that start
 * with OCaml's header are read as given (mostly cut short) and again
 * zero-extended to the size the header lays out (up to 64 MiB, sparse), so
 * that small inputs (trace_compact's seeds) reach the ring reader.
 */
#include "fuzz_common.h"
#include "ember/tracefile.h"
#include "ember/traceview.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int count_event(void *ctx, const struct ember_trace_event *e)
{
    (void)e;
    ++*(size_t *)ctx;
    return 0;
}

static int discard_packet(void *ctx, unsigned ring, const void *packet, size_t size)
{
    (void)ctx;
    (void)ring;
    (void)packet;
    (void)size;
    return 0;
}

static void read_whole(const char *path)
{
    struct ember_trace *t;
    struct ember_diag d;
    if (ember_trace_open(&t, path, &d) < 0)
        return;
    struct ember_sink sink = {fuzz_discard, NULL};
    ember_trace_dump(t, &sink, false);
    ember_trace_stats(t, &sink);
    ember_trace_latency(t, NULL, &sink, &d);
    if (ember_trace_site_count(t) > 0)
        ember_trace_latency(t, ember_trace_site_at(t, 0)->name, &sink, &d);
    ember_trace_export_chrome(t, &sink);
    ember_trace_export_perfetto(t, &sink);
    ember_trace_each_packet(t, discard_packet, NULL);
    ember_trace_dump_ocaml(t, &sink);
    struct ember_gc_options o = {.max_rss_kb = -1, .cpu_ns = -1};
    ember_trace_gc_stats(t, &o, &sink, &d);
    ember_trace_gc_latency(t, &sink, &d);
    ember_trace_close(t);
}

static void follow(const char *path)
{
    struct ember_trace *f;
    struct ember_diag d;
    if (ember_trace_follow(&f, path, 0, &d) < 0)
        return;
    size_t n = 0;
    for (int i = 0; i < 2; i++)
        if (ember_trace_poll(f, count_event, &n, i == 1) < 0)
            break;
    ember_trace_close(f);
}

/* The size an OCaml header lays the file out to, or 0 (not OCaml's, or
 * past 64 MiB). */
static uint64_t ocaml_layout_end(const uint8_t *data, size_t size)
{
    uint64_t w[8];
    if (size < sizeof(w))
        return 0;
    memcpy(w, data, sizeof(w));
    uint64_t end = w[7] + 8192 * 128;
    return w[0] == 1 && w[5] == 64 && w[7] < end && end > size && end <= (64u << 20) ? end : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    if (size && write(fd, data, size) != (ssize_t)size)
        abort();
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    read_whole(path);
    follow(path);
    uint64_t end = ocaml_layout_end(data, size);
    if (end) {
        if (ftruncate(fd, (off_t)end) < 0)
            abort();
        read_whole(path);
        follow(path);
    }
    close(fd);
    return 0;
}
