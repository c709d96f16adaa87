/*
 * profile_impl.h - the profile's representation, for the library's readers
 * and writers (the public view is include/ember/profile.h).
 *
 * Invariants:
 * - nodes[0] is the root; a node's parent always has a smaller index, so a
 *   scan in index order visits parents before children;
 * - the child table maps (parent << 32 | frame) to the node, 0 = empty slot
 *   (the root is nobody's child);
 * - the frame table maps names to ids; slots hold id + 1, 0 = empty;
 * - self[m][n] is node n's weight in metric m, scaled by 10^decimals.
 */
#ifndef EMBER_MODEL_PROFILE_IMPL_H
#define EMBER_MODEL_PROFILE_IMPL_H

#include "ember/profile.h"
#include "util/arena.h"
#include "util/hash.h"

#include <string.h>

struct ember_frames {
    struct ember_arena names;
    const char **str;
    uint32_t *len;
    uint32_t *tag; /* high half of each name's hash: cheap rejection */
    uint32_t count;
    size_t cap;
    uint32_t *slots;
    uint32_t mask;
};

struct ember_node {
    uint32_t frame;
    uint32_t parent;
};

struct ember_profile {
    struct ember_frames frames;

    struct ember_node *nodes;
    int64_t *self[EMBER_MAX_METRICS];
    uint32_t nnodes;
    size_t ncap;

    uint64_t *child_keys;
    uint32_t *child_vals;
    uint32_t child_mask;

    unsigned nmetrics;
    unsigned decimals;
    char sample_type[EMBER_UNIT_MAX]; /* what the weights measure, and in what */
    char unit[EMBER_UNIT_MAX];
    int64_t total[EMBER_MAX_METRICS]; /* sum of self weights, kept exact */

    bool keep_seq;
    uint32_t *seq_node;
    int64_t *seq_w[EMBER_MAX_METRICS];
    size_t seq_len, seq_cap;
};

int ember_frames_init(struct ember_frames *f);
void ember_frames_release(struct ember_frames *f);
int ember_frames_intern_slow(struct ember_frames *f, const char *s, size_t n, uint64_t h,
                             uint32_t *id);
/* Adds to a node's weight and the total, without recording the sequence;
 * -ERANGE if either would overflow. */
int ember_profile_add_raw(struct ember_profile *p, uint32_t node, unsigned metric, int64_t value);
/* Records (node, value) in the arrival sequence only. */
int ember_profile_seq_append(struct ember_profile *p, uint32_t node, unsigned metric,
                             int64_t value);
/* Exchanges the contents of two profiles (a transform's result replaces
 * its input in place). */
void ember_profile_swap(struct ember_profile *a, struct ember_profile *b);
int ember_profile_child_slow(struct ember_profile *p, uint32_t parent, uint32_t frame,
                             uint32_t *node);

/* The hot paths, inlined into readers: look up, and only call out to insert. */
static inline int ember_frames_intern(struct ember_frames *f, const char *s, size_t n, uint32_t *id)
{
    uint64_t h = ember_hash_bytes(s, n, 0);
    uint32_t tag = (uint32_t)(h >> 32);
    for (uint32_t i = (uint32_t)h & f->mask;; i = (i + 1) & f->mask) {
        uint32_t slot = f->slots[i];
        if (slot == 0)
            break;
        uint32_t cand = slot - 1;
        if (f->tag[cand] == tag && f->len[cand] == n && memcmp(f->str[cand], s, n) == 0) {
            *id = cand;
            return 0;
        }
    }
    return ember_frames_intern_slow(f, s, n, h, id);
}

static inline uint32_t ember_child_hash(uint64_t key, uint32_t mask)
{
    return (uint32_t)ember_hash_u64(key) & mask;
}

static inline int ember_profile_child_fast(struct ember_profile *p, uint32_t parent, uint32_t frame,
                                           uint32_t *node)
{
    uint64_t key = (uint64_t)parent << 32 | frame;
    for (uint32_t i = ember_child_hash(key, p->child_mask);; i = (i + 1) & p->child_mask) {
        uint32_t v = p->child_vals[i];
        if (v == 0)
            break;
        if (p->child_keys[i] == key) {
            *node = v;
            return 0;
        }
    }
    return ember_profile_child_slow(p, parent, frame, node);
}

#endif
