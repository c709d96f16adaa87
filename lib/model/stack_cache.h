/*
 * stack_cache.h - a memo from whole stacks to their trie nodes
 * (library-internal).
 *
 * Inserting a stack into the trie costs one hash lookup per frame, each a
 * likely cache miss once the profile is large. Samples repeat stacks, so
 * readers ask this cache first: one lookup of the stack's 128-bit hash.
 * Stacks are identified by that hash alone (two distinct stacks would have
 * to collide on 128 bits, about 2^-100 for a million stacks: far below the
 * odds of a memory error), which keeps the cache small: 24 bytes a stack.
 * It only speeds things up, and stops growing at a fixed size, so memory
 * stays bounded whatever the input.
 *
 * A stack the cache does not know often shares its outer frames with the
 * previous one (the same thread, the same caller): those frames' nodes are
 * taken from the previous stack's path, and the trie is only asked for the
 * rest, all of it at once (ember_profile_child_path).
 */
#ifndef EMBER_MODEL_STACK_CACHE_H
#define EMBER_MODEL_STACK_CACHE_H

#include "model/profile_impl.h"

struct stack_slot {
    uint64_t lo, hi;
    uint32_t node; /* 0: empty slot (the root is never a stack's node) */
};

struct ember_stack_cache {
    struct stack_slot *slots;
    uint32_t mask, count;
    /* the previous stack's frames, root first, and their nodes */
    uint32_t *path, *nodes;
    size_t plen, pcap, ncap;
};

int ember_stack_cache_init(struct ember_stack_cache *c);
void ember_stack_cache_release(struct ember_stack_cache *c);

/* Lookup and insertion by a stack's 128-bit hash, for readers that hash the
 * stack's text (folded lines). get returns false when the stack is unknown. */
bool ember_stack_cache_get(const struct ember_stack_cache *c, uint64_t lo, uint64_t hi,
                           uint32_t *node);
/* Starts fetching the slot a get or put of the hash lo will read. */
static inline void ember_stack_cache_prefetch(const struct ember_stack_cache *c, uint64_t lo)
{
    __builtin_prefetch(&c->slots[(uint32_t)lo & c->mask]);
}
void ember_stack_cache_put(struct ember_stack_cache *c, uint64_t lo, uint64_t hi, uint32_t node);

/* The node of the stack whose outermost frame is root and whose other frames
 * are frames[n-1] (outermost) down to frames[0] (the leaf), creating it in p
 * as needed. */
int ember_stack_cache_node(struct ember_stack_cache *c, struct ember_profile *p, uint32_t root,
                           const uint32_t *frames, size_t n, uint32_t *node);

#endif
