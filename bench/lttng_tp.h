/*
 * lttng_tp.h - an LTTng-UST tracepoint with two integer fields, the
 * comparison point of trace_bench (only built when liblttng-ust is there).
 */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER ember_bench

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(EMBER_BENCH_LTTNG_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define EMBER_BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>

TRACEPOINT_EVENT(ember_bench, event, TP_ARGS(unsigned long, a, unsigned long, b),
                 TP_FIELDS(ctf_integer(unsigned long, a, a) ctf_integer(unsigned long, b, b)))

#endif

#include <lttng/tracepoint-event.h>
