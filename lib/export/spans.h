/*
 * spans.h - pairing span begins and ends per thread (library-internal).
 *
 * Begins push, an end pops the innermost open span of its name (spans
 * still open inside it are closed there too, flagged); an end with no open
 * span of its name is counted and ignored; spans open at the end of the
 * trace close at the thread's last event, flagged. Durations are never
 * negative.
 */
#ifndef EMBER_EXPORT_SPANS_H
#define EMBER_EXPORT_SPANS_H

#include "ember/tracefile.h"

#include <stdbool.h>

struct ember_span {
    const char *name;
    unsigned ring;
    int64_t begin_ns, end_ns;
    unsigned depth;
    bool unclosed; /* closed by the pairing, not by its own end event */
};

typedef int (*ember_span_fn)(void *ctx, const struct ember_span *s);

struct ember_span_stats {
    uint64_t unmatched_ends;
    uint64_t unclosed;
};

int ember_trace_each_span(struct ember_trace *t, ember_span_fn fn, void *ctx,
                          struct ember_span_stats *st);

#endif
