/*
 * profile_merge.c - the threads' profiles of one input into one, built as
 * one thread reading the whole input builds it: modules, frames and stack
 * nodes numbered in the order the input first has them, so that what
 * shows those numbers (pprof's mappings and functions, the order of
 * siblings in a view) is the same bytes whatever the thread count and
 * however the pieces of input fell to the threads (profile_merge.h).
 *
 * Taking every source's pieces in the input's order, each piece's new
 * modules, frames, then nodes are added to the result in their order: one
 * already there was met in an earlier piece; one not there is met first in
 * this piece, where one thread reading it all would make it too (readers
 * make things at first sight). A node's weights are sums, added whole.
 *
 * Modules are few and are copied so, on the caller's thread. Frames are
 * as many in every source where they are addresses, and are merged on
 * several threads as the nodes are, below (profile_merge_frames.c; on
 * one, frames.c's ember_frames_copy, each frame's slot fetched ahead).
 * Nodes grow with distinct stacks, as many in every source where stacks
 * are spread evenly, so copying them one after the other is a serial part
 * as large as the parsing it follows. On several threads, each taking
 * whole sources, the same order is reached in steps:
 *   1. every source node finds or claims its path's slot in one shared
 *      table (its key: the parent's slot and the frame in dst), and leaves
 *      there the largest of ~(piece rank << 32 | node): the slot keeps
 *      whichever source node the input met first;
 *   2. a source node that kept its slot is new in its piece: each piece
 *      counts its new nodes;
 *   3. (the caller) pieces in order, each new node's number is dst's node
 *      count, plus the new nodes of the pieces before, plus its rank among
 *      its piece's new nodes, which is the order one thread makes them;
 *   4. every source node learns its number from its slot; the new ones
 *      are written into dst with their weights;
 *   5. the other nodes' weights are added (atomically: several sources may
 *      add to one node), and dst's child table is filled, each thread
 *      taking a range of home buckets (a node whose probe would leave the
 *      range is placed afterwards, on the caller's thread).
 * dst's own nodes are in the table first, kept by no piece. Negative
 * weights (whose partial sums could overflow where the whole does not)
 * and a kept sequence take the serial path.
 *
 * Invariants: a source's modules, frames and nodes are copied once each,
 * in its own order (a node's parent and frame, a frame's module, are
 * copied before it); marks of one source are in increasing piece order.
 */
#include "model/profile_merge.h"
#include "model/profile_merge_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ember_profile_mark_piece(struct ember_piece_marks *m, uint64_t at,
                             const struct ember_profile *p)
{
    if (EMBER_VEC_RESERVE(m->v, m->cap, m->n + 1) < 0)
        return -ENOMEM;
    m->v[m->n++] = (struct ember_piece_mark){
        .at = at, .modules = p->nmodules, .frames = p->frames.count, .nodes = p->nnodes};
    return 0;
}

static int source_init(struct ember_profile *dst, struct merge_source *s,
                       const struct ember_profile *p)
{
    memset(s, 0, sizeof(*s));
    s->p = p;
    s->done.nodes = 1; /* the root is the root */
    s->mods = malloc(((size_t)p->nmodules + 1) * sizeof(uint32_t));
    s->frames = malloc(((size_t)p->frames.count + 1) * sizeof(uint32_t));
    s->nodes = malloc((size_t)p->nnodes * sizeof(uint32_t));
    if (!s->mods || !s->frames || !s->nodes)
        return -ENOMEM;
    s->nodes[0] = EMBER_ROOT;
    int err = 0;
    for (unsigned v = 0; v < p->nvalues && !err; v++)
        err = ember_profile_value(dst, p->vt[v].type, p->vt[v].unit, &s->values[v]);
    return err;
}

static void source_release(struct merge_source *s)
{
    free(s->mods);
    free(s->frames);
    free(s->nodes);
    free(s->rank);
    free(s->hash);
    free(s->slot);
}

static int copy_frames(struct ember_profile *dst, struct merge_source *s, uint32_t upto)
{
    if (upto <= s->done.frames)
        return 0;
    int err = ember_frames_copy(&dst->frames, &s->p->frames, s->done.frames, upto, s->mods,
                                &s->frames[s->done.frames]);
    s->done.frames = upto;
    return err;
}

/* The nodes one after the other: the serial path. */
static int copy_nodes(struct ember_profile *dst, struct merge_source *s, uint32_t upto)
{
    int err = 0;
    const struct ember_profile *p = s->p;
    for (uint32_t n = s->done.nodes; n < upto && !err; n++) {
        uint32_t parent = s->nodes[p->nodes[n].parent];
        err = ember_profile_child(dst, parent, s->frames[p->nodes[n].frame], &s->nodes[n]);
        for (unsigned v = 0; v < p->nvalues && !err; v++)
            if (p->self[v][n])
                err = ember_profile_add(dst, s->nodes[n], s->values[v], p->self[v][n]);
    }
    if (upto > s->done.nodes)
        s->done.nodes = upto;
    return err;
}

static int copy_modules(struct ember_profile *dst, struct merge_source *s, uint32_t upto)
{
    int err = 0;
    for (; s->done.modules < upto && !err; s->done.modules++)
        err = ember_profile_module(dst, &s->p->modules[s->done.modules], &s->mods[s->done.modules]);
    return err;
}

/* What source s made during the piece its mark m ends. */
static int copy_piece(struct ember_profile *dst, struct merge_source *s,
                      const struct ember_piece_mark *m)
{
    int err = copy_modules(dst, s, m->modules);
    err = err ? err : copy_frames(dst, s, m->frames);
    return err ? err : copy_nodes(dst, s, m->nodes);
}

/* What only finds a source's nodes, which the threads' merge does not
 * read: memory the merge's own table needs more. */
static void drop_lookup(struct ember_profile *p)
{
    free(p->child_buckets);
    p->child_buckets = NULL;
    p->child_mask = 0;
}

static int by_piece(const void *a, const void *b)
{
    const struct ember_piece_mark *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* Each source's marks ranked in the input's order. */
static int rank_pieces(struct merge_source *s, unsigned n, const struct ember_piece_mark *all,
                       size_t total)
{
    size_t *filled = calloc(n, sizeof(*filled));
    if (!filled)
        return -ENOMEM;
    int err = 0;
    for (unsigned i = 0; i < n && !err; i++)
        if (!(s[i].rank = malloc((s[i].nmarks + 1) * sizeof(*s[i].rank))))
            err = -ENOMEM;
    for (size_t k = 0; k < total && !err; k++) {
        struct merge_source *x = &s[all[k].source];
        x->rank[filled[all[k].source]++] = (uint32_t)k;
    }
    free(filled);
    return err;
}

/* Every mark, sorted in the input's order. */
static struct ember_piece_mark *sorted_marks(struct ember_piece_marks *marks, unsigned n,
                                             size_t *total)
{
    *total = 0;
    for (unsigned i = 0; i < n; i++)
        *total += marks[i].n;
    struct ember_piece_mark *all = malloc((*total + 1) * sizeof(*all));
    if (!all)
        return NULL;
    for (unsigned i = 0, k = 0; i < n; i++)
        for (size_t j = 0; j < marks[i].n; j++) {
            all[k] = marks[i].v[j];
            all[k++].source = i;
        }
    qsort(all, *total, sizeof(*all), by_piece);
    return all;
}

/* Room for the result's frames, so that the copy neither grows nor
 * rehashes its table: all the sources' where they share few (threads
 * given pieces of different programs), but at most twice the largest
 * source's (the result has at least that many: at most half the room
 * unused). */
static size_t frames_expected(const struct ember_profile *dst, struct ember_profile *const *src,
                              unsigned n)
{
    size_t most = dst->frames.count, sum = dst->frames.count;
    for (unsigned i = 0; i < n; i++) {
        most = src[i]->frames.count > most ? src[i]->frames.count : most;
        sum += src[i]->frames.count;
    }
    return sum < 2 * most ? sum : 2 * most;
}

/* The sources' modules copied, then their frames and nodes merged on
 * several threads; what must take the serial path is left to it. */
static int merge_threads(struct ember_profile *dst, struct merge_source *s,
                         struct ember_profile *const *src, unsigned n,
                         const struct ember_piece_mark *all, size_t total, unsigned threads)
{
    int err = 0;
    for (size_t k = 0; k < total && !err; k++)
        err = copy_modules(dst, &s[all[k].source], all[k].modules);
    err = err ? err : rank_pieces(s, n, all, total);
    if (!err && (err = ember_merge_frames(dst, s, n, total, threads)) == 1) {
        /* a table too full: the frames one after the other */
        err = ember_frames_reserve(&dst->frames, frames_expected(dst, src, n));
        for (size_t k = 0; k < total && !err; k++)
            err = copy_frames(dst, &s[all[k].source], all[k].frames);
    }
    for (unsigned i = 0; i < n && !err; i++) {
        drop_lookup(src[i]);
        ember_frames_release(&src[i]->frames); /* copied: the nodes' merge reads s->frames */
    }
    err = err ? err : ember_merge_nodes(dst, s, n, total, threads);
    for (unsigned i = 0; i < n && !err; i++) /* merged: none is left to copy */
        if (s[i].nmarks && s[i].marks[s[i].nmarks - 1].nodes > s[i].done.nodes)
            s[i].done.nodes = s[i].marks[s[i].nmarks - 1].nodes;
    return err == 1 ? 0 : err; /* 1: the nodes take the serial path */
}

int ember_profile_merge_pieces(struct ember_profile *dst, struct ember_profile *const *src,
                               struct ember_piece_marks *marks, unsigned n, unsigned threads)
{
    struct merge_source *s = calloc(n + 1, sizeof(*s));
    size_t total = 0;
    int err = s ? 0 : -ENOMEM;
    for (unsigned i = 0; i < n && !err; i++) {
        err = source_init(dst, &s[i], src[i]);
        s[i].marks = marks[i].v;
        s[i].nmarks = marks[i].n;
    }
    bool par = threads > 1 && !dst->keep_seq && n > 1;
    if (!err && !par) /* the threads' merge knows how many */
        err = ember_frames_reserve(&dst->frames, frames_expected(dst, src, n));
    struct ember_piece_mark *all = err ? NULL : sorted_marks(marks, n, &total);
    if (!err && !all)
        err = -ENOMEM;
    if (par)
        err = err ? err : merge_threads(dst, s, src, n, all, total, threads < n ? threads : n);
    for (size_t k = 0; k < total && !err; k++)
        err = copy_piece(dst, &s[all[k].source], &all[k]); /* what the threads did not */
    for (unsigned i = 0; i < n && !err; i++)
        dst->weighed |= src[i]->weighed; /* as one reader's adds, of zero too */
    for (unsigned i = 0; s && i < n; i++)
        source_release(&s[i]);
    free(all);
    free(s);
    return err;
}
