/*
 * profile_merge_impl.h - what the parts of the merge of threads'
 * profiles share (profile_merge.h): a source, copied by profile_merge.c,
 * whose frames profile_merge_frames.c and nodes profile_merge_nodes.c
 * merge on several threads, the crew of profile_merge_crew.c.
 */
#ifndef EMBER_MODEL_PROFILE_MERGE_IMPL_H
#define EMBER_MODEL_PROFILE_MERGE_IMPL_H

#include "model/profile_impl.h"
#include "model/profile_merge.h"

#include <pthread.h>

enum { OWNED = 1u << 31, NO_SLOT = UINT32_MAX, SKETCH_BITS = 12, SKETCH = 1 << SKETCH_BITS };

/* A source's ids in the result, and how much of it is copied. */
struct merge_source {
    const struct ember_profile *p;
    uint32_t *mods, *frames, *nodes;
    struct ember_piece_mark done;
    unsigned values[EMBER_MAX_VALUES];
    /* the threads' merge: its marks, each one's rank in the input's order,
     * and per node its path hash and its slot (OWNED: it keeps it) */
    const struct ember_piece_mark *marks;
    size_t nmarks;
    uint32_t *rank;
    uint32_t *hash, *slot;
    int64_t sum[EMBER_MAX_VALUES]; /* the weights it adds, by dst's value */
    uint8_t sketch[SKETCH];
    bool weighed, negative;
    /* the threads' merge of frames: per frame its hash in dst and its
     * slot (OWNED: it is new in dst), dst's strings for its files, the
     * names of its new frames */
    uint64_t *fhash;
    uint32_t *fslot;
    struct merge_file *files;
    size_t nfiles;
    struct ember_arena names;
    bool new_detailed;
};

/* The threads a merge runs on: run(ctx, t) on each, the caller's t = 0;
 * threads is their count, known to each before it runs. */
struct merge_crew {
    unsigned threads;
    pthread_barrier_t bar;
    int err; /* any thread's; read after a barrier */
};

void ember_crew_run(struct merge_crew *c, unsigned want, void (*run)(void *ctx, unsigned t),
                    void *ctx);
void ember_crew_fail(struct merge_crew *c, int err);
int ember_crew_failed(struct merge_crew *c);

/* *first made v where v is larger (a claim: the slot keeps the thing the
 * input met first, whose ~(piece rank << 32 | index) is the largest). */
void ember_merge_keep_first(uint64_t *first, uint64_t v);
/* How a merge numbers the things (frames, nodes) new in dst: per piece
 * rank, count[r] new ones, then the number of its first (step 3: dst's
 * count before, plus the new ones of the pieces before). */
struct merge_plan {
    uint32_t *count;
    size_t npieces;
    uint32_t before, added; /* dst's things before, and the new ones */
};

/* Step 3 of both merges: the pieces' first numbers, the new things'
 * count in added; -ERANGE where the numbers reach limit. */
int ember_merge_number_pieces(struct merge_plan *p, uint32_t limit);

/* The frames of the n sources' pieces (npieces in all, each source's
 * ranked; their modules copied) into dst on up to `threads` threads
 * (profile_merge_frames.c): 1 when they must take the serial path. */
int ember_merge_frames(struct ember_profile *dst, struct merge_source *s, unsigned n,
                       size_t npieces, unsigned threads);

/* The nodes of the n sources' pieces (npieces in all, each source's
 * ranked) into dst on up to `threads` threads (profile_merge_nodes.c):
 * 1 when they must take the serial path, dst untouched. */
int ember_merge_nodes(struct ember_profile *dst, struct merge_source *s, unsigned n, size_t npieces,
                      unsigned threads);

#endif
