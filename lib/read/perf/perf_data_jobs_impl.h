/*
 * perf_data_jobs_impl.h - the state of the perf.data reader's threads,
 * shared by the files that drive them (library-internal):
 *
 * perf_data_jobs.c     the threads, the batches cut into pieces, merged in
 *                      order; DWARF samples (decoded here, unwound there)
 * perf_data_records.c  samples' records (fp and DWARF), decoded, unwound,
 *                      built and weighed there
 *
 * Invariants: a batch is either jobs (n) or records (nrecs), never both;
 * the tasks do not change while the threads run, the reader's trie only
 * by a merge behind, which adds to it without growing a table;
 * each overlay gets its pieces in increasing order, and the pieces are
 * merged in order.
 */
#ifndef EMBER_READ_PERF_DATA_JOBS_IMPL_H
#define EMBER_READ_PERF_DATA_JOBS_IMPL_H

#include "read/perf/perf_data_build.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

enum { PIECES_PER_THREAD = 4 };

/* The chunks a piece of records may be pinned in, counted by its taker
 * (a piece of a batch in time order holds runs of a few records from
 * each of a few chunks: about 7 records a run in an fp recording). */
enum { PIECE_HOLDS = 8 };

/* Records (perf_data_records.c) batch by the thousand: a barrier costs
 * tens of microseconds, an fp sample about 100 ns; DWARF ones (and DWARF
 * samples) by JOBS_WALKS, so that their 8 KB stay in the caches (records:
 * JOBS_WALKS for two threads, half as many more for each thread beyond). A
 * fuzzing build's batches are small, so that its small inputs fill
 * several, each built on the workers while the next fills. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
enum { JOBS_RECORDS = 16, JOBS_WALKS = 4 };
#else
enum { JOBS_RECORDS = 16384, JOBS_WALKS = 128 };
#endif

struct walk {
    int res; /* pd_unwind_sample_fast's: 0, 1 (libdwfl's to do), or its error */
    size_t n;
    uint64_t ips[MAX_STACK];
};

struct job {
    int ai;
    int got;       /* pd_raw_sample_thread's */
    int walk;      /* its walk in the batch, -1 none */
    uint32_t node; /* its stack's, in its piece's overlay */
    uint64_t hold; /* the reader's, of its record */
    struct pd_sample s;
    struct pd_sample_thread th;
};

/* A sample's record as the reader handed it (struct pd_held_record: its
 * bytes, header first, the rest of a struct pd_record is there; its place;
 * its hold, or RECORD_COPIED: data is a copy): written by the reading
 * thread only, and small, as each line the threads have read costs it a
 * miss to write again (what the threads make of a record is theirs, in the
 * piece and their tallies). */
#define RECORD_COPIED UINT64_MAX

struct piece {
    size_t from, to;
    unsigned builder;      /* the thread whose overlay it is built in */
    size_t built;          /* [from, built) are */
    int err;               /* its builder's, at built */
    struct pd_raw_count n; /* the builder's overlay after it, once built */
    /* records: the events in the order they first come in the piece
     * (first[0, nfirst), marked in seen[]: room for every event), and the
     * samples of none of the file's events */
    uint32_t *first;
    uint8_t *seen;
    size_t nfirst;
    uint64_t unknown;
    /* records: how many are pinned in each chunk, counted by its taker,
     * so that the reading thread lets them go a chunk at a time
     * (nholds > PIECE_HOLDS: in more chunks, let go one by one), and how
     * many are copies (freed) */
    struct {
        uint64_t hold;
        size_t n;
    } holds[PIECE_HOLDS];
    size_t nholds, copies;
};

/* What a thread weighed of records, added to the reader's at the end
 * (sums do not depend on the order): the samples and periods of the
 * reader's nodes (its overlay's own are in the overlay), the samples of
 * each process and each event. */
struct tally {
    struct {
        uint64_t samples, period;
    } * node;
    struct {
        uint64_t samples;
        bool weighed;
    } * event;
    uint64_t *process;
    size_t nnodes, nodecap, nevents, eventcap, nprocess, processcap;
};

/* A thread's: the caller's is b[0] (its unwinder the reader's). Two
 * overlays, one for each of two batches in a row: a batch's are merged
 * while the next builds in the others (perf_data_records.c). */
struct builder {
    struct pd_jobs *j;
    struct pd_unwind *uw;
    struct pd_raw raw[2];
    struct pd_raw_merge m[2];
    struct tally tally;
    bool stopped; /* this batch: builds nothing more */
    sem_t go;     /* a worker's: posted for each batch, and at the end */
    pthread_t thread;
};

struct pd_jobs {
    struct reader *r;
    struct job *jobs;
    size_t n;
    struct pd_held_record *recs; /* the batch, when it is records (n is 0) */
    size_t nrecs, max_recs;
    /* records: the next batch, filled while the workers build recs
     * (flying: launched, not landed yet); the first error met, which
     * every later drain returns */
    struct pd_held_record *fill;
    size_t nfill;
    bool flying;
    int err;
    uint32_t *firsts; /* each piece's first[] and seen[], by set and the file's events */
    uint8_t *seens;
    struct walk *walks;
    size_t nwalks;
    /* the pieces of the batch built in each set of overlays; set: the
     * batch launched last's, which the threads build in */
    struct piece *pieces[2];
    size_t npieces[2];
    unsigned set;
    struct builder *b; /* nb: the caller's and the workers' */
    unsigned nb;
    sem_t done;                /* posted by the last worker done with a batch */
    atomic_uint busy;          /* workers still on this batch */
    atomic_bool stop;          /* the workers end */
    atomic_size_t next;        /* the next piece to take */
    struct pd_raw_spare spare; /* the reader's trie grown ahead, by worker 1 */
    /* this batch: worker 1 makes the spare first; or (behind) it merges
     * the batch before first, in the other set, then makes the spare once
     * its pieces are built, the merge's error in behind_err */
    bool spare_ahead, behind;
    int behind_err;
    size_t last_new;    /* the nodes the last batch's merge made */
    size_t tally_nodes; /* the reader's nodes when the batch was launched */
};

/* The overlay b builds in: its set of the batch launched last. */
static inline struct pd_raw *pd_overlay(struct builder *b)
{
    return &b->raw[b->j->set];
}

/* perf_data_jobs.c: the batch's pieces built by every thread (the
 * caller's alone when no worker could be started), then merged in order
 * and weighed; the overlays emptied. */
int pd_jobs_run(struct pd_jobs *j);
/* The same in two steps: the batch cut into pieces and the workers woken
 * to build it, the caller's thread free meanwhile; then the pieces left
 * taken by the caller's thread too, the workers waited for, the pieces
 * merged in order and weighed. */
void pd_jobs_launch(struct pd_jobs *j);
int pd_jobs_land(struct pd_jobs *j);
/* The batch flying built: its pieces left taken here too, the workers
 * waited for (0, or the error of the merge behind it did). Then, where it
 * can be merged while the next batch builds (pd_jobs_behind: every piece
 * built whole, no overlay with maps or roots of its own, the reader's
 * trie given room for all they made, so that its merge grows no table the
 * threads read), the next batch launched: worker 1 merges this one's set
 * first (pd_jobs_merge, the set before the launch's), and the trie is the
 * workers' till the next lands. */
int pd_jobs_built(struct pd_jobs *j);
bool pd_jobs_behind(struct pd_jobs *j);
int pd_jobs_merge(struct pd_jobs *j, unsigned set);
/* The batch launched last merged now, the trie's spare taken first (the
 * workers idle). */
int pd_jobs_merge_built(struct pd_jobs *j);

/* perf_data_records.c */
/* The batch of records flying landed, then the one filled built, merged
 * and weighed, each let go. */
int pd_records_drain(struct pd_jobs *j);
/* The records of both batches an error left, let go of. */
void pd_records_free(struct pd_jobs *j);
/* A piece of records built by b, on any thread, until one is the
 * caller's to build (b then stops for the batch). */
void pd_records_take(struct pd_jobs *j, struct builder *b, struct piece *pc);
/* A piece's records its builder left, on the caller's thread. */
int pd_records_finish(struct pd_jobs *j, struct piece *pc);
/* A piece merged: what its order decides (events first seen, unknown). */
void pd_records_weigh(struct pd_jobs *j, struct piece *pc);
/* An overlay's own nodes' weights, into the reader's trie once merged. */
void pd_records_overlay_weights(struct pd_jobs *j, struct builder *b, unsigned set);
void pd_records_tally_release(struct tally *t);

#endif
