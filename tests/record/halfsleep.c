/*
 * halfsleep.c - the off-CPU known answer (issue 10): N rounds of spinning
 * about 5 ms of wall time, then sleeping in nanosleep as long as the spin
 * lasted, so that half of its wall time is spent blocked whatever else
 * runs on the machine (a spin preempted near its end lasts longer: the
 * sleep after it too). It measures what it did and says it on stderr:
 * "wall NS slept NS" (slept: the time inside nanosleep calls, wake-up
 * latency included).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

__attribute__((noinline)) static void spin(uint64_t ns)
{
    volatile unsigned x = 0;
    for (uint64_t end = now() + ns; now() < end;)
        x++;
}

__attribute__((noinline)) static void nap(uint64_t ns)
{
    struct timespec t = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    uint64_t start = now(), slept = 0;
    for (int i = 0; i < rounds; i++) {
        uint64_t before = now();
        spin(5000000);
        uint64_t spun = now() - before;
        before = now();
        nap(spun);
        slept += now() - before;
    }
    fprintf(stderr, "wall %llu slept %llu\n", (unsigned long long)(now() - start),
            (unsigned long long)slept);
    return 0;
}
