/*
 * profile_tree.c - a profile's stack tree: its nodes, the child table that
 * finds a node from (parent, frame), and whole stacks added at once (with
 * the memo of stacks seen).
 *
 * Invariants (profile_impl.h): a node's parent has a smaller index; a child
 * sits in the first bucket with room from its home bucket, the buckets it
 * passed marked 'over'; child_hash[n] is node n's path hash.
 */
#include "model/profile_impl.h"
#include "model/stack_cache.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

enum {
    PATH_AHEAD = 8, /* slots fetched ahead of the lookup that needs them */
};

/* Room for need nodes, their new weights zero from index `from` on. */
static int node_room(struct ember_profile *p, size_t need, size_t from)
{
    if (need <= p->ncap)
        return 0;
    size_t cap = p->ncap;
    if (EMBER_VEC_RESERVE(p->nodes, cap, need) < 0)
        return -ENOMEM;
    for (unsigned v = 0; v < p->nvalues; v++) {
        int64_t *w = realloc(p->self[v], cap * sizeof(*w));
        if (!w)
            return -ENOMEM;
        memset(w + from, 0, (cap - from) * sizeof(*w));
        p->self[v] = w;
    }
    p->ncap = cap;
    return 0;
}

int ember_profile_node_reserve(struct ember_profile *p, size_t need)
{
    return node_room(p, need, p->ncap);
}

int ember_profile_node_reserve_unzeroed(struct ember_profile *p, size_t need)
{
    return node_room(p, need, need);
}

/* Puts node n, whose path hash is h, in the first free slot from its home
 * bucket, marking the full buckets it passes. */
static void child_place(struct ember_child_bucket *b, uint32_t mask, uint32_t h, uint32_t parent,
                        uint32_t frame, uint32_t n)
{
    for (uint32_t i = h & mask;; i = (i + 1) & mask) {
        for (unsigned j = 0; j < EMBER_CHILD_BUCKET; j++)
            if (b[i].slot[j].node == 0) {
                b[i].slot[j] = (struct ember_child_slot){parent, frame, n};
                return;
            }
        b[i].over = 1;
    }
}

/* Doubles the child table. The old buckets are read in order, so the
 * children land in the new one in order too (at home or home + old size):
 * only the path hashes are read out of order, fetched ahead. */
static int child_grow(struct ember_profile *p)
{
    enum { AHEAD = 4 };
    uint32_t old = p->child_mask + 1, nb = old * 2;
    struct ember_child_bucket *b = nb ? ember_table_calloc(nb, sizeof(*b)) : NULL;
    if (!b)
        return -ENOMEM;
    const struct ember_child_bucket *ob = p->child_buckets;
    for (uint32_t i = 0; i < old; i++) {
        if (i + AHEAD < old)
            for (unsigned j = 0; j < EMBER_CHILD_BUCKET; j++)
                __builtin_prefetch(&p->child_hash[ob[i + AHEAD].slot[j].node]);
        for (unsigned j = 0; j < EMBER_CHILD_BUCKET && ob[i].slot[j].node; j++) {
            const struct ember_child_slot *s = &ob[i].slot[j];
            child_place(b, nb - 1, p->child_hash[s->node], s->parent, s->frame, s->node);
        }
    }
    free(p->child_buckets);
    p->child_buckets = b;
    p->child_mask = nb - 1;
    return 0;
}

int ember_profile_children_presize(struct ember_profile *p, size_t nodes, bool *fresh)
{
    uint64_t nb = (uint64_t)p->child_mask + 1;
    while ((uint64_t)nodes * 4 > nb * EMBER_CHILD_BUCKET * 3)
        nb *= 2;
    *fresh = nb != (uint64_t)p->child_mask + 1;
    if (!*fresh)
        return 0;
    struct ember_child_bucket *b = nb <= UINT32_MAX ? ember_table_alloc(nb, sizeof(*b)) : NULL;
    if (!b)
        return -ENOMEM;
    free(p->child_buckets);
    p->child_buckets = b;
    p->child_mask = (uint32_t)(nb - 1);
    return 0;
}

bool ember_profile_child_place_within(struct ember_profile *p, uint32_t n, uint32_t lo, uint32_t hi)
{
    struct ember_child_bucket *b = p->child_buckets;
    for (uint32_t i = p->child_hash[n] & p->child_mask; i >= lo && i < hi; i++) {
        for (unsigned j = 0; j < EMBER_CHILD_BUCKET; j++)
            if (b[i].slot[j].node == 0) {
                b[i].slot[j] = (struct ember_child_slot){p->nodes[n].parent, p->nodes[n].frame, n};
                return true;
            }
        b[i].over = 1;
    }
    return false;
}

void ember_profile_child_place(struct ember_profile *p, uint32_t n)
{
    child_place(p->child_buckets, p->child_mask, p->child_hash[n], p->nodes[n].parent,
                p->nodes[n].frame, n);
}

int ember_profile_child_insert(struct ember_profile *p, uint32_t h, uint32_t parent, uint32_t frame,
                               uint32_t *node)
{
    if (parent >= p->nnodes || frame >= p->frames.count)
        return -EINVAL;
    if (p->nnodes == UINT32_MAX)
        return -ERANGE;
    uint32_t n = p->nnodes;
    /* at most 3/4 full: a lookup mostly reads its home bucket alone */
    if (ember_profile_node_reserve(p, (size_t)n + 1) < 0 ||
        EMBER_VEC_RESERVE(p->child_hash, p->child_hash_cap, (size_t)n + 1) < 0 ||
        ((uint64_t)n * 4 > (uint64_t)(p->child_mask + 1) * EMBER_CHILD_BUCKET * 3 &&
         child_grow(p) < 0))
        return -ENOMEM;
    p->nodes[n].frame = frame;
    p->nodes[n].parent = parent;
    p->child_hash[n] = h;
    p->nnodes++;
    child_place(p->child_buckets, p->child_mask, h, parent, frame, n);
    *node = n;
    return 0;
}

int ember_profile_child(struct ember_profile *p, uint32_t parent, uint32_t frame, uint32_t *node)
{
    return ember_profile_child_fast(p, parent, frame, node);
}

int ember_profile_child_path(struct ember_profile *p, uint32_t parent, const uint32_t *frames,
                             size_t n, int step, uint32_t *nodes, uint32_t *leaf)
{
    if (parent >= p->nnodes)
        return -EINVAL;
    /* The path hashes of the next PATH_AHEAD frames are computed, and their
     * slots fetched, while the current one is looked up: the misses overlap. */
    uint32_t ring[PATH_AHEAD];
    uint32_t h = p->child_hash[parent];
    size_t ahead = 0;
    bool fresh = false; /* a node just made has no children yet */
    for (size_t i = 0; i < n; i++) {
        for (; ahead < n && ahead < i + PATH_AHEAD; ahead++) {
            h = ember_child_step(h, frames[step > 0 ? ahead : n - 1 - ahead]);
            ring[ahead % PATH_AHEAD] = h;
            /* and the next bucket, where a child goes when its own is full */
            __builtin_prefetch(&p->child_buckets[h & p->child_mask]);
            __builtin_prefetch(&p->child_buckets[(h + 1) & p->child_mask]);
        }
        uint32_t frame = frames[step > 0 ? i : n - 1 - i], hi = ring[i % PATH_AHEAD];
        uint32_t before = p->nnodes;
        int err = fresh ? ember_profile_child_insert(p, hi, parent, frame, &parent)
                        : ember_profile_child_at(p, hi, parent, frame, &parent);
        if (err)
            return err;
        fresh = p->nnodes != before;
        if (nodes)
            nodes[i] = parent;
    }
    *leaf = parent;
    return 0;
}

uint32_t ember_profile_node_count(const struct ember_profile *p)
{
    return p->nnodes;
}

uint32_t ember_profile_child_lookup(const struct ember_profile *p, uint32_t parent, uint32_t frame)
{
    return parent < p->nnodes ? ember_profile_child_find(p, parent, frame) : 0;
}

uint32_t ember_profile_node_frame(const struct ember_profile *p, uint32_t node)
{
    return p->nodes[node].frame;
}

uint32_t ember_profile_node_parent(const struct ember_profile *p, uint32_t node)
{
    return p->nodes[node].parent;
}

int64_t ember_profile_self(const struct ember_profile *p, uint32_t node, unsigned value)
{
    return value < p->nvalues && node < p->nnodes ? p->self[value][node] : 0;
}

const int64_t *ember_profile_self_values(const struct ember_profile *p, unsigned value)
{
    return value < p->nvalues ? p->self[value] : NULL;
}

int64_t ember_profile_total(const struct ember_profile *p, unsigned value)
{
    return value < p->nvalues ? p->total[value] : 0;
}

/* The memo of whole stacks (samples repeat them), made on first use; NULL
 * when it cannot be (it only speeds things up). */
static struct ember_stack_cache *stack_memo(struct ember_profile *p)
{
    if (p->stacks || p->no_stacks)
        return p->stacks;
    p->stacks = malloc(sizeof(*p->stacks));
    if (!p->stacks || ember_stack_cache_init(p->stacks) < 0) {
        free(p->stacks);
        p->stacks = NULL;
        p->no_stacks = true;
    }
    return p->stacks;
}

int ember_profile_add_stack(struct ember_profile *p, const uint32_t *frames, size_t n,
                            enum ember_stack_order order, const int64_t *weights, uint32_t *node)
{
    if (n == 0)
        return -EINVAL;
    uint32_t at;
    struct ember_stack_cache *memo = order == EMBER_LEAF_FIRST ? stack_memo(p) : NULL;
    int err = memo ? ember_stack_cache_node(memo, p, frames[n - 1], frames, n - 1, &at)
                   : ember_profile_child_path(p, EMBER_ROOT, frames, n,
                                              order == EMBER_ROOT_FIRST ? 1 : -1, NULL, &at);
    if (err)
        return err;
    for (unsigned v = 0; weights && v < p->nvalues; v++) {
        err = weights[v] ? ember_profile_add(p, at, v, weights[v]) : 0;
        if (err)
            return err;
    }
    if (node)
        *node = at;
    return 0;
}
