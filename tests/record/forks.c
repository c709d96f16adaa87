/*
 * forks.c - threads and a child for ember record: the main thread starts
 * two threads and forks a child (which starts a thread of its own); every
 * one of them spins on the CPU for SECONDS, so each has samples. Prints
 * nothing; exits 0 when all ended.
 *
 * usage: forks [SECONDS]
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds = 0.3;
static volatile unsigned long sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(void)
{
    double end = now() + seconds;
    while (now() < end)
        for (int i = 0; i < 10000; i++)
            sink += (unsigned long)i;
}

static void *thread_main(void *arg)
{
    (void)arg;
    spin();
    return NULL;
}

static void with_threads(int n)
{
    pthread_t t[2];
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, thread_main, NULL);
    spin();
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        seconds = atof(argv[1]);
    pid_t child = fork();
    if (child == 0) {
        with_threads(1);
        _exit(0);
    }
    with_threads(2);
    int status;
    waitpid(child, &status, 0);
    return 0;
}
