/*
 * measure.c - runs a command and prints what a benchmark needs to know:
 * wall time, throughput for a given input size, peak resident memory, and
 * the CPU time used (user and system: on a shared machine, the part of the
 * time that other programs' load does not stretch).
 *
 * usage: measure LABEL INPUT_BYTES COMMAND [ARGS...]   (stdout goes to /dev/null)
 * prints: LABEL  <seconds> s  <MB/s> MB/s  <peak RSS> MB peak RSS  <seconds> s CPU
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: measure LABEL INPUT_BYTES COMMAND [ARGS...]\n");
        return 2;
    }
    double bytes = strtod(argv[2], NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, STDOUT_FILENO);
        execvp(argv[3], argv + 3);
        perror(argv[3]);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("wait4");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: the command failed (status %d)\n", argv[1], status);
        return 1;
    }
    double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    printf("%-44s %7.3f s %8.0f MB/s %8.1f MB peak RSS %7.3f s CPU\n", argv[1], s, bytes / 1e6 / s,
           ru.ru_maxrss / 1024.0, cpu);
    return 0;
}
