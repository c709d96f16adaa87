/*
 * stack_text.c - stacks added as their text, "frame;frame;frame" root
 * first (include/ember/model.h: ember_stack_text_*), for readers of
 * text whose lines are whole stacks (folded stacks).
 *
 * What makes it fast, where it is done:
 * - a stack seen before is one lookup of the 128-bit hash of its text (the
 *   stack cache), whose slot hint fetched a line ahead;
 * - sorted input repeats long prefixes, so a new stack reuses the nodes of
 *   the previous new stack's frames that match byte for byte;
 * - the rest of its names are hashed and their memo slots fetched all at
 *   once (the name memo), then interned, then their nodes are found in one
 *   pass down (ember_profile_child_path).
 *
 * Invariants: prev[0 .. prev_len) is the text of the last stack added
 * through the frames (not found in the cache), ends[k] where its frame k
 * ends in it, ids[k] and nodes[k] that frame's id and node, k < nframes.
 * After an error nframes counts only the frames whose nodes are known.
 */
#include "model/name_cache.h"
#include "model/profile_impl.h"
#include "model/split.h"
#include "model/stack_cache.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

struct ember_stack_text {
    struct ember_profile *p;
    char sep;
    struct ember_stack_cache stacks;
    struct ember_name_cache names;
    uint64_t *hashes; /* of the new frames' names */
    size_t hcap;
    char *prev;
    size_t prev_len, prev_cap;
    size_t *ends;
    uint32_t *ids, *nodes;
    size_t nframes, ecap, icap, ncap;
};

int ember_stack_text_new(struct ember_profile *p, char sep, struct ember_stack_text **out)
{
    struct ember_stack_text *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->p = p;
    t->sep = sep;
    int err = ember_stack_cache_init(&t->stacks);
    if (!err)
        err = ember_name_cache_init(&t->names);
    if (err) {
        ember_stack_text_free(t);
        return err;
    }
    *out = t;
    return 0;
}

void ember_stack_text_free(struct ember_stack_text *t)
{
    if (!t)
        return;
    ember_stack_cache_release(&t->stacks);
    ember_name_cache_release(&t->names);
    free(t->hashes);
    free(t->prev);
    free(t->ends);
    free(t->ids);
    free(t->nodes);
    free(t);
}

void ember_stack_text_key(const char *s, size_t n, uint64_t key[2])
{
    ember_hash_text128(s, n, key);
}

void ember_stack_text_prefetch(const struct ember_stack_text *t, const uint64_t key[2])
{
    ember_stack_cache_prefetch(&t->stacks, key[0]);
}

/* A stack's names split on another thread (ember_stack_text_split). */
struct split_ahead {
    const size_t *ends;
    const uint64_t *hashes;
    size_t names; /* 0: not split */
};

/* ember/model.h promises that room for n + 8 is enough */
_Static_assert(EMBER_SPLIT_SLACK <= 8, "split slack");

/* The names of s[from, n): where each ends (ember_split) and its hash. */
static size_t split_hash(char sep, const char *s, size_t from, size_t n, size_t *ends,
                         uint64_t *hashes)
{
    size_t k = ember_split(s, from, n, sep, ends);
    for (size_t i = 0, pos = from; i < k; pos = ends[i++] + 1)
        hashes[i] = ember_name_hash(s + pos, ends[i] - pos);
    return k;
}

size_t ember_stack_text_split(char sep, const char *s, size_t n, size_t *ends, uint64_t *hashes)
{
    return n ? split_hash(sep, s, 0, n, ends, hashes) : 0;
}

/* Splits the frames of s after the first k (shared with the previous
 * stack), hashes their names (or takes them from ahead) and starts
 * fetching their memo slots. */
static int split_new(struct ember_stack_text *t, const char *s, size_t n, size_t k,
                     const struct split_ahead *ahead)
{
    size_t from = k ? t->ends[k - 1] + 1 : 0;
    if (n == 0 || from > n)
        return 0;
    size_t room = ahead->names ? ahead->names : k + (n - from) + EMBER_SPLIT_SLACK, got;
    if (EMBER_VEC_RESERVE(t->ends, t->ecap, room) < 0 ||
        EMBER_VEC_RESERVE(t->hashes, t->hcap, room) < 0)
        return -ENOMEM;
    if (ahead->names) { /* the first k are the previous stack's, as here */
        got = ahead->names > k ? ahead->names - k : 0;
        memcpy(t->ends + k, ahead->ends + k, got * sizeof(*t->ends));
        memcpy(t->hashes + k, ahead->hashes + k, got * sizeof(*t->hashes));
    } else {
        got = split_hash(t->sep, s, from, n, t->ends + k, t->hashes + k);
    }
    if (EMBER_VEC_RESERVE(t->ids, t->icap, k + got) < 0 ||
        EMBER_VEC_RESERVE(t->nodes, t->ncap, k + got) < 0)
        return -ENOMEM;
    for (size_t i = k; i < k + got; i++)
        ember_name_cache_prefetch(&t->names, t->hashes[i]);
    t->nframes = k + got;
    return 0;
}

/* The frames of a stack not seen before, reusing the previous stack's
 * nodes where the text matches. */
static int add_frames(struct ember_stack_text *t, const char *s, size_t n,
                      const struct split_ahead *ahead, uint32_t *leaf)
{
    /* Frames shared with the previous stack: the same bytes, ending at the
     * same place in both. */
    size_t same = 0, lim = n < t->prev_len ? n : t->prev_len, k = 0;
    while (same < lim && s[same] == t->prev[same])
        same++;
    while (k < t->nframes && t->ends[k] <= same && (t->ends[k] == n || s[t->ends[k]] == t->sep))
        k++;
    t->nframes = k;
    int err = split_new(t, s, n, k, ahead);
    for (size_t i = k; i < t->nframes && !err; i++) {
        size_t pos = i ? t->ends[i - 1] + 1 : 0;
        err = ember_name_cache_intern(&t->names, &t->p->frames, s + pos, t->ends[i] - pos,
                                      t->hashes[i], &t->ids[i]);
    }
    if (!err)
        err = ember_profile_child_path(t->p, k ? t->nodes[k - 1] : EMBER_ROOT, t->ids + k,
                                       t->nframes - k, 1, t->nodes + k, leaf);
    if (err) {
        t->nframes = k; /* the nodes of the others are not known */
        return err;
    }
    if (EMBER_VEC_RESERVE(t->prev, t->prev_cap, n + 1) < 0) {
        t->nframes = 0; /* prev no longer spells them */
        return -ENOMEM;
    }
    memcpy(t->prev, s, n);
    t->prev_len = n;
    return 0;
}

int ember_stack_text_add_split(struct ember_stack_text *t, const char *s, size_t n,
                               const uint64_t key[2], const size_t *ends, const uint64_t *hashes,
                               size_t names, uint32_t *leaf)
{
    if (n == 0) { /* no frames: the root's (not a frame of empty name) */
        *leaf = EMBER_ROOT;
        return 0;
    }
    uint64_t own[2];
    if (!key) {
        ember_stack_text_key(s, n, own);
        key = own;
    }
    if (ember_stack_cache_get(&t->stacks, key[0], key[1], leaf))
        return 0;
    const struct split_ahead ahead = {ends, hashes, names};
    int err = add_frames(t, s, n, &ahead, leaf);
    if (!err)
        ember_stack_cache_put(&t->stacks, key[0], key[1], *leaf);
    return err;
}

int ember_stack_text_add(struct ember_stack_text *t, const char *s, size_t n, const uint64_t key[2],
                         uint32_t *leaf)
{
    return ember_stack_text_add_split(t, s, n, key, NULL, NULL, 0, leaf);
}
