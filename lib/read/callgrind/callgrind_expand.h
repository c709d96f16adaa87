/*
 * callgrind_expand.h - the state of a call graph's expansion into stacks,
 * shared by callgrind_stacks.c (the expansion) and callgrind_components.c
 * (the graph's strongly connected components, and the tree each is drawn
 * as) (library-internal).
 *
 * Invariants: each component's members lie together in members; a
 * function's tree, when cached, lists its component's members from it,
 * then their parents' positions; at most TREE_CACHE members are cached.
 */
#ifndef EMBER_READ_CALLGRIND_EXPAND_H
#define EMBER_READ_CALLGRIND_EXPAND_H

#include "read/callgrind/callgrind_impl.h"

#include <stddef.h>
#include <stdint.h>

enum {
    EXPAND_BUDGET = 1 << 20, /* nodes drawn before components drawn before become leaves */
    TREE_CACHE = 1 << 24     /* members kept in cached component trees */
};

/* A strongly connected component of the call graph. */
struct comp {
    __int128 exclusive;   /* its members' self costs and calls out of it */
    __int128 incoming;    /* calls into it from outside */
    int64_t best;         /* the largest total - incoming among its members */
    uint32_t entry;       /* that member: where a root enters the component */
    uint32_t first, size; /* its members: members[first .. first + size) */
    bool rooted;
};

/* Per function, while expanding. */
struct fstate {
    uint32_t comp, frame;
    uint32_t *tree; /* its component drawn from it: members, then their parents' positions */
    uint64_t mark;  /* placed in the tree being built */
    bool frame_known, expanded, reached;
};

/* A drawn function whose calls out of its component are still to follow. */
struct visit {
    uint32_t func, edge, node; /* edge: the next call to look at */
    double phi;                /* the fraction of its component's activity here */
};

/* The part of its function's self cost that one node should get. */
struct share {
    uint32_t func, node;
    double part;
};

/* A call offered to Prim's algorithm: a member not yet placed, its caller's
 * position in the tree, the call's cost. */
struct offer {
    int64_t cost;
    uint32_t member, from;
};

struct expansion {
    const struct cg_graph *g;
    const struct cg_out *out;
    struct fstate *fs;
    struct comp *comps;
    uint32_t *members; /* the components' members, each component's together */
    size_t ncomps, nmembers;
    struct visit *stack;
    size_t depth, cap;
    struct share *shares;
    size_t nshares, scap;
    struct offer *heap;
    size_t nheap, hcap;
    uint32_t *nodes; /* the nodes of the component being drawn */
    size_t ncap;
    uint32_t *cached; /* the functions with a tree */
    size_t ncached, cached_members, cachecap;
    uint64_t visits, marks;
    bool warned;
};

/* Finds the graph's components (Tarjan's algorithm), into comps and
 * members; then their activity, incoming cost and entry. */
int ember_callgrind_find_components(struct expansion *x);
void ember_callgrind_measure_components(struct expansion *x);
/* The tree of root's component (size members) drawn from root, built or
 * cached; and the cached trees dropped. */
int ember_callgrind_tree_of(struct expansion *x, uint32_t root, uint32_t size,
                            const uint32_t **tree);
void ember_callgrind_drop_trees(struct expansion *x);

#endif
