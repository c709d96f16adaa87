/*
 * stress_writer.c - for the concurrency stress test: THREADS threads each
 * write EVENTS events ("e", t, i, and a check value derived from both),
 * as fast as they can, while a live reader follows the file.
 *
 * usage: stress_writer THREADS EVENTS
 */
#include <ember/trace.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

static long events;

static void *writer(void *arg)
{
    int64_t t = (int64_t)(intptr_t)arg;
    for (int64_t i = 0; i < events; i++)
        EMBER_INSTANT(
            "e", EMBER_I64("t", t), EMBER_I64("i", i),
            EMBER_I64("check", (int64_t)((uint64_t)t * 0x9E3779B97F4A7C15ULL ^ (uint64_t)i)));
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 16;
    events = argc > 2 ? atol(argv[2]) : 1000000;
    pthread_t *th = calloc((size_t)threads, sizeof(*th));
    for (intptr_t t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, writer, (void *)t);
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    free(th);
    return 0;
}
