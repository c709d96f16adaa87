/*
 * A program to record with perf for the perf.data tests: three threads and
 * a forked child spinning in named functions at several depths (a leaf
 * shared by three callers, a recursion), the child exec'ing a shell when
 * asked ("exec"), so that threads, processes and exec'd binaries all show.
 * Before it execs, the child names itself "gorp" (prctl): a command of the
 * same length for the same thread, which a reader keying a thread's
 * samples by length alone would miss.
 *
 * usage: perfdata_prog [exec] [SCALE]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;
static unsigned long scale = 1;

__attribute__((noinline)) static void leaf(unsigned long n)
{
    for (unsigned long i = 0; i < n * scale; i++)
        sink += i ^ (i >> 3);
}

__attribute__((noinline)) static void recurse(int depth, unsigned long n)
{
    if (depth == 0) {
        leaf(n);
        return;
    }
    recurse(depth - 1, n);
    sink++;
}

__attribute__((noinline)) static void sixty(void)
{
    leaf(600000);
}

__attribute__((noinline)) static void thirty(void)
{
    leaf(300000);
}

__attribute__((noinline)) static void ten(void)
{
    recurse(12, 100000);
}

__attribute__((noinline)) static void *worker(void *arg)
{
    for (int i = 0; i < 60; i++) {
        sixty();
        thirty();
        ten();
    }
    return arg;
}

int main(int argc, char **argv)
{
    int exec_child = argc > 1 && strcmp(argv[1], "exec") == 0;
    if (argc > 1 + exec_child)
        scale = strtoul(argv[1 + exec_child], NULL, 10);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    pid_t child = fork();
    if (child == 0) {
        worker(NULL);
        if (exec_child) {
            prctl(PR_SET_NAME, "gorp");
            for (int i = 0; i < 20; i++)
                sixty();
            execlp("sh", "sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
                   (char *)NULL);
        }
        _exit(0);
    }
    worker(NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    waitpid(child, NULL, 0);
    printf("%lu\n", sink);
    return 0;
}
