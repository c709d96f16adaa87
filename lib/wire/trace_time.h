/*
 * trace_time.h - the duration of a Trace Event JSON complete ("X") event,
 * for the viewers that compute its end as ts + dur in doubles (speedscope,
 * Perfetto's UI): with the exact dur, that sum can round past the event's
 * exact end, or past its parent's computed end, and then a child outlives
 * its parent and the viewer unbalances the stack.
 *
 * Invariant: ts + the dur returned, in doubles, is at most limit; callers
 * pass the lesser of the exact end (as a double) and the enclosing event's
 * computed end, so that children stay inside their parents and siblings
 * in order.
 */
#ifndef EMBER_WIRE_TRACE_TIME_H
#define EMBER_WIRE_TRACE_TIME_H

/* The largest dur (>= 0) for which ts + dur, in doubles, is at most limit. */
double ember_trace_fitted_dur(double ts, double limit);

#endif
