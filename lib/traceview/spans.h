/*
 * spans.h - pairing span begins and ends per thread (library-internal),
 * the one rule every consumer of spans follows (stats, latency, Chrome,
 * Perfetto):
 *
 * - a begin pushes; an end pops the innermost open span of its name, and
 *   spans still open inside it are closed there too ("unclosed": their own
 *   end is missing); an end with no open span of its name is counted and
 *   ignored (its begin is not in the trace);
 * - a span whose end never comes is "open": the writer was killed, or is
 *   still inside it. It is not a span of zero length: statistics leave it
 *   out (and say how many), exports draw it to the last timestamp of the
 *   whole trace (the writer was alive and inside the span at least until
 *   then; a thread's own last event would shrink a span blocked in a
 *   deadlock to nothing) and mark it.
 * Durations are never negative.
 */
#ifndef EMBER_TRACEVIEW_SPANS_H
#define EMBER_TRACEVIEW_SPANS_H

#include "ember/tracefile.h"

#include <stdbool.h>
#include <stddef.h>

/* What exports append to the name of an open span: a mark that speedscope
 * (frame names) and Perfetto (slice names, on the track) both show, and
 * that keeps it apart from the complete spans of its name when they sum
 * durations by name. */
#define EMBER_OPEN_SPAN_MARK " (open)"

struct ember_span {
    const char *name;
    unsigned ring;
    int64_t begin_ns, end_ns;
    uint64_t begin_seq; /* the begin's number in its ring */
    unsigned depth;
    bool unclosed; /* closed by an enclosing span's end, not by its own */
    bool open;     /* never ended: end_ns is the trace's last timestamp */
};

typedef int (*ember_span_fn)(void *ctx, const struct ember_span *s);

struct ember_span_stats {
    uint64_t unmatched_ends;
    uint64_t unclosed;
    uint64_t open;
    int64_t last_ns; /* the trace's last timestamp */
};

/* Every span of the trace to fn: closed ones as their end is read, open
 * ones after the last event. */
int ember_trace_each_span(struct ember_trace *t, ember_span_fn fn, void *ctx,
                          struct ember_span_stats *st);

/* ---- for exporters that pair as they write ---- */

struct ember_open_span {
    const char *name;
    int64_t begin_ns;
    uint64_t seq;
    bool open; /* still open at the end of the trace (a first pass says) */
};

/* A thread's open spans, innermost last. */
struct ember_span_stack {
    struct ember_open_span *s;
    size_t n, cap;
};

int ember_span_stack_push(struct ember_span_stack *st, const struct ember_trace_event *e,
                          bool open);
/* Where an end named name closes: 1 + the index of the innermost open span
 * of that name, 0 if none (the end is to be ignored). */
size_t ember_span_stack_match(const struct ember_span_stack *st, const char *name);

/* The begins that stay open to the end of the trace, found by a first
 * pass, so that an exporter can mark a span where it begins. A second pass
 * reads a suffix of each ring's events of the first (a live writer only
 * overwrites the oldest packets), so the spans open in both are the same. */
struct ember_open_set {
    uint64_t **seqs; /* per ring, ascending */
    size_t *n, *cap, *next;
    unsigned nrings;
};

int ember_open_set_find(struct ember_trace *t, struct ember_open_set *set);
/* Whether the begin numbered seq of ring stays open; asked in ascending
 * seq order per ring. */
bool ember_open_set_has(struct ember_open_set *set, unsigned ring, uint64_t seq);
void ember_open_set_release(struct ember_open_set *set);

/* The name exports give the traced process: its program's file name, or
 * "ocaml" (an OCaml file read after its program ended), or "pid N". */
const char *ember_export_process_name(const struct ember_trace *t, char *buf, size_t cap);

struct ember_writer;
/* The len bytes at s as a JSON string (invalid UTF-8 replaced), suffix
 * (never escaped) before its end quote (chrome.c). */
void ember_export_json_bytes(struct ember_writer *w, const char *s, size_t len, const char *suffix);

#endif
