/*
 * perf_data_place_threads.c - placing on several threads (-j 2 and more):
 * the raw nodes cut into pieces of consecutive indices, taken in turn by
 * the caller's thread and N - 1 others. Each thread places and weighs its
 * pieces' weighed nodes into a profile of its own, naming with a fork of
 * the reader's names (every file naming needs was opened before), and
 * marks each piece's end. The profiles are then merged in the pieces'
 * order (model/profile_merge.h), which numbers modules, frames and nodes
 * as one thread placing every node in order does: the same profile, byte
 * for byte.
 *
 * Why the merge keeps that order: a thread places the ancestors of a node
 * that it has not placed itself, and an earlier piece (another thread's)
 * may have placed some of them. Their frames and nodes were then made in
 * that earlier piece and are in the result before this piece's: they are
 * not new in it. What is new in a piece, its thread meets in the order
 * one thread would.
 *
 * Invariants: the reader's trie and names do not change while the threads
 * run; each thread takes its pieces in increasing order; where a fork
 * would have to load a file (none should: every file naming opens was
 * opened), the placing is left to the caller's thread, nothing added to
 * the result.
 */
#include "read/perf/perf_data_place.h"
#include "model/profile_merge.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Pieces per thread: enough that a thread slowed by another process
 * leaves its share to the others, few enough that each is long (every
 * piece is a mark the merge sorts and walks). */
enum { PLACE_PIECES = 8 };

struct place_job {
    struct reader *r;
    const bool *keep;
    const uint32_t *attr;
    const struct pd_values *v;
    size_t npieces, size; /* pieces of size nodes, from node 1 */
    atomic_size_t next;   /* the next piece to take */
    atomic_bool failed;   /* a thread failed: the others stop */
};

struct placer {
    struct place_job *job;
    struct ember_profile *p;
    struct pd_names *nm;
    uint32_t *at;
    struct ember_piece_marks marks;
    uint64_t samples;
    int err;
    pthread_t thread;
    bool started;
};

/* p's values made those of `of`, in their order: a thread weighs its
 * nodes by the reader's value indices (pd_values), which must be p's. */
static int values_like(struct ember_profile *p, const struct ember_profile *of)
{
    unsigned n = ember_profile_values(of);
    for (unsigned v = 0; v < n; v++) { /* the first takes the default's place */
        unsigned got;
        int err = ember_profile_value(p, ember_profile_value_type(of, v),
                                      ember_profile_value_unit(of, v), &got);
        if (err < 0)
            return err;
        if (got != v)
            return -EINVAL;
    }
    return 0;
}

/* Piece k's weighed nodes placed and weighed. */
static int place_piece(struct placer *w, struct pd_placing *pl, size_t k)
{
    struct place_job *job = w->job;
    struct reader *r = job->r;
    size_t from = 1 + k * job->size, to = from + job->size;
    if (to > r->raw.nnodes)
        to = r->raw.nnodes;
    int err = 0;
    for (size_t i = from; i < to && !err; i++) {
        if (!r->raw.samples[i] || !pd_place_counted(r, i, job->attr))
            continue;
        err = pd_placing_place(pl, (uint32_t)i);
        if (!err && w->at[i] != NO_NODE)
            err = pd_place_weigh(r, w->p, i, w->at[i], job->v, &w->samples);
    }
    return err ? err : ember_profile_mark_piece(&w->marks, k, w->p);
}

static void place_pieces(struct placer *w)
{
    struct place_job *job = w->job;
    struct pd_placing pl;
    w->err = pd_placing_init(&pl, job->r, w->p, w->nm, job->keep, w->at);
    for (size_t k; !w->err && !atomic_load_explicit(&job->failed, memory_order_relaxed) &&
                   (k = atomic_fetch_add(&job->next, 1)) < job->npieces;)
        w->err = place_piece(w, &pl, k);
    if (w->err)
        atomic_store(&job->failed, true);
    pd_placing_release(&pl);
}

static void *placer_main(void *arg)
{
    place_pieces(arg);
    return NULL;
}

static int placer_init(struct placer *w, struct place_job *job, struct pd_names *nm)
{
    *w = (struct placer){.job = job};
    w->p = ember_profile_new();
    w->at = malloc(job->r->raw.nnodes * sizeof(*w->at));
    if (!w->p || !w->at)
        return -ENOMEM;
    int err = values_like(w->p, job->r->p);
    return err ? err : pd_names_fork(nm, w->p, &w->nm);
}

static void placer_release(struct placer *w)
{
    ember_profile_free(w->p);
    pd_names_free(w->nm);
    free(w->at);
    free(w->marks.v);
}

/* The threads' profiles merged into r's, their samples counted. */
static int gather(struct place_job *job, struct placer *w, unsigned n)
{
    struct ember_profile **src = malloc(n * sizeof(*src));
    struct ember_piece_marks *marks = malloc(n * sizeof(*marks));
    int err = src && marks ? 0 : -ENOMEM;
    for (unsigned i = 0; i < n && !err; i++) {
        src[i] = w[i].p;
        marks[i] = w[i].marks;
        job->r->st->samples += w[i].samples;
    }
    if (!err)
        err = ember_profile_merge_pieces(job->r->p, src, marks, n, n);
    free(src);
    free(marks);
    return err;
}

int pd_place_threads(struct reader *r, struct pd_names *nm, const bool *keep, const uint32_t *attr,
                     const struct pd_values *v)
{
    unsigned n = r->o->threads;
    struct placer *w = calloc(n, sizeof(*w));
    if (!w)
        return -ENOMEM;
    struct place_job job = {.r = r, .keep = keep, .attr = attr, .v = v};
    size_t want = (size_t)n * PLACE_PIECES, nodes = r->raw.nnodes - 1;
    job.size = (nodes + want - 1) / want;
    job.npieces = (nodes + job.size - 1) / job.size;
    int err = 0;
    for (unsigned i = 0; i < n && !err; i++)
        err = placer_init(&w[i], &job, nm);
    for (unsigned i = 1; i < n && !err; i++)
        w[i].started = pthread_create(&w[i].thread, NULL, placer_main, &w[i]) == 0;
    if (!err)
        place_pieces(&w[0]);
    for (unsigned i = 1; i < n; i++)
        if (w[i].started)
            pthread_join(w[i].thread, NULL);
    for (unsigned i = 0; i < n && !err; i++)
        err = w[i].err;
    for (unsigned i = 0; i < n; i++) {
        free(w[i].at);
        w[i].at = NULL;
    }
    if (!err) {
        pd_raw_drop(&r->raw); /* placed and weighed: room for the merge */
        err = gather(&job, w, n);
    } else if (err == -EAGAIN)
        err = 1; /* a file not opened: placed on the caller's thread */
    for (unsigned i = 0; i < n; i++)
        placer_release(&w[i]);
    free(w);
    return err;
}
