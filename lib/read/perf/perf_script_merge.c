/*
 * perf_script_merge.c - the threads' profiles of a `perf script` text into
 * one, built as one thread reading the whole input builds it: modules,
 * frames and stack nodes numbered in the order the input first has them,
 * so that what shows those numbers (pprof's mappings and functions) is the
 * same bytes whatever the thread count and however the pieces of input
 * fell to the threads.
 *
 * Each thread marks, after each piece of input it parsed (its pieces come
 * in increasing order), how many modules, frames and nodes its profile
 * holds: those made during a piece are the ones that thread first met
 * there, in the order it met them. Taking every thread's pieces in the
 * input's order, each piece's new modules, frames, then nodes are added to
 * the result in their order: one already there was met in an earlier
 * piece; one not there is met first in this piece, where one thread
 * reading it all would make it too (readers make things at first sight).
 * A node's weights are sums, added whole when the node is.
 *
 * Invariants: a source's modules, frames and nodes are copied once each,
 * in its own order (a node's parent and frame, a frame's module, are
 * copied before it); marks of one thread are in increasing piece order.
 */
#include "read/perf/perf_script_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ember_perf_mark(struct perf_marks *m, uint64_t at, const struct ember_profile *p)
{
    if (EMBER_VEC_RESERVE(m->v, m->cap, m->n + 1) < 0)
        return -ENOMEM;
    m->v[m->n++] = (struct perf_mark){.at = at,
                                      .modules = ember_profile_module_count(p),
                                      .frames = ember_profile_frame_count(p),
                                      .nodes = ember_profile_node_count(p)};
    return 0;
}

/* A source's ids in the result, and how much of it is copied. */
struct source {
    const struct ember_profile *p;
    uint32_t *mods, *frames, *nodes;
    struct perf_mark done;
    unsigned values[EMBER_MAX_VALUES];
};

static int source_init(struct ember_profile *dst, struct source *s, const struct ember_profile *p)
{
    memset(s, 0, sizeof(*s));
    s->p = p;
    s->done.nodes = 1; /* the root is the root */
    s->mods = malloc(((size_t)ember_profile_module_count(p) + 1) * sizeof(uint32_t));
    s->frames = malloc(((size_t)ember_profile_frame_count(p) + 1) * sizeof(uint32_t));
    s->nodes = malloc((size_t)ember_profile_node_count(p) * sizeof(uint32_t));
    if (!s->mods || !s->frames || !s->nodes)
        return -ENOMEM;
    s->nodes[0] = EMBER_ROOT;
    int err = 0;
    for (unsigned v = 0; v < ember_profile_values(p) && !err; v++)
        err = ember_profile_value(dst, ember_profile_value_type(p, v),
                                  ember_profile_value_unit(p, v), &s->values[v]);
    return err;
}

static void source_release(struct source *s)
{
    free(s->mods);
    free(s->frames);
    free(s->nodes);
}

static int copy_frames(struct ember_profile *dst, struct source *s, uint32_t upto)
{
    int err = 0;
    for (; s->done.frames < upto && !err; s->done.frames++) {
        struct ember_frame fr;
        ember_profile_frame(s->p, s->done.frames, &fr);
        if (fr.module != EMBER_NO_MODULE)
            fr.module = s->mods[fr.module];
        err = ember_profile_intern_frame(dst, &fr, &s->frames[s->done.frames]);
    }
    return err;
}

static int copy_nodes(struct ember_profile *dst, struct source *s, uint32_t upto)
{
    int err = 0;
    unsigned nv = ember_profile_values(s->p);
    for (uint32_t n = s->done.nodes; n < upto && !err; n++) {
        uint32_t parent = s->nodes[ember_profile_node_parent(s->p, n)];
        err = ember_profile_child(dst, parent, s->frames[ember_profile_node_frame(s->p, n)],
                                  &s->nodes[n]);
        for (unsigned v = 0; v < nv && !err; v++) {
            int64_t w = ember_profile_self(s->p, n, v);
            if (w)
                err = ember_profile_add(dst, s->nodes[n], s->values[v], w);
        }
    }
    s->done.nodes = upto;
    return err;
}

/* What source s made during the piece its mark m ends. */
static int copy_piece(struct ember_profile *dst, struct source *s, const struct perf_mark *m)
{
    int err = 0;
    for (; s->done.modules < m->modules && !err; s->done.modules++)
        err = ember_profile_module(dst, ember_profile_module_info(s->p, s->done.modules),
                                   &s->mods[s->done.modules]);
    if (!err)
        err = copy_frames(dst, s, m->frames);
    return err ? err : copy_nodes(dst, s, m->nodes);
}

static int by_piece(const void *a, const void *b)
{
    const struct perf_mark *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

int ember_perf_merge_marked(struct ember_profile *dst, struct ember_profile *const *src,
                            struct perf_marks *marks, unsigned n)
{
    struct source *s = calloc(n, sizeof(*s));
    size_t total = 0;
    int err = s ? 0 : -ENOMEM;
    for (unsigned i = 0; i < n && !err; i++) {
        err = source_init(dst, &s[i], src[i]);
        total += marks[i].n;
    }
    struct perf_mark *all = err ? NULL : malloc((total + 1) * sizeof(*all));
    if (!err && !all)
        err = -ENOMEM;
    for (unsigned i = 0, k = 0; i < n && !err; i++)
        for (size_t j = 0; j < marks[i].n; j++) {
            all[k] = marks[i].v[j];
            all[k++].worker = i;
        }
    if (!err)
        qsort(all, total, sizeof(*all), by_piece);
    for (size_t k = 0; k < total && !err; k++)
        err = copy_piece(dst, &s[all[k].worker], &all[k]);
    for (unsigned i = 0; s && i < n; i++)
        source_release(&s[i]);
    free(all);
    free(s);
    return err;
}
