/*
 * profile_merge_impl.h - what the two halves of the merge of threads'
 * profiles share (profile_merge.h): a source, copied by
 * profile_merge.c, whose nodes profile_merge_nodes.c merges on several
 * threads.
 */
#ifndef EMBER_MODEL_PROFILE_MERGE_IMPL_H
#define EMBER_MODEL_PROFILE_MERGE_IMPL_H

#include "model/profile_impl.h"
#include "model/profile_merge.h"

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
};

/* The nodes of the n sources' pieces (npieces in all, each source's
 * ranked) into dst on up to `threads` threads (profile_merge_nodes.c):
 * 1 when they must take the serial path, dst untouched. */
int ember_merge_nodes(struct ember_profile *dst, struct merge_source *s, unsigned n, size_t npieces,
                      unsigned threads);

#endif
