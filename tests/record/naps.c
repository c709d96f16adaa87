/*
 * naps.c - a process that is off the CPU nearly all the time (issue 17):
 * it sleeps 0.7 s in nanosleep, again and again, until it is killed. Off-CPU
 * time is then all a recording of it has: no cpu-clock sample at all.
 */
#include <time.h>

__attribute__((noinline)) static void nap(void)
{
    struct timespec t = {0, 700000000};
    nanosleep(&t, NULL);
}

int main(void)
{
    for (;;)
        nap();
}
