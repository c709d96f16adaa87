/*
 * A program to record with perf --call-graph dwarf for the perf.data
 * tests: nearly all its time in the vDSO (clock_gettime), whose CFI the
 * unwinder must read from a vDSO image to get back to its callers.
 *
 * usage: perfdata_vdso [CALLS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) static long spin(long n)
{
    struct timespec ts;
    long s = 0;
    for (long i = 0; i < n; i++) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s += ts.tv_nsec;
    }
    return s;
}

int main(int argc, char **argv)
{
    printf("%ld\n", spin(argc > 1 ? strtol(argv[1], NULL, 10) : 3000000));
    return 0;
}
