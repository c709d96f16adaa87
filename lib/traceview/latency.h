/*
 * latency.h - what the latency views share (library-internal): `ember
 * trace latency` of spans and of OCaml GC pauses prints durations as
 * HdrHistogram's "classic" percentile table, every value exact (nearest
 * rank, base/percentile.h), then a bar chart per power of two.
 */
#ifndef EMBER_TRACEVIEW_LATENCY_H
#define EMBER_TRACEVIEW_LATENCY_H

#include "base/writer.h"
#include "base/percentile.h"

/* Sorted durations (ns), n > 0, shown in microseconds. */
void ember_latency_table(struct ember_writer *w, const struct ember_values *s);

/* A duration (ns) in 11 columns, in a unit that keeps it readable. */
void ember_put_duration(struct ember_writer *w, double ns);

/* The same durations' counts per power-of-two range, as bars. */
void ember_latency_chart(struct ember_writer *w, const struct ember_values *s);

#endif
