/*
 * perf_data_ahead.c - the perf.data reader's input read ahead on a thread
 * of its own (-j 2 and more): read() copying the file out of the page
 * cache is about a third of reading a recording, and the records can be
 * ordered, unwound and counted on the caller's thread while the next
 * chunks are read.
 *
 * A ring of AHEAD_SLOTS chunks: the reading thread fills the free ones in
 * input order, the stream takes them in the same order (refill), giving
 * back its last chunk's buffer for the reader to fill again. Only a
 * regular file is read ahead: a pipe's read could block the thread past
 * the reader's end (it is joined then).
 * Invariants: the input is touched by the reading thread alone while it
 * runs (the progress callback is called there, once per chunk); a chunk's
 * result and error reach the stream in order, and nothing is read after
 * an error or the end; the thread is joined before the stream is
 * released, on every path.
 */
#include "read/perf/perf_data.h"
#include "read/read_impl.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

enum { AHEAD_SLOTS = 4 };

struct ahead_slot {
    struct ember_chunk c;
    int r; /* ember_input_read_chunk's */
    struct ember_diag d;
};

struct pd_ahead {
    struct ember_input *in;
    void (*progress)(void *ctx);
    void *ctx;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct ahead_slot slot[AHEAD_SLOTS];
    size_t head, full; /* slots [head, head + full) are filled, in order */
    bool stop;
};

static void *ahead_main(void *arg)
{
    struct pd_ahead *a = arg;
    for (int r = 1; r > 0;) {
        pthread_mutex_lock(&a->mu);
        while (a->full == AHEAD_SLOTS && !a->stop)
            pthread_cond_wait(&a->cv, &a->mu);
        bool stop = a->stop;
        struct ahead_slot *s = &a->slot[(a->head + a->full) % AHEAD_SLOTS];
        pthread_mutex_unlock(&a->mu);
        if (stop)
            break;
        r = s->r = ember_input_read_chunk(a->in, &s->c, EMBER_CUT_BYTES, &s->d);
        if (a->progress)
            a->progress(a->ctx);
        pthread_mutex_lock(&a->mu);
        a->full++;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
    }
    return NULL;
}

int pd_ahead_start(struct pd_ahead **out, struct ember_input *in, void (*progress)(void *ctx),
                   void *ctx)
{
    struct pd_ahead *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->in = in;
    a->progress = progress;
    a->ctx = ctx;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    if (pthread_create(&a->thread, NULL, ahead_main, a) != 0) {
        pthread_cond_destroy(&a->cv);
        pthread_mutex_destroy(&a->mu);
        free(a);
        *out = NULL;
        return 0; /* no thread: the caller reads as with one */
    }
    *out = a;
    return 0;
}

int pd_ahead_next(struct pd_ahead *a, struct ember_chunk *c, struct ember_diag *d)
{
    pthread_mutex_lock(&a->mu);
    while (a->full == 0)
        pthread_cond_wait(&a->cv, &a->mu);
    struct ahead_slot *s = &a->slot[a->head];
    pthread_mutex_unlock(&a->mu);
    struct ember_chunk mine = *c; /* its buffer is filled again by the reader */
    *c = s->c;
    s->c = mine;
    int r = s->r;
    if (r < 0)
        *d = s->d;
    if (r <= 0) /* the reader has stopped: this slot stays, so that it is the next again */
        return r;
    pthread_mutex_lock(&a->mu);
    a->head = (a->head + 1) % AHEAD_SLOTS;
    a->full--;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return r;
}

void pd_ahead_stop(struct pd_ahead *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    for (size_t i = 0; i < AHEAD_SLOTS; i++)
        ember_chunk_release(&a->slot[i].c);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
