/*
 * memtrace_decode.h - a streaming decoder of memtrace's .ctf allocation
 * traces (format versions 1, 2 and 3; library-internal), handing events to
 * a table of callbacks as the perf.data reader does (perf/perf_reader.h):
 * building a profile is one client (memtrace.c), the reference dump of the
 * tests (tests/golden/memtrace_dump.c) another.
 *
 * The format is memtrace's (src/memtrace.tsdl, src/trace.ml; notes with line
 * numbers in the shared corpus's memtrace/README.md): packets back to back,
 * the first holding the trace-info event; locations are defined by their own
 * events before any backtrace uses them.
 * Invariants: events come in trace order, each only while its callback runs
 * (pointers are the decoder's); a callback left NULL ignores its events; a
 * negative return stops the decoding with that error (its diag the
 * callback's). Memory is bounded by one packet, the backtrace caches and the
 * table of location codes: it never grows with the number of events.
 */
#ifndef EMBER_READ_MEMTRACE_DECODE_H
#define EMBER_READ_MEMTRACE_DECODE_H

#include "ember/base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MT_MAGIC 0xc1fc1fc1u

/* The packet header's size before v3 (v3 adds a u16 domain after pid). */
enum { MT_HEADER_V2 = 66, MT_HEADER_V3 = 68 };

enum mt_source { MT_MINOR = 0, MT_MAJOR = 1, MT_EXTERNAL = 2 };

/* The trace-info event: what the trace says of itself. */
struct mt_info {
    unsigned version; /* the first packet's format version */
    double sample_rate;
    unsigned word_size; /* bits */
    const char *executable_name, *host_name, *runtime_params;
    const char *context; /* "" when none (v1 has none) */
    uint64_t pid;
    uint64_t start_time_us; /* µs since the epoch */
};

/* One OCaml location; a code carries a list of them, outermost (the
 * function the others are inlined into) first. */
struct mt_location {
    const char *file, *defname;
    uint32_t line, start_char, end_char;
};

struct mt_alloc {
    uint64_t dt_us;  /* µs since start_time */
    uint64_t obj_id; /* the k-th allocation of the trace has id k */
    uint64_t length; /* words, the header excluded */
    uint64_t nsamples;
    uint64_t common_prefix; /* outermost frames shared with the previous backtrace */
    enum mt_source source;
    unsigned domain;
    const uint64_t *backtrace; /* location codes, outermost (main) first */
    size_t backtrace_len;
    /* its first codes that are the domain's previous allocation's, as
     * decoded (at least these: a client comparing more is free to) */
    size_t shared;
};

/* The callbacks, each optional. */
struct mt_tool {
    int (*info)(void *ctx, const struct mt_info *info);
    /* A code's first definition (a code defined again must say the same). */
    int (*location)(void *ctx, uint64_t code, const struct mt_location *locs, size_t n);
    int (*alloc)(void *ctx, const struct mt_alloc *a);
    int (*promote)(void *ctx, uint64_t dt_us, uint64_t obj_id);
    int (*collect)(void *ctx, uint64_t dt_us, uint64_t obj_id);
    /* A packet skipped as memtrace's reader skips it (written by another
     * process after a fork, out of order) or cut by the end of the input
     * (the last one; cut true), d saying which and why; NULL: each is an
     * error. */
    int (*skipped)(void *ctx, const struct ember_diag *d, bool cut);
    /* Now and then (every few thousand events). */
    void (*progress)(void *ctx);
};

struct mt_stats {
    uint64_t packets; /* packet headers read, the skipped ones included */
    uint64_t skipped; /* packets skipped or cut */
    uint64_t events;  /* alloc, promote and collect events */
    uint64_t last_dt_us;
};

/* The probe's test: 1 when the first bytes are a memtrace trace's first
 * packet (magic, version 1..3, a trace-info event at the packet's start
 * time), -1 when they could be one cut short before its first event, 0
 * when they are not. */
int mt_probe(const void *data, size_t len);

/* Decodes the whole of in: 0, a callback's error, or the input's (set in d,
 * naming the packet, its byte offset and what was expected). */
int mt_decode(struct ember_input *in, const struct mt_tool *tool, void *ctx, struct mt_stats *st,
              struct ember_diag *d);

#endif
