/*
 * ember/transform.h - rewriting a profile's stacks.
 */
#ifndef EMBER_TRANSFORM_H
#define EMBER_TRANSFORM_H

#include "ember/profile.h"

/* A new profile whose stacks are read from the leaf to the root
 * (flamegraph.pl --reverse: merge from the leaf, a bottom-up view).
 * The arrival sequence, if kept, is reversed stack by stack. */
EMBER_API int ember_profile_reverse(const struct ember_profile *src, struct ember_profile **out);

/* Chain graphs: frames after the first "--" frame of a stack are the
 * waker's and get "_[w]" (what flamegraph.pl --colors=chain does). */
EMBER_API int ember_profile_annotate_wakers(const struct ember_profile *src,
                                            struct ember_profile **out);

#endif
