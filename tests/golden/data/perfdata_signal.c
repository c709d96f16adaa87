/*
 * A program to record with perf --call-graph dwarf for the unwinder's
 * tests: most of its time is spent in a SIGPROF handler, so that samples
 * unwind through glibc's signal trampoline (__restore_rt: a signal frame,
 * its registers restored by DWARF expressions, which only libdwfl
 * evaluates) back to main's loop.
 *
 * usage: perfdata_signal [MILLISECONDS of CPU]
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void in_handler(void)
{
    for (unsigned long i = 0; i < 2000000; i++)
        sink += i ^ (i >> 5);
}

static void on_prof(int sig)
{
    (void)sig;
    in_handler();
}

/* Spins until the process has used ms milliseconds of CPU. */
__attribute__((noinline)) static void main_loop(unsigned long ms)
{
    while ((unsigned long)clock() < ms * (CLOCKS_PER_SEC / 1000))
        for (unsigned long i = 0; i < 100000; i++)
            sink += i;
}

int main(int argc, char **argv)
{
    unsigned long ms = argc > 1 ? strtoul(argv[1], NULL, 10) : 300;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_prof;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval every = {{0, 1000}, {0, 1000}}; /* a millisecond of CPU */
    setitimer(ITIMER_PROF, &every, NULL);
    main_loop(ms);
    return 0;
}
