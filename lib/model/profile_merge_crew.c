/*
 * profile_merge_crew.c - the threads a merge of threads' profiles runs
 * its steps on (profile_merge_frames.c, profile_merge_nodes.c): up to
 * `want`, the caller's among them, each running the same steps, which
 * meet at the crew's barrier; and the steps both merges take alike.
 * Invariants: threads is the count of those running, known to each
 * before it runs (helpers wait at a gate till it is); a failure is kept
 * once any thread has one, and read after a barrier.
 */
#include "model/profile_merge_impl.h"

#include <stdbool.h>
#include <stdlib.h>

struct gate {
    pthread_mutex_t lock;
    pthread_cond_t open;
    bool go;
};

struct helper {
    struct merge_crew *c;
    struct gate *g;
    void (*run)(void *ctx, unsigned t);
    void *ctx;
    unsigned t;
    pthread_t tid;
};

static void *helper_main(void *arg)
{
    struct helper *h = arg;
    pthread_mutex_lock(&h->g->lock);
    while (!h->g->go)
        pthread_cond_wait(&h->g->open, &h->g->lock);
    pthread_mutex_unlock(&h->g->lock);
    if (h->t < h->c->threads)
        h->run(h->ctx, h->t);
    return NULL;
}

void ember_crew_run(struct merge_crew *c, unsigned want, void (*run)(void *ctx, unsigned t),
                    void *ctx)
{
    struct gate g = {.go = false};
    struct helper *h = calloc(want, sizeof(*h));
    unsigned started = 0;
    pthread_mutex_init(&g.lock, NULL);
    pthread_cond_init(&g.open, NULL);
    for (unsigned t = 1; h && t < want; t++) {
        h[started] = (struct helper){.c = c, .g = &g, .run = run, .ctx = ctx, .t = t};
        if (pthread_create(&h[started].tid, NULL, helper_main, &h[started]) != 0)
            break;
        started++;
    }
    c->threads = started + 1;
    pthread_barrier_init(&c->bar, NULL, c->threads);
    pthread_mutex_lock(&g.lock);
    g.go = true;
    pthread_cond_broadcast(&g.open);
    pthread_mutex_unlock(&g.lock);
    run(ctx, 0);
    for (unsigned i = 0; i < started; i++)
        pthread_join(h[i].tid, NULL);
    pthread_barrier_destroy(&c->bar);
    pthread_cond_destroy(&g.open);
    pthread_mutex_destroy(&g.lock);
    free(h);
}

void ember_crew_fail(struct merge_crew *c, int err)
{
    if (err)
        __atomic_store_n(&c->err, err, __ATOMIC_RELAXED);
}

int ember_crew_failed(struct merge_crew *c)
{
    return __atomic_load_n(&c->err, __ATOMIC_RELAXED);
}

void ember_merge_keep_first(uint64_t *first, uint64_t v)
{
    uint64_t cur = __atomic_load_n(first, __ATOMIC_RELAXED);
    while (cur < v &&
           !__atomic_compare_exchange_n(first, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

int ember_merge_number_pieces(struct merge_plan *p, uint32_t limit)
{
    uint64_t next = p->before;
    for (size_t r = 0; r < p->npieces; r++) {
        uint32_t c = p->count[r];
        p->count[r] = (uint32_t)next;
        next += c;
        if (next >= limit)
            return -ERANGE;
    }
    p->added = (uint32_t)(next - p->before);
    return 0;
}
