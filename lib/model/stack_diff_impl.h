/*
 * stack_diff_impl.h - the stack diff's table of stacks, shared by
 * stack_diff.c (the table, the lines in, the profile) and
 * stack_diff_write.c (the lines out, in order) (library-internal to
 * lib/model).
 *
 * Invariants: an entry's frames are ids[off .. off + n) in names; a slot
 * holds 96 bits of its stack text's hash and its entry + 1 (0: empty);
 * each side's weights are in units of 10^-decimals of that side.
 */
#ifndef EMBER_MODEL_STACK_DIFF_IMPL_H
#define EMBER_MODEL_STACK_DIFF_IMPL_H

#include "ember/model.h"
#include "model/name_cache.h"
#include "model/profile_impl.h"

struct sd_entry {
    uint64_t off; /* its frames: ids[off .. off + n), names after --strip-hex */
    uint32_t n;
    uint32_t len; /* of its text, UINT32_MAX: longer */
    int64_t w[2]; /* per side, in units of 10^-decimals of that side */
};

/* 96 bits of the text's hash identify a stack (as perf's line cache). */
struct sd_slot {
    uint64_t lo;
    uint32_t hi;
    uint32_t entry; /* + 1; 0: empty */
};

struct sd_item {
    uint32_t key; /* the rank of its piece at the depth sorted on */
    uint32_t entry;
};

/* What the profile keeps of one input beyond its stacks: a differential
 * input has values before (0) and after (1), and after is its selected
 * value, the side's weight; the other value's total counts only for the
 * "no samples" and overflow rules. An input that becomes differential has
 * had its lines so far unchanged, after as before
 * (ember_profile_set_differential). */
struct sd_side {
    bool diff;
    unsigned decimals;
    int64_t total[2];
};

struct ember_stack_diff {
    struct ember_diff_opts o;
    struct ember_frames names;
    struct ember_name_cache memo;
    uint64_t *hashes; /* of a new stack's names */
    size_t *ends;
    size_t hcap, ecap2;
    struct sd_slot *slots;
    uint32_t mask;
    struct sd_entry *entries;
    size_t nentries, ecap;
    uint32_t *ids;
    size_t nids, icap;
    struct sd_side side[2];
    char *buf; /* a stack's text with hex numbers stripped */
    size_t bcap;
    /* after prepare: the weights as the differential profile has them, at
     * dec decimals, and the entries in line order */
    int64_t (*w)[2];
    struct sd_item *order;
    unsigned dec;
    bool ready;
};

/* Each entry's two weights as the differential profile holds them (at the
 * larger precision, BEFORE normalized), into w; the totals are checked
 * for overflow as the profile's are. */
int ember_stack_diff_weights(const struct ember_stack_diff *sd, int64_t (*w)[2], unsigned *dec);

#endif
