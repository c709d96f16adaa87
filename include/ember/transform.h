/*
 * ember/transform.h - rewriting a profile's stacks.
 */
#ifndef EMBER_TRANSFORM_H
#define EMBER_TRANSFORM_H

#include "ember/base.h"
#include "ember/model.h"

#include <stdbool.h>

/* A new profile whose stacks are read from the leaf to the root
 * (flamegraph.pl --reverse: merge from the leaf, a bottom-up view).
 * The arrival sequence, if kept, is reversed stack by stack. */
EMBER_API int ember_profile_reverse(const struct ember_profile *src, struct ember_profile **out);

/* Chain graphs: frames after the first "--" frame of a stack are the
 * waker's and get "_[w]" (what flamegraph.pl --colors=chain does). */
EMBER_API int ember_profile_annotate_wakers(const struct ember_profile *src,
                                            struct ember_profile **out);

/* Differential profiles (difffolded.pl): metric 0 is BEFORE's weight,
 * metric 1 AFTER's, for the union of their stacks (options in ember/model.h). */
EMBER_API int ember_profile_diff(const struct ember_profile *before,
                                 const struct ember_profile *after, const struct ember_diff_opts *o,
                                 struct ember_profile **out);

/* ember_profile_diff's result made of before itself: a tree less.
 * -EINVAL, before unchanged, where it cannot be (--strip-hex, frames with
 * places or names with ';'): use ember_profile_diff. On other errors before is changed. */
EMBER_API int ember_profile_diff_into(struct ember_profile *before,
                                      const struct ember_profile *after,
                                      const struct ember_diff_opts *o);

/* Reads two folded inputs into a folded diff (ember/model.h): BEFORE
 * (in[0]) and AFTER (in[1]), st[0] and st[1] counting their lines. Reading
 * fails as ember_format_read does (no samples, a cut last line, counts
 * overflowing: d names the input), BEFORE's failure before AFTER is read;
 * with ro->threads > 1 the inputs are read on another thread while
 * BEFORE's lines are merged. */
struct ember_read_opts;
struct ember_read_stats;
EMBER_API int ember_stack_diff_read(struct ember_stack_diff *sd, struct ember_input *in[2],
                                    const struct ember_read_opts *ro, struct ember_read_stats *st,
                                    struct ember_diag *d);

/*
 * Transforms that cut away what hides the answer, applied after reading.
 * They run in this order whatever the order they were added in, so that a
 * command line means one thing:
 *   1. demangle         OCaml, C++ and Rust symbols made readable; the
 *                       regexes below see the readable names
 *   2. merge threads    a root frame "comm-PID/TID" becomes "comm-PID"
 *   3. skip after NAME  frames above (callers of) the deepest NAME dropped
 *   4. focus / ignore   keep only / drop the samples with a frame matching
 *   5. hide             frames matching dropped, their callees kept
 *   6. collapse         the first frame matching, and all its callees, fold
 *                       into one frame (its name, or NAME given as RE=NAME);
 *                       collapse-gc does this for OCaml's GC: "[GC]"
 *   7. prune from       callees of the first frame matching dropped
 *   8. flatten          recursion towers, direct (a;b;b;b;c) and indirect
 *                       (f;g;f;g;h), merged: a frame seen again on the way
 *                       from the root cuts the cycle back to its first visit
 *   9. reverse          stacks read from the leaf (bottom-up)
 * Several --focus (--ignore, --hide) are alternatives. Regexes are PCRE2,
 * unanchored, matched against whole frame names.
 */
enum ember_step {
    EMBER_STEP_DEMANGLE,
    EMBER_STEP_MERGE_THREADS,
    EMBER_STEP_SKIP_AFTER, /* arg: a frame name, exactly */
    EMBER_STEP_FOCUS,      /* arg: a regex, as for the rest */
    EMBER_STEP_IGNORE,
    EMBER_STEP_HIDE,
    EMBER_STEP_COLLAPSE, /* arg: "RE" or "RE=NAME" (split at the last '=') */
    EMBER_STEP_COLLAPSE_GC,
    EMBER_STEP_PRUNE_FROM,
    EMBER_STEP_FLATTEN_RECURSION,
    EMBER_STEP_REVERSE,
};

struct ember_transform;

EMBER_API struct ember_transform *ember_transform_new(void);
EMBER_API void ember_transform_free(struct ember_transform *t);
/* Adds a step; -EINVAL with d saying what is wrong with a bad regex. */
EMBER_API int ember_transform_add(struct ember_transform *t, enum ember_step step, const char *arg,
                                  struct ember_diag *d);
EMBER_API bool ember_transform_empty(const struct ember_transform *t);
/* Rewrites p's stacks (and its arrival sequence, if kept) in place. */
EMBER_API int ember_transform_apply(const struct ember_transform *t, struct ember_profile *p);

#endif
