/*
 * trace_time.h - the duration of a Trace Event JSON complete ("X") event,
 * for the viewers that compute its end as ts + dur in doubles (speedscope,
 * Perfetto's UI): with the exact dur, that sum can round past the event's
 * exact end, or past its parent's computed end, and then a child outlives
 * its parent and the viewer unbalances the stack.
 *
 * Invariant: with the dur ember_trace_viewer_dur returns, a span's end as
 * viewers compute it is at most its exact end (as a double) and at most
 * the enclosing span's computed end, so that children stay inside their
 * parents and siblings in order; where the exact dur does that, it is
 * the exact dur.
 *
 * A second rule is speedscope's own: where a span ends at the very time
 * another span of its track begins, it orders the two by name, and a begin
 * whose name is that of an end at the same time goes first. When the end
 * is not the innermost span's, the wrong span is closed and the rest of
 * the track unbalances ("Tried to end"). So a span that ends where a span
 * of its name begins is ended a hair before it, as viewers compute times
 * (ember_trace_starts says where spans begin).
 */
#ifndef EMBER_WIRE_TRACE_TIME_H
#define EMBER_WIRE_TRACE_TIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The times and names at which one track's spans begin: times as the
 * doubles of the ts written (two times a nanosecond apart can be one
 * double, uptimes being large), names as written, suffix and all, hashed
 * (a collision only ends a span a hair early). Filled, sealed, then asked;
 * emptied (n = 0) for the next track. */
struct ember_trace_starts {
    struct ember_trace_start {
        double at;
        uint64_t name;
    } * v;
    size_t n, cap;
};

uint64_t ember_trace_name_hash(const char *name, size_t len, const char *suffix);
/* A span begins at ts (as written) with the name hashed as name. */
int ember_trace_starts_add(struct ember_trace_starts *s, const char *ts, uint64_t name);
void ember_trace_starts_seal(struct ember_trace_starts *s);
void ember_trace_starts_release(struct ember_trace_starts *s);

/* A span as a viewer computes it: its start (ts less the track's first
 * ts), dur and end, in doubles. */
struct ember_trace_viewed {
    double at, dur, end;
};

/* The dur to write for a span named name that starts at at (as viewed)
 * and lasts dur exactly, and whose exact end is the double end (the ts of
 * a span beginning then; viewers subtract t0): at most that end, at most
 * up's end (the span around it; NULL at a root), before a begin of its
 * name then, and no longer than up's dur where both start together
 * (speedscope orders equal starts by the longer dur). */
double ember_trace_viewer_dur(const struct ember_trace_starts *s,
                              const struct ember_trace_viewed *up, uint64_t name, double at,
                              double dur, double end, double t0);

#endif
