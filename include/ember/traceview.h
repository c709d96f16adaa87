/*
 * ember/traceview.h - what `ember trace` shows of a trace: the events one
 * per line, per-span statistics and latency histograms, and exports to
 * Chrome trace JSON, Perfetto and CTF (for babeltrace2).
 */
#ifndef EMBER_TRACEVIEW_H
#define EMBER_TRACEVIEW_H

#include "ember/error.h"
#include "ember/formats.h"
#include "ember/tracefile.h"

#include <stdbool.h>

/* One line per event, in time order: seconds since the start (or raw
 * ticks), thread, kind, name, fields; names escaped as by
 * ember_trace_escape, string values quoted. */
EMBER_API int ember_trace_dump(struct ember_trace *t, const struct ember_sink *out, bool ticks);

/* An OCaml runtime_events file as OCaml's own consumer reads it (the text
 * of the corpus's *.expected.txt): -EINVAL for another format. */
EMBER_API int ember_trace_dump_ocaml(struct ember_trace *t, const struct ember_sink *out);

/* One event as dump prints it, with its thread's name, into buf (a line
 * ending in '\n', cut to cap). Returns the length. */
EMBER_API size_t ember_trace_event_line(const struct ember_trace_event *e, const char *thread,
                                        bool ticks, char *buf, size_t cap);

/* A name (of an event, field or thread) as the text tools print it, one
 * event per line whatever it holds: '\' as "\\", control bytes and DEL as
 * \xNN. Writes whole escapes into buf, cut to cap with its NUL; returns
 * the length of the whole text, as snprintf does. */
EMBER_API size_t ember_trace_escape(const char *name, char *buf, size_t cap);

/* Per span name: count, total, mean, min, percentiles, max. Spans still
 * open at the end of the trace are counted apart, not as spans. */
EMBER_API int ember_trace_stats(struct ember_trace *t, const struct ember_sink *out);

/* Durations of the spans named span (NULL: all): the percentile table in
 * HdrHistogram's classic format, every value exact, then a bar chart.
 * Percentiles, here and in stats and gc-stats, are by nearest rank: the
 * pth of n durations is the ceil(p/100 * n)-th smallest. */
EMBER_API int ember_trace_latency(struct ember_trace *t, const char *span,
                                  const struct ember_sink *out, struct ember_diag *d);

/* OCaml 5 programs: olly's gc-stats (wall time, domain time - the sum of
 * the domains' lifetimes, which olly calls CPU time - and GC time per
 * domain, GC pause percentiles, allocations, collections) as text or JSON
 * (olly's keys, version 3: cpu_time is the command's CPU time, null when
 * unknown, domain_time olly's cpu_time); a program that died without a
 * stop event, open pauses and lost words are said. */
struct ember_gc_options {
    int64_t max_rss_kb; /* the program's peak RSS when ember ran it; -1 unknown */
    int64_t cpu_ns;     /* its user + system CPU time likewise; -1 unknown */
    bool json;
};
EMBER_API int ember_trace_gc_stats(struct ember_trace *t, const struct ember_gc_options *o,
                                   const struct ember_sink *out, struct ember_diag *d);
/* The GC pauses of an OCaml 5 program as `latency` shows spans. */
EMBER_API int ember_trace_gc_latency(struct ember_trace *t, const struct ember_sink *out,
                                     struct ember_diag *d);

EMBER_API int ember_trace_export_chrome(struct ember_trace *t, const struct ember_sink *out);
EMBER_API int ember_trace_export_perfetto(struct ember_trace *t, const struct ember_sink *out);
/* A CTF 1.8 trace directory: metadata and one stream file per thread. */
EMBER_API int ember_trace_export_ctf(struct ember_trace *t, const char *dir, struct ember_diag *d);

#endif
