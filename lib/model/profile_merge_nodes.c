/*
 * profile_merge_nodes.c - the nodes of threads' profiles merged on several
 * threads (profile_merge.c copies modules and frames, and says why and
 * the steps).
 */
#include "model/profile_merge_impl.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A path's slot: key 0 is free, else TAKEN | (parent's slot + 1) << 32 |
 * frame (the root's children: 0 << 32); first is ~(rank << 32 | node) of
 * the node that keeps it (step 1), then its number in dst (step 3 on). */
struct path_slot {
    uint64_t key;
    uint64_t first;
};

#define TAKEN (1ull << 63)

struct merge {
    struct ember_profile *dst;
    struct merge_source *s;
    struct merge_crew crew;
    unsigned n;
    struct merge_plan plan; /* of nodes */
    struct path_slot *t;
    uint32_t mask;
    uint32_t *dst_slot;  /* dst's own nodes' slots */
    bool fresh;          /* dst's child table is new: every node placed */
    uint32_t **deferred; /* per thread: nodes placed after the threads */
    size_t *ndeferred, *dcap;
};

/* The slot of the path (parent's slot, frame), claimed if nobody has;
 * NO_SLOT if the table is too full (the estimate was short). */
static uint32_t claim(struct merge *m, uint32_t h, uint32_t parent, uint32_t frame)
{
    enum { PROBES = 4096 };
    uint64_t key = TAKEN | (uint64_t)(uint32_t)(parent + 1) << 32 | frame;
    for (uint32_t i = h & m->mask, n = 0; n < PROBES; i = (i + 1) & m->mask, n++) {
        uint64_t cur = __atomic_load_n(&m->t[i].key, __ATOMIC_ACQUIRE);
        if (cur == 0 && __atomic_compare_exchange_n(&m->t[i].key, &cur, key, false,
                                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return i;
        if (cur == key)
            return i;
    }
    return NO_SLOT;
}

/* The first node s made in its piece j (its last is marks[j].nodes - 1). */
static uint32_t piece_start(const struct merge_source *s, size_t j)
{
    return j && s->marks[j - 1].nodes > 1 ? s->marks[j - 1].nodes : 1;
}

/* Each node k that s made in its piece j, in s's order. */
#define FOR_EACH_NODE(s, j, k)                                                                     \
    for (size_t j = 0; j < (s)->nmarks; j++)                                                       \
        for (uint32_t k = piece_start(s, j); k < (s)->marks[j].nodes; k++)

/* The table's size comes from an estimate of the distinct paths (a
 * HyperLogLog sketch of their hashes): the sum of the sources' nodes is
 * that many times too large where each source has nearly every stack. */
static void sketch_add(uint8_t *reg, uint32_t h)
{
    uint64_t x = ember_hash_u64(h);
    uint8_t rank = (uint8_t)(__builtin_clzll(x << SKETCH_BITS | 1ull << (SKETCH_BITS - 1)) + 1);
    uint8_t *r = &reg[x >> (64 - SKETCH_BITS)];
    if (*r < rank)
        *r = rank;
}

static double sketch_count(const uint8_t *reg)
{
    double sum = 0, m = SKETCH;
    unsigned zeros = 0;
    for (unsigned i = 0; i < SKETCH; i++) {
        sum += 1.0 / (double)(1ull << reg[i]);
        zeros += reg[i] == 0;
    }
    double e = 0.7213 / (1 + 1.079 / m) * m * m / sum;
    return e < 2.5 * m && zeros ? m * log(m / zeros) : e;
}

/* Step 0: s's path hashes, in dst's frames, and its sketch of them. */
static int hash_source(struct merge *m, struct merge_source *s)
{
    const struct ember_profile *p = s->p;
    s->hash[0] = m->dst->child_hash[0];
    memset(s->sketch, 0, sizeof(s->sketch));
    FOR_EACH_NODE(s, j, k)
    {
        s->hash[k] = ember_child_step(s->hash[p->nodes[k].parent], s->frames[p->nodes[k].frame]);
        sketch_add(s->sketch, s->hash[k]);
        for (unsigned v = 0; v < p->nvalues; v++)
            s->negative |= p->self[v][k] < 0;
    }
    return 0;
}

/* The slot of s's node k + AHEAD fetched while k's is used: each step
 * below reads the table at random, and overlapping the misses makes it
 * several times faster. */
enum { AHEAD = 8 };

/* The end of s's nodes its marks cover: those with a hash and a slot. */
static uint32_t marked(const struct merge_source *s)
{
    return s->nmarks ? s->marks[s->nmarks - 1].nodes : 0;
}

static void fetch_home(const struct merge *m, const struct merge_source *s, uint32_t k)
{
    if (k + AHEAD < marked(s))
        __builtin_prefetch(&m->t[s->hash[k + AHEAD] & m->mask], 1);
}

static void fetch_slot(const struct merge *m, const struct merge_source *s, uint32_t k)
{
    if (k + AHEAD < marked(s))
        __builtin_prefetch(&m->t[s->slot[k + AHEAD] & ~OWNED], 1);
}

/* Step 1: s's nodes find their slots and leave their claim. */
static int claim_source(struct merge *m, struct merge_source *s)
{
    const struct ember_profile *p = s->p;
    s->slot[0] = NO_SLOT;
    FOR_EACH_NODE(s, j, k)
    {
        uint64_t r = s->rank[j];
        fetch_home(m, s, k);
        uint32_t frame = s->frames[p->nodes[k].frame];
        if ((s->slot[k] = claim(m, s->hash[k], s->slot[p->nodes[k].parent], frame)) == NO_SLOT)
            return 1; /* the table is full: the serial path */
        ember_merge_keep_first(&m->t[s->slot[k]].first, ~(r << 32 | k));
    }
    return 0;
}

/* Step 2: the nodes that kept their slots, counted per piece. */
static int count_source(struct merge *m, struct merge_source *s)
{
    FOR_EACH_NODE(s, j, k)
    {
        fetch_slot(m, s, k);
        if (m->t[s->slot[k]].first == ~((uint64_t)s->rank[j] << 32 | k)) {
            s->slot[k] |= OWNED;
            m->plan.count[s->rank[j]]++;
        }
    }
    return 0;
}

/* Step 3, the caller's: each piece's first number, room for them all. */
__attribute__((noinline)) static int plan_nodes(struct merge *m)
{
    int err = ember_merge_number_pieces(&m->plan, UINT32_MAX);
    if (err)
        return err;
    struct ember_profile *dst = m->dst;
    uint32_t next = m->plan.before + m->plan.added;
    for (uint32_t g = 1; g < m->plan.before; g++)
        m->t[m->dst_slot[g]].first = g;
    if (ember_profile_node_reserve_unzeroed(dst, next) < 0 ||
        EMBER_VEC_RESERVE(dst->child_hash, dst->child_hash_cap, next) < 0 ||
        ember_profile_children_presize(dst, next, &m->fresh) < 0)
        return -ENOMEM;
    return 0;
}

/* Step 3: the new nodes numbered, in their slots for the other sources
 * and in s's map. */
static int number_source(struct merge *m, struct merge_source *s)
{
    FOR_EACH_NODE(s, j, k)
    {
        fetch_slot(m, s, k);
        if (s->slot[k] & OWNED)
            m->t[s->slot[k] & ~OWNED].first = s->nodes[k] = m->plan.count[s->rank[j]]++;
    }
    return 0;
}

/* Step 4: every node's number; the new ones written with their weights. */
static int fill_source(struct merge *m, struct merge_source *s)
{
    struct ember_profile *dst = m->dst;
    const struct ember_profile *p = s->p;
    FOR_EACH_NODE(s, j, k)
    {
        if (k + AHEAD < marked(s) && !(s->slot[k + AHEAD] & OWNED))
            __builtin_prefetch(&m->t[s->slot[k + AHEAD]]);
        if (!(s->slot[k] & OWNED)) {
            s->nodes[k] = (uint32_t)m->t[s->slot[k]].first;
            continue;
        }
        uint32_t g = s->nodes[k];
        dst->nodes[g].frame = s->frames[p->nodes[k].frame];
        dst->nodes[g].parent = s->nodes[p->nodes[k].parent];
        dst->child_hash[g] = s->hash[k];
        for (unsigned v = 0; v < dst->nvalues; v++)
            dst->self[v][g] = 0;
        for (unsigned v = 0; v < p->nvalues; v++)
            dst->self[s->values[v]][g] = p->self[v][k];
    }
    return 0;
}

static bool add_shared(int64_t *to, int64_t w)
{
    int64_t cur = __atomic_load_n(to, __ATOMIC_RELAXED), sum;
    do {
        if (__builtin_add_overflow(cur, w, &sum))
            return false;
    } while (!__atomic_compare_exchange_n(to, &cur, sum, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return true;
}

/* Step 5: the weights of nodes another piece made, and s's sums. */
static int weigh_source(struct merge *m, struct merge_source *s)
{
    struct ember_profile *dst = m->dst;
    const struct ember_profile *p = s->p;
    FOR_EACH_NODE(s, j, k)
    {
        for (unsigned v = 0; v < p->nvalues; v++) {
            int64_t w = p->self[v][k];
            unsigned dv = s->values[v];
            if (!w)
                continue;
            s->weighed = true;
            if (__builtin_add_overflow(s->sum[dv], w, &s->sum[dv]) ||
                (!(s->slot[k] & OWNED) && !add_shared(&dst->self[dv][s->nodes[k]], w)))
                return -ERANGE;
        }
    }
    return 0;
}

/* [*lo, *hi): thread t's share of n things. */
static void share(uint64_t n, unsigned t, unsigned threads, uint64_t *lo, uint64_t *hi)
{
    *lo = n * t / threads;
    *hi = n * (t + 1) / threads;
}

/* Step 5: thread t's range of home buckets filled with the new nodes, or
 * with all of them in a new table. */
static int place_range(struct merge *m, unsigned t)
{
    struct ember_profile *dst = m->dst;
    uint64_t lo, hi;
    share((uint64_t)dst->child_mask + 1, t, m->crew.threads, &lo, &hi);
    for (uint32_t g = m->fresh ? 1 : m->plan.before; g < m->plan.before + m->plan.added; g++) {
        uint32_t home = dst->child_hash[g] & dst->child_mask;
        if (home < lo || home >= hi ||
            ember_profile_child_place_within(dst, g, (uint32_t)lo, (uint32_t)hi))
            continue;
        if (EMBER_VEC_RESERVE(m->deferred[t], m->dcap[t], m->ndeferred[t] + 1) < 0)
            return -ENOMEM;
        m->deferred[t][m->ndeferred[t]++] = g;
    }
    return 0;
}

static void fail(struct merge *m, int err)
{
    ember_crew_fail(&m->crew, err);
}

static int failed(struct merge *m)
{
    return ember_crew_failed(&m->crew);
}

/* dst's own nodes in the table, kept by none of the pieces; their numbers
 * go in once the pieces have counted theirs (step 3). */
__attribute__((noinline)) static int seed_nodes(struct merge *m)
{
    const struct ember_profile *dst = m->dst;
    uint32_t *slot = m->dst_slot;
    slot[0] = NO_SLOT;
    for (uint32_t g = 1; g < dst->nnodes; g++) {
        slot[g] = claim(m, dst->child_hash[g], slot[dst->nodes[g].parent], dst->nodes[g].frame);
        if (slot[g] == NO_SLOT)
            return 1;
        m->t[slot[g]].first = UINT64_MAX;
    }
    return 0;
}

/* Thread t's share of a table zeroed. */
static void zero_share(void *table, uint64_t n, size_t size, unsigned t, unsigned threads)
{
    uint64_t lo, hi;
    share(n, t, threads, &lo, &hi);
    memset((char *)table + lo * size, 0, (hi - lo) * size);
}

/* Step 0, the caller's: the table, sized for the distinct paths the
 * sketches count (and a quarter more), at most two thirds full; 1 for the
 * serial path (a negative weight). */
__attribute__((noinline)) static int size_table(struct merge *m)
{
    uint8_t reg[SKETCH] = {0};
    uint64_t sum = m->plan.before, most = 0;
    for (unsigned i = 0; i < m->n; i++) {
        const struct merge_source *s = &m->s[i];
        uint64_t nodes = marked(s);
        if (s->negative)
            return 1;
        for (unsigned k = 0; k < SKETCH; k++)
            reg[k] = s->sketch[k] > reg[k] ? s->sketch[k] : reg[k];
        sum += nodes;
        most = nodes > most ? nodes : most;
    }
    uint64_t need = (uint64_t)(sketch_count(reg) * 1.25) + m->plan.before, slots = 1024;
    need = need < most + m->plan.before ? most + m->plan.before : need > sum ? sum : need;
    while (slots < need + need / 2)
        slots *= 2;
    if (slots >= OWNED) /* a slot's number + 1 fits 31 bits, under TAKEN */
        return -ERANGE;
    m->mask = (uint32_t)(slots - 1);
    m->t = ember_table_alloc(slots, sizeof(*m->t));
    return m->t ? 0 : -ENOMEM;
}

/* Thread t's sources, t, t + threads, ..., through a step (its failure
 * kept), then the others awaited. */
static void each_source(struct merge *m, unsigned t,
                        int (*step)(struct merge *m, struct merge_source *s))
{
    for (unsigned i = t; i < m->n && !failed(m); i += m->crew.threads)
        fail(m, step(m, &m->s[i]));
    pthread_barrier_wait(&m->crew.bar);
}

/* A step of the caller's thread alone, the others waiting (each such
 * step a call of its own, that profiles count it serial:
 * bench/perfdata_phases.py). */
static void by_caller(struct merge *m, unsigned t, int (*step)(struct merge *m))
{
    if (t == 0)
        fail(m, step(m));
    pthread_barrier_wait(&m->crew.bar);
}

/* Thread t's part of the steps. A failure or the serial path, known after
 * a barrier, ends every thread there. */
static void run(void *ctx, unsigned t)
{
    struct merge *m = ctx;
    each_source(m, t, hash_source);
    by_caller(m, t, size_table);
    if (failed(m))
        return;
    zero_share(m->t, (uint64_t)m->mask + 1, sizeof(*m->t), t, m->crew.threads);
    pthread_barrier_wait(&m->crew.bar);
    if (m->plan.before > 1)
        by_caller(m, t, seed_nodes);
    each_source(m, t, claim_source);
    if (failed(m))
        return;
    each_source(m, t, count_source);
    by_caller(m, t, plan_nodes);
    if (failed(m))
        return;
    if (m->fresh)
        zero_share(m->dst->child_buckets, (uint64_t)m->dst->child_mask + 1,
                   sizeof(*m->dst->child_buckets), t, m->crew.threads);
    each_source(m, t, number_source);
    each_source(m, t, fill_source);
    each_source(m, t, weigh_source);
    fail(m, place_range(m, t));
}

/* The per-node and per-piece arrays (the table comes in step 0). */
static int merge_init(struct merge *m, unsigned threads)
{
    for (unsigned i = 0; i < m->n; i++) {
        struct merge_source *s = &m->s[i];
        s->hash = malloc((size_t)s->p->nnodes * sizeof(*s->hash));
        s->slot = malloc((size_t)s->p->nnodes * sizeof(*s->slot));
        if (!s->hash || !s->slot)
            return -ENOMEM;
    }
    m->dst_slot = malloc((size_t)m->dst->nnodes * sizeof(*m->dst_slot));
    m->plan.count = calloc(m->plan.npieces + 1, sizeof(*m->plan.count));
    m->deferred = calloc(threads, sizeof(*m->deferred));
    m->ndeferred = calloc(threads, sizeof(*m->ndeferred));
    m->dcap = calloc(threads, sizeof(*m->dcap));
    return m->dst_slot && m->plan.count && m->deferred && m->ndeferred && m->dcap ? 0 : -ENOMEM;
}

static void merge_release(struct merge *m, unsigned threads)
{
    for (unsigned t = 0; m->deferred && t < threads; t++)
        free(m->deferred[t]);
    free(m->deferred);
    free(m->ndeferred);
    free(m->dcap);
    free(m->plan.count);
    free(m->dst_slot);
    free(m->t);
}

/* The caller's end: the nodes left out of the ranges placed, the counts
 * and totals. */
static int merge_finish(struct merge *m)
{
    struct ember_profile *dst = m->dst;
    for (unsigned t = 0; t < m->crew.threads; t++)
        for (size_t i = 0; i < m->ndeferred[t]; i++)
            ember_profile_child_place(dst, m->deferred[t][i]);
    dst->nnodes += m->plan.added;
    for (unsigned i = 0; i < m->n; i++) {
        dst->weighed |= m->s[i].weighed;
        for (unsigned v = 0; v < dst->nvalues; v++)
            if (__builtin_add_overflow(dst->total[v], m->s[i].sum[v], &dst->total[v]))
                return -ERANGE;
    }
    return 0;
}

/* The nodes of every piece on up to `threads` threads: 1 when they must
 * take the serial path (a negative weight), dst untouched. */
int ember_merge_nodes(struct ember_profile *dst, struct merge_source *s, unsigned n, size_t npieces,
                      unsigned threads)
{
    struct merge m = {
        .dst = dst, .s = s, .n = n, .plan = {.npieces = npieces, .before = dst->nnodes}};
    int err = merge_init(&m, threads);
    if (!err) {
        ember_crew_run(&m.crew, threads, run, &m);
        err = m.crew.err;
    }
    if (!err)
        err = merge_finish(&m);
    merge_release(&m, threads);
    return err;
}
