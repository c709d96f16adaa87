/*
 * latency.h - what latency views share (library-internal): the bar chart
 * `ember trace latency` prints under HdrHistogram's percentile table.
 */
#ifndef EMBER_EXPORT_LATENCY_H
#define EMBER_EXPORT_LATENCY_H

#include "io/writer.h"
#include "util/hdr.h"

/* Counts per power-of-two range of durations (ns), as bars. */
void ember_latency_chart(struct ember_writer *w, const struct ember_hdr *h);

#endif
