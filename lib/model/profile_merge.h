/*
 * profile_merge.h - profiles that threads built from pieces of one input,
 * merged into one as a single thread reading the whole input would have
 * built it (profile_merge.c; library-internal: readers that parse on
 * several threads).
 *
 * A thread marks, after each piece of input it parsed into its profile
 * (its pieces come in increasing order), how many modules, frames and
 * nodes the profile holds: those made during a piece are the ones that
 * thread first met there, in the order it met them.
 */
#ifndef EMBER_MODEL_PROFILE_MERGE_H
#define EMBER_MODEL_PROFILE_MERGE_H

#include "ember/model.h"

#include <stddef.h>
#include <stdint.h>

/* A profile's counts after piece `at` (the input's order) was parsed
 * into it. */
struct ember_piece_mark {
    uint64_t at;
    uint32_t modules, frames, nodes;
    unsigned source; /* set by the merge */
};

struct ember_piece_marks {
    struct ember_piece_mark *v;
    size_t n, cap;
};

/* Marks the end of piece `at`, parsed into p. */
int ember_profile_mark_piece(struct ember_piece_marks *m, uint64_t at,
                             const struct ember_profile *p);

/* Adds the n profiles src, each with its marks, to dst in the order one
 * thread reading the input would have made their modules, frames and
 * nodes, on up to `threads` threads (1: on the caller's alone). Weights
 * are added as they are (the sources' decimals are dst's). The sources are
 * left to be freed: on several threads their child tables and, once
 * copied, their frame tables are dropped first, to make room. */
int ember_profile_merge_pieces(struct ember_profile *dst, struct ember_profile *const *src,
                               struct ember_piece_marks *marks, unsigned n, unsigned threads);

#endif
