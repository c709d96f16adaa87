/*
 * perf_data_jobs.c - the reader's threads (-j 2 and more) and their
 * batches: of samples' records, decoded there (perf_data_records.c), or,
 * where those cannot be taken (a pipe, off-CPU time, a kept sequence), of
 * DWARF samples decoded here and unwound and built there, as below.
 * Past reading and ordering its record, a DWARF sample's cost is its
 * stack (unwinding it, then finding its frames and nodes), and that needs
 * only the sample, the maps of its process, the files' CFI rows and a trie
 * to build in.
 *
 * Samples are kept in a batch, in their order, their records held where
 * the reader read them (perf_reader.h), from a sample to unwind until the
 * batch is full, or a record that may change threads or maps or weigh a
 * stack comes, or the data ends. The batch is then done in three steps:
 *  1. each sample's thread, in order, on the caller's thread;
 *  2. pieces of consecutive samples, taken in turn by the caller's thread
 *     and N - 1 workers, each with an unwinder and an overlay of its own
 *     on the reader's trie (pd_raw): a DWARF sample is walked by compiled
 *     CFI rows, then each sample's stack is built in the overlay of the
 *     thread that took it;
 *  3. on the caller's thread, piece by piece in order: the walks only
 *     libdwfl can do (on the caller's unwinder, whose sessions see the
 *     samples one thread would show them) and the stacks after them; what
 *     the piece's overlay made, merged into the reader's trie; the
 *     piece's weights. Then the overlays are emptied. A batch of records
 *     whose pieces were all built whole is merged by worker 1 while the
 *     others build the next in a second set of overlays (pd_jobs_behind).
 * A thread that meets a walk only libdwfl can do builds nothing more in
 * that batch (it still walks), so an overlay holds its pieces in order
 * and the caller finishes them in it.
 * Invariants: the tasks do not change while the threads run, nor does the
 * reader's trie but by a merge behind, which only adds to it (its frame
 * and child tables publish each entry last, and are given room for the
 * whole merge first: nothing the threads read moves); each overlay gets
 * its pieces in increasing order; the
 * pieces are merged in order, so the reader's trie numbers its maps,
 * frames and nodes as one thread does, and the profile is one thread's,
 * byte for byte; the workers are joined on every path.
 */
#include "read/perf/perf_data_jobs_impl.h"

#include <errno.h>
#include <stdlib.h>

/* A batch ends at JOBS_WALKS samples to unwind (or JOBS_BATCH samples in
 * all): enough walks (about 1 us each) to pay for waking the workers,
 * few enough to keep the records in the caches (at 256, -j 2 took 0.21 s
 * wall against 0.18 s on the 666 MB DWARF recording). On this path a
 * sample without one, when no batch waits, is built at once: decoded
 * here, an fp sample costs more to batch, merge and weigh than its stack
 * (about 50 ns) does (fp batched at -j 2: 0.79 s wall against 0.67-0.76 s);
 * the records path does not decode it here. */
enum { JOBS_BATCH = 4096 };

/* The stack of a sample, in b's overlay. */
static int build(struct pd_jobs *j, struct builder *b, struct job *jb)
{
    const struct walk *w = jb->walk >= 0 ? &j->walks[jb->walk] : NULL;
    return pd_raw_stack(pd_overlay(b), jb->ai, &jb->s, &jb->th, w ? w->ips : NULL, w ? w->n : 0,
                        &jb->node);
}

static void take_piece(struct pd_jobs *j, struct builder *b, struct piece *pc)
{
    pc->builder = (unsigned)(b - j->b);
    pc->built = pc->from;
    for (size_t i = pc->from; i < pc->to; i++) {
        struct job *jb = &j->jobs[i];
        struct walk *w = jb->walk >= 0 && jb->got > 0 ? &j->walks[jb->walk] : NULL;
        if (w)
            w->res = pd_unwind_sample_fast(b->uw, jb->th.process, &jb->s, w->ips, MAX_STACK, &w->n);
        if (b->stopped)
            continue;
        if (jb->got < 0 || (jb->got > 0 && ((w && w->res) || (pc->err = build(j, b, jb)) < 0))) {
            b->stopped = true; /* the caller's, from here */
            continue;
        }
        pc->built = i + 1;
    }
    pc->n = pd_raw_count(pd_overlay(b));
}

static void take_pieces(struct pd_jobs *j, struct builder *b)
{
    b->stopped = false;
    size_t n = j->npieces[j->set];
    for (size_t k; (k = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < n;)
        if (j->nrecs)
            pd_records_take(j, b, &j->pieces[j->set][k]);
        else
            take_piece(j, b, &j->pieces[j->set][k]);
}

/* Workers wake in a tree, worker i (from 1) waking 2i and 2i + 1, so that
 * the caller's thread makes one wake-up a batch, not one per worker
 * (waking each of 3 workers was about 3% of a DWARF read at -j 4, on the
 * caller's thread), and the last wakes within log2(N) steps. */
static void wake_next(struct pd_jobs *j, unsigned i)
{
    unsigned first = i ? 2 * i : 1, last = i ? 2 * i + 1 : 1; /* the caller's: worker 1 */
    for (unsigned k = first; k <= last && k < j->nb; k++)
        sem_post(&j->b[k].go);
}

/* The batch before (in the other set of overlays) merged by worker 1
 * while the others build this one (its records are not read: only the
 * overlays, the pieces' firsts and the reader's trie, which the caller's
 * thread leaves alone till this batch lands). A call of its own: the
 * read's profile tells this merge from one the workers wait for
 * (bench/perfdata_phases.py). */
__attribute__((noinline)) static void merge_behind(struct pd_jobs *j)
{
    j->behind_err = pd_jobs_merge(j, j->set ^ 1);
}

/* The reader's trie grown ahead for the next merge, by worker 1 once its
 * pieces are built and the batch before merged (behind: the trie is still
 * from then till the next merge). */
static void spare_after(struct pd_jobs *j)
{
    pd_raw_spare_plan(&j->r->raw, 2 * j->last_new, &j->spare);
    if (j->spare.nnodes)
        pd_raw_spare_make(&j->r->raw, &j->spare);
}

/* b[0]'s unwinder is the reader's. */
static void release_builder(struct pd_jobs *j, struct builder *b)
{
    if (b != &j->b[0])
        pd_unwind_free(b->uw);
    for (unsigned set = 0; set < 2; set++) {
        pd_raw_release(&b->raw[set]);
        pd_raw_merge_release(&b->m[set]);
    }
    pd_records_tally_release(&b->tally);
}

static void *worker_main(void *arg)
{
    struct builder *b = arg;
    struct pd_jobs *j = b->j;
    unsigned i = (unsigned)(b - j->b);
    for (;;) {
        while (sem_wait(&b->go) != 0)
            ; /* EINTR */
        wake_next(j, i);
        if (atomic_load(&j->stop)) {
            release_builder(j, b); /* here: the workers' teardowns at once, not one by one */
            break;
        }
        if (i == 1 && j->behind)
            merge_behind(j);
        if (i == 1 && j->spare_ahead)
            pd_raw_spare_make(&j->r->raw, &j->spare);
        take_pieces(j, b);
        if (i == 1 && j->behind)
            spare_after(j);
        if (atomic_fetch_sub(&j->busy, 1) == 1)
            sem_post(&j->done);
    }
    return NULL;
}

/* The batch cut into pieces (one for the caller's thread alone), in the
 * set of overlays the last batch did not use; the reader's nodes counted
 * (its threads' tallies are made room for them first). */
static void cut_pieces(struct pd_jobs *j, bool alone)
{
    size_t want = alone ? 1 : (size_t)j->nb * PIECES_PER_THREAD;
    size_t n = j->nrecs ? j->nrecs : j->n;
    size_t size = (n + want - 1) / want;
    j->set ^= 1;
    j->npieces[j->set] = 0;
    for (size_t from = 0; from < n; from += size)
        j->pieces[j->set][j->npieces[j->set]++] =
            (struct piece){.from = from, .to = from + size < n ? from + size : n};
    atomic_store_explicit(&j->next, 0, memory_order_relaxed);
    j->tally_nodes = j->r->raw.nnodes;
}

void pd_jobs_launch(struct pd_jobs *j)
{
    cut_pieces(j, false);
    /* planned for twice the last batch's new nodes: most batches make
     * fewer than the one before; merged behind, the trie changes while
     * the batch builds: its spare is made once that merge is done
     * (spare_after) */
    if (!j->behind)
        pd_raw_spare_plan(&j->r->raw, 2 * j->last_new, &j->spare);
    j->spare_ahead = !j->behind && j->spare.nnodes;
    atomic_store(&j->busy, j->nb - 1);
    wake_next(j, 0);
}

/* The pieces of the batch launched that are left, taken on the caller's
 * thread too, then the workers waited for: 0, or the error of the merge
 * behind worker 1 did first. */
static int help_and_wait(struct pd_jobs *j)
{
    take_pieces(j, &j->b[0]);
    while (sem_wait(&j->done) != 0)
        ; /* EINTR */
    int err = j->behind ? j->behind_err : 0;
    j->behind = false;
    return err;
}

/* The batch cut into pieces, taken by every thread (the caller's alone
 * when no worker could be started). */
static int run_pieces(struct pd_jobs *j, bool alone)
{
    if (alone) {
        cut_pieces(j, true);
        take_pieces(j, &j->b[0]);
        return 0;
    }
    pd_jobs_launch(j);
    return help_and_wait(j);
}

/* The rest of a piece its builder stopped in, on the caller's thread: the
 * walks libdwfl does, in order, then the stacks. */
static int finish_piece(struct pd_jobs *j, struct piece *pc)
{
    struct builder *b = &j->b[pc->builder];
    if (pc->built == pc->to)
        return 0;
    if (pc->err)
        return pc->err;
    for (size_t i = pc->built; i < pc->to; i++) {
        struct job *jb = &j->jobs[i];
        struct walk *w = jb->walk >= 0 ? &j->walks[jb->walk] : NULL;
        int err = jb->got;
        if (err > 0 && w && w->res == 1)
            w->res = pd_unwind_sample(j->r->uw, jb->th.process, &jb->s, w->ips, MAX_STACK, &w->n);
        if (err > 0 && w)
            err = w->res;
        if (err == 0 && jb->got > 0)
            err = build(j, b, jb);
        if (err < 0)
            return err;
    }
    pc->n = pd_raw_count(pd_overlay(b));
    return 0;
}

static int weigh_jobs(struct pd_jobs *j, const struct piece *pc, const struct pd_raw_merge *m)
{
    int err = 0;
    for (size_t i = pc->from; i < pc->to && !err; i++) {
        struct job *jb = &j->jobs[i];
        if (jb->got > 0)
            err = pd_raw_weigh(j->r, jb->ai, &jb->s, pd_raw_merged(m, jb->node));
    }
    return err;
}

/* Each piece of the batch built in set, in order: finished (only the
 * batch launched last's can need it), merged, its samples weighed; then
 * the set's overlays emptied. */
int pd_jobs_merge(struct pd_jobs *j, unsigned set)
{
    struct reader *r = j->r;
    size_t before = r->raw.nnodes;
    int err = 0;
    for (size_t k = 0; k < j->npieces[set] && !err; k++) {
        struct piece *pc = &j->pieces[set][k];
        struct builder *b = &j->b[pc->builder];
        err = j->nrecs ? pd_records_finish(j, pc) : finish_piece(j, pc);
        if (!err)
            err = pd_raw_merge(&r->raw, &b->raw[set], &b->m[set], pc->n);
        if (!err && j->nrecs)
            pd_records_weigh(j, pc);
        else if (!err)
            err = weigh_jobs(j, pc, &b->m[set]);
    }
    for (unsigned i = 0; i < j->nb; i++) {
        if (!err && j->nrecs)
            pd_records_overlay_weights(j, &j->b[i], set);
        int e = pd_raw_reset(&j->b[i].raw[set]);
        pd_raw_merge_reset(&j->b[i].m[set]);
        err = err ? err : e;
    }
    j->last_new = r->raw.nnodes - before;
    return err;
}

int pd_jobs_merge_built(struct pd_jobs *j)
{
    pd_raw_spare_take(&j->r->raw, &j->spare);
    return pd_jobs_merge(j, j->set);
}

int pd_jobs_run(struct pd_jobs *j)
{
    int err = run_pieces(j, j->nb == 1);
    return err ? err : pd_jobs_merge_built(j);
}

int pd_jobs_built(struct pd_jobs *j)
{
    return help_and_wait(j);
}

int pd_jobs_land(struct pd_jobs *j)
{
    int err = help_and_wait(j);
    return err ? err : pd_jobs_merge_built(j);
}

bool pd_jobs_behind(struct pd_jobs *j)
{
    unsigned set = j->set;
    size_t frames = 0, nodes = 0;
    for (size_t k = 0; k < j->npieces[set]; k++)
        if (j->pieces[set][k].built != j->pieces[set][k].to)
            return false; /* the caller finishes it, maybe changing the tasks */
    for (unsigned i = 0; i < j->nb; i++) {
        const struct pd_raw *o = &j->b[i].raw[set];
        if (o->nmaprefs || o->nroots)
            return false;
        frames += o->nframes;
        nodes += o->nnodes;
    }
    pd_raw_spare_take(&j->r->raw, &j->spare);
    if (pd_raw_room(&j->r->raw, frames, nodes) < 0)
        return false; /* the merge then finds no memory, and says it */
    j->behind = true;
    return true;
}

int pd_jobs_drain(struct pd_jobs *j)
{
    if (j && (j->nrecs || j->nfill || j->err))
        return pd_records_drain(j);
    if (!j || j->n == 0)
        return 0;
    size_t held = j->n;
    for (size_t i = 0; i < j->n; i++) {
        struct job *jb = &j->jobs[i];
        jb->got = pd_raw_sample_thread(j->r, jb->ai, &jb->s, &jb->th);
        if (jb->got < 0)
            j->n = i + 1; /* the samples before it are built, then its error returned */
    }
    int err = pd_jobs_run(j);
    for (size_t i = 0; i < held; i++)
        pd_reader_let_go(j->r->rd, j->jobs[i].hold, 1);
    j->n = j->nwalks = 0;
    return err;
}

int pd_jobs_sample(struct pd_jobs *j, const struct pd_record *rec, int ai,
                   const struct pd_sample *s)
{
    struct job *jb = &j->jobs[j->n];
    if (j->n == 0 && !pd_sample_unwinds(s))
        return pd_raw_sample(j->r, ai, s);           /* nothing waits, nothing to walk */
    if (!pd_reader_hold(j->r->rd, rec, &jb->hold)) { /* rare: it straddled chunks */
        int err = pd_jobs_drain(j);
        return err ? err : pd_raw_sample(j->r, ai, s);
    }
    jb->ai = ai;
    jb->s = *s;
    jb->walk = pd_sample_unwinds(s) ? (int)j->nwalks++ : -1;
    j->n++;
    return j->n == JOBS_BATCH || j->nwalks == JOBS_WALKS ? pd_jobs_drain(j) : 0;
}

static void stop_workers(struct pd_jobs *j)
{
    atomic_store(&j->stop, true);
    wake_next(j, 0);
    for (unsigned i = 1; i < j->nb; i++)
        pthread_join(j->b[i].thread, NULL);
}

void pd_jobs_free(struct pd_jobs *j)
{
    if (!j)
        return;
    stop_workers(j); /* each releases its builder */
    release_builder(j, &j->b[0]);
    for (unsigned i = 1; i < j->nb; i++)
        sem_destroy(&j->b[i].go);
    sem_destroy(&j->done);
    free(j->b);
    pd_records_free(j);
    free(j->firsts);
    free(j->seens);
    free(j->jobs);
    free(j->walks);
    free(j->pieces[0]);
    free(j->pieces[1]);
    pd_raw_spare_release(&j->spare);
    free(j);
}

static int overlays_init(struct pd_jobs *j, struct builder *b)
{
    int err = pd_raw_init(&b->raw[0], j->r->t, &j->r->raw);
    return err ? err : pd_raw_init(&b->raw[1], j->r->t, &j->r->raw);
}

/* The caller's builder, then the workers, each with an unwinder and an
 * overlay of its own; fewer when a thread cannot be made (the others take
 * the pieces it would). */
static int start_builders(struct pd_jobs *j, unsigned threads)
{
    j->b = calloc(threads, sizeof(*j->b));
    if (!j->b)
        return -ENOMEM;
    j->b[0] = (struct builder){.j = j, .uw = j->r->uw};
    j->nb = 1;
    int err = overlays_init(j, &j->b[0]);
    while (!err && j->nb < threads) {
        struct builder *b = &j->b[j->nb];
        b->j = j;
        err = pd_unwind_new(&b->uw, j->r->t);
        if (!err)
            err = overlays_init(j, b);
        if (err || sem_init(&b->go, 0, 0) != 0) {
            release_builder(j, b);
            break;
        }
        if (pthread_create(&b->thread, NULL, worker_main, b) != 0) {
            sem_destroy(&b->go);
            release_builder(j, b);
            break;
        }
        j->nb++;
    }
    return err;
}

int pd_jobs_new(struct pd_jobs **out, struct reader *r, unsigned threads)
{
    struct pd_jobs *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    j->r = r;
    sem_init(&j->done, 0, 0);
    j->jobs = malloc(JOBS_BATCH * sizeof(*j->jobs));
    j->walks = malloc(JOBS_WALKS * sizeof(*j->walks));
    j->recs = malloc(JOBS_RECORDS * sizeof(*j->recs));
    j->fill = malloc(JOBS_RECORDS * sizeof(*j->fill));
    for (unsigned set = 0; set < 2; set++)
        j->pieces[set] =
            malloc(((size_t)threads * PIECES_PER_THREAD + 1) * sizeof(*j->pieces[set]));
    int err = j->jobs && j->walks && j->recs && j->fill && j->pieces[0] && j->pieces[1]
                  ? start_builders(j, threads)
                  : -ENOMEM;
    if (err) {
        pd_jobs_free(j);
        return err;
    }
    *out = j;
    return 0;
}
