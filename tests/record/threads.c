/*
 * threads.c - three threads on the CPU at once, for the timeline tests: the
 * main thread and two threads it names "alpha" and "beta" each spin for the
 * same CPU time (default 200 ms), started together, so that their samples
 * interleave in time whatever the number of CPUs, and each has its samples
 * however loaded the machine is (a spin for a wall time once left the main
 * thread of a loaded CI run without a sample).
 *
 * usage: threads [MILLISECONDS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static long ms = 200;

/* The calling thread's CPU time. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(void)
{
    for (double end = now() + ms / 1e3; now() < end;)
        for (unsigned long i = 0; i < 10000; i++)
            sink += i * i;
}

static void *worker(void *name)
{
    pthread_setname_np(pthread_self(), name);
    spin();
    return NULL;
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"alpha", "beta"};
    pthread_t t[2];
    if (argc > 1)
        ms = atol(argv[1]);
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)names[i]) != 0)
            return 1;
    spin();
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return 0;
}
