/*
 * map.h - rebuilding a profile stack by stack (library-internal): the
 * mechanism under every transform that rewrites stacks (reverse, waker
 * annotation, and later hide/collapse/recursion folding).
 */
#ifndef EMBER_TRANSFORM_MAP_H
#define EMBER_TRANSFORM_MAP_H

#include "model/profile_impl.h"

/* The new stack for one stack of src: in[0..n) are src frame ids from the
 * root; the function appends dst frame ids to out (an array it may grow).
 * Returns 0 or a negative error. */
struct stack_out {
    uint32_t *frames;
    size_t n, cap;
    bool drop; /* set by fn: the stack and its weight are left out */
};
typedef int (*ember_stack_map_fn)(void *ctx, struct ember_profile *dst,
                                  const struct ember_profile *src, const uint32_t *in, size_t n,
                                  struct stack_out *out);

/* Appends src frame f, re-interned in dst, to out. */
int ember_stack_out_copy(struct stack_out *out, struct ember_profile *dst,
                         const struct ember_profile *src, uint32_t f);
/* Appends the name [s, s+len) interned in dst. */
int ember_stack_out_name(struct stack_out *out, struct ember_profile *dst, const char *s,
                         size_t len);

/* A new profile with every stack of src (weights, and the arrival sequence
 * if kept) passed through fn. */
int ember_profile_map(const struct ember_profile *src, ember_stack_map_fn fn, void *ctx,
                      struct ember_profile **out);

/* Each src frame's dst frame: called once per frame that some weighted
 * stack holds. */
typedef int (*ember_frame_map_fn)(void *ctx, struct ember_profile *dst,
                                  const struct ember_profile *src, uint32_t frame, uint32_t *out);
/* ember_profile_map for a rewrite frame by frame (the stack's shape kept):
 * one child lookup per node rather than a pass over each stack. */
int ember_profile_map_frames(const struct ember_profile *src, ember_frame_map_fn fn, void *ctx,
                             struct ember_profile **out);

#endif
