/*
 * traced.c - a small multi-threaded program traced with <ember/trace.h>:
 * a producer puts requests on a queue, workers take them and handle them
 * in three steps (parse, compute, reply), one step sometimes slow. Run it
 * with EMBER_TRACE=traced.trace, or under `ember record`, then look:
 *
 *     ember trace stats traced.trace
 *     ember trace latency traced.trace --span handle
 *     ember trace export --format chrome traced.trace -o traced.json   # speedscope, Perfetto UI
 *
 * usage: traced [REQUESTS] [WORKERS]
 */
#include <ember/trace.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { QUEUE = 64 };

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int items[QUEUE];
    int head, tail, count, done;
} q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0, 0, 0};

static volatile uint64_t sink;

/* Work proportional to n, measurable in a trace. */
static void burn(unsigned n)
{
    uint64_t h = n;
    for (unsigned i = 0; i < n * 200; i++)
        h = h * 6364136223846793005ULL + 1442695040888963407ULL;
    sink += h;
}

static void handle(int request)
{
    EMBER_SPAN("handle");
    {
        EMBER_SPAN("parse");
        burn(5 + request % 7);
    }
    {
        EMBER_SPAN("compute");
        /* one request in 50 takes the slow path */
        burn(request % 50 == 0 ? 400 : 20 + request % 13);
        if (request % 50 == 0)
            EMBER_INSTANT("slow path", EMBER_I64("request", request),
                          EMBER_STR("why", "cache miss"));
    }
    {
        EMBER_SPAN("reply");
        burn(3);
    }
}

static void *worker(void *arg)
{
    char name[32];
    snprintf(name, sizeof(name), "worker-%ld", (long)(intptr_t)arg);
    ember_thread_name(name);
    for (;;) {
        pthread_mutex_lock(&q.lock);
        while (q.count == 0 && !q.done)
            pthread_cond_wait(&q.cond, &q.lock);
        if (q.count == 0 && q.done) {
            pthread_mutex_unlock(&q.lock);
            return NULL;
        }
        int request = q.items[q.head];
        q.head = (q.head + 1) % QUEUE;
        q.count--;
        EMBER_COUNTER("queue depth", q.count);
        pthread_cond_broadcast(&q.cond);
        pthread_mutex_unlock(&q.lock);
        handle(request);
    }
}

int main(int argc, char **argv)
{
    int requests = argc > 1 ? atoi(argv[1]) : 2000;
    int workers = argc > 2 ? atoi(argv[2]) : 3;
    pthread_t *t = calloc((size_t)workers, sizeof(*t));
    ember_thread_name("producer");
    EMBER_INSTANT("start", EMBER_I64("requests", requests), EMBER_I64("workers", workers),
                  EMBER_F64("load", 0.75));
    for (int i = 0; i < workers; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (int r = 0; r < requests; r++) {
        EMBER_SPAN("enqueue");
        pthread_mutex_lock(&q.lock);
        while (q.count == QUEUE)
            pthread_cond_wait(&q.cond, &q.lock);
        q.items[q.tail] = r;
        q.tail = (q.tail + 1) % QUEUE;
        q.count++;
        EMBER_COUNTER("queue depth", q.count);
        pthread_cond_broadcast(&q.cond);
        pthread_mutex_unlock(&q.lock);
    }
    pthread_mutex_lock(&q.lock);
    q.done = 1;
    pthread_cond_broadcast(&q.cond);
    pthread_mutex_unlock(&q.lock);
    for (int i = 0; i < workers; i++)
        pthread_join(t[i], NULL);
    EMBER_INSTANT("done");
    printf("handled %d requests with %d workers\n", requests, workers);
    free(t);
    return 0;
}
