/* trace_bench's loops with tracing compiled out (-DEMBER_TRACE_DISABLE):
 * what remains of each event is nothing. */
#include <ember/trace.h>

void ember_bench_off(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++) {
        EMBER_SPAN_BEGIN("off");
        EMBER_SPAN_END("off");
        EMBER_COUNTER("off", (long)i);
        __asm__ volatile("" ::: "memory");
    }
}
