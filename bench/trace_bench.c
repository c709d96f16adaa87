/*
 * trace_bench.c - what an event costs, in ns, on this machine: ember's
 * events enabled, disabled at run time, and compiled out, next to the
 * physical floor (read the TSC, store 16 bytes in a thread-local ring) and,
 * when built with it, an LTTng-UST tracepoint. Each figure is the best of
 * several runs of ITER events on one thread.
 *
 * usage: trace_bench [ITER]   (EMBER_BENCH_LTTNG_SESSION=1: an LTTng session
 * records the tracepoint; see bench/run_trace.sh)
 */
#include <ember/trace.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

void ember_bench_off(unsigned long n);
#ifdef EMBER_BENCH_LTTNG
void ember_bench_lttng(unsigned long n);
#endif

enum { RUNS = 7 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static __thread uint64_t floor_ring[1 << 16] __attribute__((aligned(64)));

/* The floor: what any tracer must at least do per event. */
__attribute__((noinline)) static void bench_floor(unsigned long n)
{
    unsigned pos = 0;
    for (unsigned long i = 0; i < n; i++) {
        uint64_t t = __rdtsc();
        floor_ring[pos] = i;
        floor_ring[pos + 1] = t;
        pos = (pos + 2) & ((1 << 16) - 1);
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline)) static void bench_span(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++) {
        EMBER_SPAN_BEGIN("span");
        EMBER_SPAN_END("span");
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline)) static void bench_instant(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++) {
        EMBER_INSTANT("instant");
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline)) static void bench_counter(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++) {
        EMBER_COUNTER("counter", (long)i);
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline)) static void bench_fields(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++) {
        EMBER_INSTANT("fields", EMBER_I64("i", (long)i), EMBER_F64("x", 1.5));
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline)) static void bench_loop(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        __asm__ volatile("" ::: "memory");
}

/* ns per event: best of RUNS runs of n iterations making per events each. */
static double measure(void (*fn)(unsigned long), unsigned long n, int per)
{
    double best = 1e30;
    for (int r = 0; r < RUNS; r++) {
        double t0 = now();
        fn(n);
        double t = now() - t0;
        if (t < best)
            best = t;
    }
    return best * 1e9 / ((double)n * per);
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000000;
    char path[64];
    snprintf(path, sizeof(path), "/tmp/ember-bench.%d.trace", (int)getpid());
    printf("%-52s %8s\n", "ns per event (best of 7)", "ns");
    printf("%-52s %8.2f\n", "empty loop", measure(bench_loop, n, 1));
    double floor = measure(bench_floor, n, 1);
    printf("%-52s %8.2f\n", "floor: rdtsc + 16-byte store (thread-local ring)", floor);
    printf("%-52s %8.2f\n", "compiled out (-DEMBER_TRACE_DISABLE), 3 events",
           measure(ember_bench_off, n, 3));
    double disabled = measure(bench_span, n, 2);
    printf("%-52s %8.2f\n", "disabled at run time: span begin+end, per event", disabled);
    printf("%-52s %8.2f\n", "disabled at run time: counter", measure(bench_counter, n, 1));
    struct ember_trace_opts o = {.ring_bytes = 16 << 20};
    if (ember_trace_start(path, &o) < 0) {
        fprintf(stderr, "cannot trace to %s\n", path);
        return 1;
    }
    bench_span(1000); /* claim the ring and register the sites first */
    bench_instant(1000);
    bench_counter(1000);
    bench_fields(1000);
    double span = measure(bench_span, n, 2), instant = measure(bench_instant, n, 1);
    double counter = measure(bench_counter, n, 1), fields = measure(bench_fields, n / 4, 1);
    printf("%-52s %8.2f  (%.2fx the floor)\n", "enabled: span begin+end, per event", span,
           span / floor);
    printf("%-52s %8.2f  (%.2fx)\n", "enabled: instant", instant, instant / floor);
    printf("%-52s %8.2f  (%.2fx)\n", "enabled: counter with its value", counter, counter / floor);
    printf("%-52s %8.2f  (%.2fx)\n", "enabled: instant with an i64 and an f64 field", fields,
           fields / floor);
#ifdef EMBER_BENCH_LTTNG
    double lt = measure(ember_bench_lttng, n / 4, 1);
    if (getenv("EMBER_BENCH_LTTNG_SESSION"))
        printf("%-52s %8.2f  (ember's span events are %.1fx faster)\n",
               "LTTng-UST tracepoint, session recording", lt, lt / span);
    else /* no session: LTTng's tracepoint is disabled, compare with ember's */
        printf("%-52s %8.2f  (ember disabled: %.2f)\n", "LTTng-UST tracepoint, no session", lt,
               disabled);
#else
    printf("%-52s %8s\n", "LTTng-UST tracepoint", "(not built: no liblttng-ust-dev)");
#endif
    ember_trace_stop();
    unlink(ember_trace_path()[0] ? ember_trace_path() : path);
    unlink(path);
    return 0;
}
