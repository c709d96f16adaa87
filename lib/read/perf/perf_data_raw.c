/*
 * perf_data_raw.c - the trie of raw stacks: raw frames (a map and an
 * address) and the maps they are in, numbered on first sight, and nodes
 * keyed by (parent, frame), or by root (event, thread, command) under node
 * 0; a worker's overlay on the reader's trie, and its merge into it,
 * which keeps the numbers one thread reading every sample would give.
 *
 * Invariants: a raw node's parent was made before it; an overlay only
 * reads its base, and numbers what it makes from PD_OVER (so nodes, frames
 * and maps stay under 2^31); a frame slot (and a child's, u64map.h) is
 * published by its id, written last and read first, so that overlays may
 * read a trie that a merge adds to, where pd_raw_room gave it room first;
 * the tasks' pd_map.ref is the reader's trie's number, written by that
 * trie alone; a merge copies what its overlay made since the last one,
 * maps, frames, then nodes, each in the overlay's order.
 */
#include "read/perf/perf_data_build.h"
#include "base/hash.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

static int new_node(struct pd_raw *raw, uint32_t parent, uint32_t key, uint32_t *node);

/* The tables, which an overlay empties after each merge. */
static int init_tables(struct pd_raw *raw)
{
    raw->fmask = 1023;
    raw->fslots = calloc(raw->fmask + 1, sizeof(*raw->fslots));
    int err = raw->fslots ? ember_u64map_init(&raw->children) : -ENOMEM;
    if (!err)
        err = ember_strmap_init(&raw->mapref_ids);
    if (!err)
        err = ember_strmap_init(&raw->root_ids);
    return err;
}

static void free_root_stacks(struct pd_raw *raw)
{
    for (size_t i = 0; i < raw->nroots; i++) {
        free(raw->roots[i].stack.last);
        free(raw->roots[i].stack.path);
    }
}

static void forget_prefixes(struct pd_raw *raw)
{
    memset(raw->root_hot, 0, sizeof(raw->root_hot));
    for (size_t i = 0; i < ROOT_HOT; i++)
        raw->prefix_hot[i].generation = UINT64_MAX;
}

int pd_raw_init(struct pd_raw *raw, struct pd_tasks *t, const struct pd_raw *base)
{
    memset(raw, 0, sizeof(*raw));
    raw->t = t;
    raw->base = base;
    forget_prefixes(raw);
    uint32_t root;
    int err = init_tables(raw);
    if (!err && !base)
        err = new_node(raw, UINT32_MAX, UINT32_MAX, &root); /* node 0: the root */
    return err;
}

/* A string map emptied (rare in an overlay: a map or root new in a batch). */
static int strmap_empty(struct ember_strmap *m)
{
    if (m->count == 0)
        return 0;
    ember_strmap_release(m);
    return ember_strmap_init(m);
}

static struct frame_slot *frame_find(const struct pd_raw *raw, uint32_t mapref, uint64_t ip);

/* Whether emptying a table of n entries in size slots is cheaper entry by
 * entry: a table keeps the size of its busiest batch (the first ones make
 * most nodes), and an fp read empties each overlay after each of its 400
 * batches, most of them with few new nodes. */
static bool few(size_t n, size_t size)
{
    return n * 16 < size;
}

/* The tables emptied: entry by entry, their slots found while every
 * entry is still there (a table that grew holds them in its old slots'
 * order, not their making's, so a probe may pass later ones), or all at
 * once (also where there is no memory to list the slots in). */
static void empty_tables(struct pd_raw *raw)
{
    struct ember_u64map *c = &raw->children;
    size_t n = raw->nnodes > raw->nframes ? raw->nnodes : raw->nframes;
    bool room = EMBER_VEC_RESERVE(raw->slots, raw->scap, n) == 0;
    if (!room || !few(c->count, (size_t)c->mask + 1)) {
        memset(c->slots, 0, ((size_t)c->mask + 1) * sizeof(*c->slots));
    } else {
        for (size_t i = 0; i < raw->nnodes; i++)
            raw->slots[i] =
                (uint32_t)(ember_u64map_slot(c, (uint64_t)raw->parent[i] << 32 | raw->key[i]) -
                           c->slots);
        for (size_t i = 0; i < raw->nnodes; i++)
            c->slots[raw->slots[i]] = (struct ember_u64slot){0};
    }
    c->count = 0;
    if (!room || !few(raw->fcount, (size_t)raw->fmask + 1)) {
        memset(raw->fslots, 0, ((size_t)raw->fmask + 1) * sizeof(*raw->fslots));
    } else {
        for (size_t i = 0; i < raw->nframes; i++)
            raw->slots[i] =
                (uint32_t)(frame_find(raw, raw->frames[i].mapref, raw->frames[i].ip) - raw->fslots);
        for (size_t i = 0; i < raw->nframes; i++)
            raw->fslots[raw->slots[i]] = (struct frame_slot){0};
    }
    raw->fcount = 0;
}

int pd_raw_reset(struct pd_raw *raw)
{
    empty_tables(raw);
    free_root_stacks(raw);
    raw->nnodes = raw->nframes = raw->nmaprefs = raw->nroots = 0;
    forget_prefixes(raw);
    int err = strmap_empty(&raw->mapref_ids);
    return err ? err : strmap_empty(&raw->root_ids);
}

void pd_raw_drop(struct pd_raw *raw)
{
    ember_u64map_release(&raw->children);
    raw->children.mask = raw->children.count = 0;
    free(raw->fslots);
    raw->fslots = NULL;
    raw->fmask = raw->fcount = 0;
    free(raw->parent);
    free(raw->key);
    free(raw->samples);
    free(raw->period);
    raw->parent = raw->key = NULL;
    raw->samples = raw->period = NULL;
    raw->ncap = 0;
}

void pd_raw_release(struct pd_raw *raw)
{
    ember_u64map_release(&raw->children);
    free(raw->slots);
    free(raw->fslots);
    free(raw->memo);
    ember_strmap_release(&raw->mapref_ids);
    free_root_stacks(raw);
    ember_strmap_release(&raw->root_ids);
    pd_leaf_free(raw->leaf);
    free(raw->parent);
    free(raw->key);
    free(raw->samples);
    free(raw->period);
    free(raw->frames);
    free(raw->maprefs);
    free(raw->roots);
    for (size_t i = 0; i < ROOT_HOT; i++) {
        free(raw->prefix_hot[i].last);
        free(raw->prefix_hot[i].path);
    }
    free(raw->chain);
}

/* An overlay's own id for its index i. */
static uint32_t own_id(const struct pd_raw *raw, size_t i)
{
    return (uint32_t)i | (raw->base ? PD_OVER : 0);
}

/* ---- frames and maps ----------------------------------------------------- */

static uint64_t frame_slot_hash(const void *slot)
{
    const struct frame_slot *s = slot;
    return ember_hash_u64(s->ip * 31 + s->mapref);
}

static bool frame_slot_used(const void *slot)
{
    return ((const struct frame_slot *)slot)->id1 != 0;
}

/* A slot's id1, which publishes it: written last (after its ip and
 * mapref), read first, so that builders may look the reader's trie up
 * while a merge adds to it (pd_jobs_behind). */
static uint32_t slot_id1(const struct frame_slot *s)
{
    return __atomic_load_n(&s->id1, __ATOMIC_ACQUIRE);
}

/* The slot of (mapref, ip), or the free one where it belongs; *id1 its
 * id1 as read. */
static struct frame_slot *frame_at(const struct pd_raw *raw, uint32_t mapref, uint64_t ip,
                                   uint32_t *id1)
{
    struct frame_slot probe = {ip, mapref, 0};
    for (uint32_t i = (uint32_t)frame_slot_hash(&probe) & raw->fmask;; i = (i + 1) & raw->fmask) {
        struct frame_slot *s = &raw->fslots[i];
        if (!(*id1 = slot_id1(s)) || (s->ip == ip && s->mapref == mapref))
            return s;
    }
}

static struct frame_slot *frame_find(const struct pd_raw *raw, uint32_t mapref, uint64_t ip)
{
    uint32_t id1;
    return frame_at(raw, mapref, ip, &id1);
}

int pd_raw_frame(struct pd_raw *raw, uint32_t mapref, uint64_t ip, uint32_t *id)
{
    uint32_t id1;
    if (raw->base && !(mapref & PD_OVER)) {
        frame_at(raw->base, mapref, ip, &id1);
        if (id1) {
            *id = id1 - 1;
            return 0;
        }
    }
    struct frame_slot *s = frame_at(raw, mapref, ip, &id1);
    if (id1) {
        *id = own_id(raw, id1 - 1);
        return 0;
    }
    if (raw->nframes >= PD_OVER - 1)
        return -ERANGE;
    if ((raw->fcount + 1) * 2 > raw->fmask + 1) {
        if (ember_table_grow((void **)&raw->fslots, &raw->fmask, sizeof(*raw->fslots),
                             frame_slot_hash, frame_slot_used) < 0)
            return -ENOMEM;
        s = frame_find(raw, mapref, ip);
    }
    if (EMBER_VEC_RESERVE(raw->frames, raw->fcap, raw->nframes + 1) < 0)
        return -ENOMEM;
    raw->frames[raw->nframes] = (struct raw_frame){ip, mapref};
    s->ip = ip;
    s->mapref = mapref;
    __atomic_store_n(&s->id1, (uint32_t)raw->nframes + 1, __ATOMIC_RELEASE);
    raw->fcount++;
    *id = own_id(raw, raw->nframes++);
    return 0;
}

/* A map's key in a table of maps: all it says. */
struct map_key {
    uint64_t v[4];
};

static struct map_key map_key(const struct pd_map *m)
{
    return (struct map_key){{m->start, m->end, m->pgoff, m->dso}};
}

/* The number of the map (start, end, pgoff, dso) in raw's own table, made
 * when new. */
static int mapref_find(struct pd_raw *raw, const struct pd_map *m, uint32_t *ref)
{
    struct map_key k = map_key(m);
    uintptr_t v = (uintptr_t)ember_strmap_get(&raw->mapref_ids, (const char *)k.v, sizeof(k.v));
    if (!v) {
        if (raw->nmaprefs >= PD_OVER - 2)
            return -ERANGE;
        if (EMBER_VEC_RESERVE(raw->maprefs, raw->mcap, raw->nmaprefs + 2) < 0)
            return -ENOMEM;
        v = ++raw->nmaprefs;
        raw->maprefs[v] = *m;
        raw->maprefs[v].ref = 0;
        if (ember_strmap_put(&raw->mapref_ids, (const char *)k.v, sizeof(k.v), (void *)v) < 0)
            return -ENOMEM;
    }
    *ref = own_id(raw, v);
    return 0;
}

/* The reader's trie keeps its number in the tasks' map; an overlay finds
 * the reader's number there or in its table, else makes its own. */
int pd_raw_mapref(struct pd_raw *raw, struct pd_map *m, uint32_t *ref)
{
    if (m->ref) {
        *ref = m->ref;
        return 0;
    }
    if (!raw->base) {
        int err = mapref_find(raw, m, ref);
        m->ref = err ? 0 : *ref;
        return err;
    }
    struct map_key k = map_key(m);
    uintptr_t v =
        (uintptr_t)ember_strmap_get(&raw->base->mapref_ids, (const char *)k.v, sizeof(k.v));
    if (v) {
        *ref = (uint32_t)v;
        return 0;
    }
    return mapref_find(raw, m, ref);
}

/* ---- nodes and roots ----------------------------------------------------- */

/* Grows the node arrays together (one capacity for all). */
static int grow_nodes(struct pd_raw *raw)
{
    size_t cap = raw->ncap ? raw->ncap * 2 : 1024;
    uint32_t *parent = realloc(raw->parent, cap * sizeof(*parent));
    if (parent)
        raw->parent = parent;
    uint32_t *key = parent ? realloc(raw->key, cap * sizeof(*key)) : NULL;
    if (key)
        raw->key = key;
    uint64_t *samples = key ? realloc(raw->samples, cap * sizeof(*samples)) : NULL;
    if (samples)
        raw->samples = samples;
    uint64_t *period = samples ? realloc(raw->period, cap * sizeof(*period)) : NULL;
    if (!period)
        return -ENOMEM;
    raw->period = period;
    raw->ncap = cap;
    return 0;
}

static int new_node(struct pd_raw *raw, uint32_t parent, uint32_t key, uint32_t *node)
{
    if (raw->nnodes >= PD_OVER - 1)
        return -ERANGE;
    if (raw->nnodes == raw->ncap && grow_nodes(raw) < 0)
        return -ENOMEM;
    size_t i = raw->nnodes++;
    raw->parent[i] = parent;
    raw->key[i] = key;
    raw->samples[i] = raw->period[i] = 0;
    *node = own_id(raw, i);
    return ember_u64map_put(&raw->children, (uint64_t)parent << 32 | key, *node);
}

int pd_raw_child(struct pd_raw *raw, uint32_t parent, uint32_t key, uint32_t *node)
{
    uint64_t k = (uint64_t)parent << 32 | key;
    if (raw->base && !((parent | key) & PD_OVER) && ember_u64map_get(&raw->base->children, k, node))
        return 0;
    if (ember_u64map_get(&raw->children, k, node))
        return 0;
    return new_node(raw, parent, key, node);
}

const struct root *pd_raw_root_at(const struct pd_raw *raw, uint32_t id)
{
    return raw->base && !(id & PD_OVER) ? &raw->base->roots[id] : &raw->roots[id & ~PD_OVER];
}

/* The cache slot of a thread's root. */
static uint32_t *root_slot(struct pd_raw *raw, uint32_t attr, uint32_t pid, uint32_t tid)
{
    return &raw->root_hot[(pid * 0x9e3779b1u ^ tid ^ attr << 3) % ROOT_HOT];
}

/* The root found lately for the thread, when its command is the same. */
static bool root_hot(struct pd_raw *raw, uint32_t attr, uint32_t pid, uint32_t tid,
                     const char *comm, size_t len, uint32_t *id)
{
    uint32_t id1 = *root_slot(raw, attr, pid, tid);
    if (id1 == 0)
        return false;
    const struct root *rt = pd_raw_root_at(raw, id1 - 1);
    if (rt->attr != attr || rt->pid != pid || rt->tid != tid || rt->comm_len != len ||
        (len && memcmp(rt->comm, comm, len) != 0))
        return false;
    *id = id1 - 1;
    return true;
}

static int new_root(struct pd_raw *raw, uint32_t attr, uint32_t pid, uint32_t tid, const char *comm,
                    size_t len, uintptr_t *v)
{
    if (EMBER_VEC_RESERVE(raw->roots, raw->rcap, raw->nroots + 1) < 0)
        return -ENOMEM;
    char *copy = ember_arena_strndup(&raw->root_ids.arena, comm, len);
    if (!copy)
        return -ENOMEM;
    struct root *rt = &raw->roots[raw->nroots];
    *rt = (struct root){.attr = attr, .pid = pid, .tid = tid, .comm = copy, .comm_len = len};
    rt->stack.generation = UINT64_MAX;
    int err = new_node(raw, 0, own_id(raw, raw->nroots), &rt->node);
    if (err)
        return err;
    *v = own_id(raw, ++raw->nroots);
    return 0;
}

/* The key of a root: the event, the thread and the command's first 256
 * bytes. */
int pd_raw_root(struct pd_raw *raw, uint32_t attr, uint32_t pid, uint32_t tid, const char *comm,
                size_t len, uint32_t *id)
{
    char key[12 + 256];
    if (len > 256)
        len = 256;
    if (root_hot(raw, attr, pid, tid, comm, len, id))
        return 0;
    memcpy(key, &attr, 4);
    memcpy(key + 4, &pid, 4);
    memcpy(key + 8, &tid, 4);
    memcpy(key + 12, comm, len);
    uintptr_t v = raw->base ? (uintptr_t)ember_strmap_get(&raw->base->root_ids, key, 12 + len) : 0;
    if (!v && !(v = (uintptr_t)ember_strmap_get(&raw->root_ids, key, 12 + len))) {
        int err = new_root(raw, attr, pid, tid, comm, len, &v);
        if (!err && ember_strmap_put(&raw->root_ids, key, 12 + len, (void *)v) < 0)
            err = -ENOMEM;
        if (err)
            return err;
    }
    *id = (uint32_t)(v - 1);
    *root_slot(raw, attr, pid, tid) = *id + 1;
    return 0;
}

/* Room for `frames` frames and `nodes` nodes more, made now (the table
 * and arrays grown as adding them would grow them): adding them then
 * moves nothing that builders read meanwhile (pd_jobs_behind). */
int pd_raw_room(struct pd_raw *raw, size_t frames, size_t nodes)
{
    while (raw->ncap < raw->nnodes + nodes)
        if (grow_nodes(raw) < 0)
            return -ENOMEM;
    if (ember_u64map_reserve(&raw->children, nodes) < 0)
        return -ENOMEM;
    while (((size_t)raw->fcount + frames) * 2 > (size_t)raw->fmask + 1)
        if (ember_table_grow((void **)&raw->fslots, &raw->fmask, sizeof(*raw->fslots),
                             frame_slot_hash, frame_slot_used) < 0)
            return -ENOMEM;
    return EMBER_VEC_RESERVE(raw->frames, raw->fcap, raw->nframes + frames) < 0 ? -ENOMEM : 0;
}

/* ---- merging an overlay -------------------------------------------------- */

static uint32_t over(const uint32_t *map, uint32_t id)
{
    return id & PD_OVER ? map[id & ~PD_OVER] : id;
}

static int merge_maps(struct pd_raw *dst, const struct pd_raw *src, struct pd_raw_merge *m,
                      size_t upto)
{
    if (EMBER_VEC_RESERVE(m->maps, m->mcap, upto + 1) < 0)
        return -ENOMEM;
    m->maps[0] = 0; /* no map */
    for (; m->nmaps < upto; m->nmaps++) {
        int err = mapref_find(dst, &src->maprefs[m->nmaps + 1], &m->maps[m->nmaps + 1]);
        if (err)
            return err;
    }
    return 0;
}

/* An overlay's new frames and nodes are looked up in the reader's tables
 * (another overlay merged before may have made them), nearly all missing:
 * a cache miss each, one after the other, unless the slots of those
 * MERGE_AHEAD further on are fetched meanwhile. */
enum { MERGE_AHEAD = 8 };

/* Where looking frame i up starts. */
static const void *frame_home(const struct pd_raw *dst, const struct pd_raw *src,
                              const struct pd_raw_merge *m, size_t i)
{
    const struct raw_frame *f = &src->frames[i];
    struct frame_slot probe = {f->ip, over(m->maps, f->mapref), 0};
    return &dst->fslots[(uint32_t)frame_slot_hash(&probe) & dst->fmask];
}

static int merge_frames(struct pd_raw *dst, const struct pd_raw *src, struct pd_raw_merge *m,
                        size_t upto)
{
    if (EMBER_VEC_RESERVE(m->frames, m->fcap, upto) < 0)
        return -ENOMEM;
    for (; m->nframes < upto; m->nframes++) {
        if (m->nframes + MERGE_AHEAD < upto)
            __builtin_prefetch(frame_home(dst, src, m, m->nframes + MERGE_AHEAD));
        const struct raw_frame *f = &src->frames[m->nframes];
        int err = pd_raw_frame(dst, over(m->maps, f->mapref), f->ip, &m->frames[m->nframes]);
        if (err)
            return err;
    }
    return 0;
}

/* A node under node 0 is a root's: dst's, by what the root is (an overlay
 * makes a root of its own only where its base has none). */
static int merge_node(struct pd_raw *dst, const struct pd_raw *src, struct pd_raw_merge *m,
                      size_t i)
{
    uint32_t parent = src->parent[i], key = src->key[i], id;
    if (parent != 0)
        return pd_raw_child(dst, over(m->nodes, parent), over(m->frames, key), &m->nodes[i]);
    const struct root *rt = pd_raw_root_at(src, key);
    int err = pd_raw_root(dst, rt->attr, rt->pid, rt->tid, rt->comm, rt->comm_len, &id);
    if (!err)
        m->nodes[i] = dst->roots[id].node;
    return err;
}

/* Where looking node i up in the child table starts: its parent's number
 * is known once merged, and guessed before (most new nodes are new in the
 * reader too, numbered on from its count); a root's is not looked up. */
static const void *node_home(const struct pd_raw *dst, const struct pd_raw *src,
                             const struct pd_raw_merge *m, size_t i)
{
    uint32_t parent = src->parent[i];
    size_t pi = parent & ~PD_OVER;
    if (parent == 0)
        return &src->parent[i]; /* its key is a root's, not a frame's */
    if (parent & PD_OVER)
        parent = pi < m->nnodes ? m->nodes[pi] : (uint32_t)(dst->nnodes + (pi - m->nnodes));
    return ember_u64map_home(&dst->children, (uint64_t)parent << 32 | over(m->frames, src->key[i]));
}

int pd_raw_merge(struct pd_raw *dst, const struct pd_raw *src, struct pd_raw_merge *m,
                 struct pd_raw_count upto)
{
    int err = merge_maps(dst, src, m, upto.maps);
    if (!err)
        err = merge_frames(dst, src, m, upto.frames);
    if (!err && EMBER_VEC_RESERVE(m->nodes, m->ncap, upto.nodes) < 0)
        err = -ENOMEM;
    for (; !err && m->nnodes < upto.nodes; m->nnodes++) {
        if (m->nnodes + MERGE_AHEAD < upto.nodes)
            __builtin_prefetch(node_home(dst, src, m, m->nnodes + MERGE_AHEAD));
        err = merge_node(dst, src, m, m->nnodes);
    }
    dst->dwarf |= src->dwarf;
    return err;
}

void pd_raw_merge_release(struct pd_raw_merge *m)
{
    free(m->maps);
    free(m->frames);
    free(m->nodes);
}
