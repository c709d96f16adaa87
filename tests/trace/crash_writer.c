/*
 * crash_writer.c - for the crash test: 4 threads write numbered events
 * ("n", t = thread, i = 0, 1, 2, ...), each inside a span "work", as fast
 * as they can, and after each one store i in a shared progress file, until
 * they are killed. Whatever the moment of the kill, every event up to each
 * thread's progress must be in the trace (unless overwritten, and then
 * counted as lost), and a thread killed inside "work" leaves it open.
 *
 * usage: crash_writer PROGRESS_FILE
 *
 * The progress file appears (by a rename) only once it is filled with -1,
 * so that a test that sees it can read it whenever it kills the writer.
 */
#include <ember/trace.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

enum { THREADS = 4 };

static int64_t *progress;

static void *writer(void *arg)
{
    int64_t t = (int64_t)(intptr_t)arg;
    char name[8];
    snprintf(name, sizeof(name), "w%d", (int)t);
    ember_thread_name(name);
    for (int64_t i = 0;; i++) {
        EMBER_SPAN_BEGIN("work");
        EMBER_INSTANT("n", EMBER_I64("t", t), EMBER_I64("i", i));
        __atomic_store_n(&progress[t], i, __ATOMIC_RELEASE);
        EMBER_SPAN_END("work");
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, THREADS * 8) < 0)
        return 1;
    progress = mmap(NULL, THREADS * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (progress == MAP_FAILED)
        return 1;
    for (int t = 0; t < THREADS; t++)
        progress[t] = -1;
    if (rename(tmp, argv[1]) < 0)
        return 1;
    pthread_t th[THREADS];
    for (intptr_t t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, writer, (void *)t);
    pause();
    return 0;
}
