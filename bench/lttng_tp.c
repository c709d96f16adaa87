/* The LTTng-UST probe of trace_bench's comparison tracepoint. */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "lttng_tp.h"

void ember_bench_lttng(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++) {
        tracepoint(ember_bench, event, i, i);
        __asm__ volatile("" ::: "memory");
    }
}
