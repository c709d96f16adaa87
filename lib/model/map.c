/*
 * map.c - rebuilding a profile stack by stack (ember_profile_map in
 * ember/model.h): the mechanism under every transform that rewrites
 * stacks. Each node of src that carries weight is mapped once (memoized),
 * so the cost is one pass over the stacks however long the arrival
 * sequence is. dst gets src's modules in src's order, so that a frame's
 * record is copied with its module id unchanged.
 */
#include "model/profile_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

/* The new stack a map function builds. */
struct ember_stack_out {
    uint32_t *frames;
    size_t n, cap;
    bool drop; /* the stack and its weight are left out */
};

int ember_stack_out_push(struct ember_stack_out *out, uint32_t f)
{
    if (EMBER_VEC_RESERVE(out->frames, out->cap, out->n + 1) < 0)
        return -ENOMEM;
    out->frames[out->n++] = f;
    return 0;
}

void ember_stack_out_drop(struct ember_stack_out *out)
{
    out->drop = true;
}

int ember_profile_frame_copy(struct ember_profile *dst, const struct ember_profile *src,
                             uint32_t frame, const char *name, size_t len, uint32_t *out)
{
    if (frame >= src->frames.count)
        return -EINVAL;
    return ember_profile_copy_frame(dst, src, frame, name, len, NULL, out);
}

int ember_stack_out_name(struct ember_stack_out *out, struct ember_profile *dst, const char *s,
                         size_t len)
{
    if (EMBER_VEC_RESERVE(out->frames, out->cap, out->n + 1) < 0)
        return -ENOMEM;
    return ember_frames_intern(&dst->frames, s, len, &out->frames[out->n++]);
}

int ember_stack_out_copy(struct ember_stack_out *out, struct ember_profile *dst,
                         const struct ember_profile *src, uint32_t f)
{
    if (EMBER_VEC_RESERVE(out->frames, out->cap, out->n + 1) < 0)
        return -ENOMEM;
    /* dst has src's modules, in src's order (ember_profile_map) */
    return ember_profile_copy_frame(dst, src, f, NULL, 0, NULL, &out->frames[out->n++]);
}

struct mapper {
    const struct ember_profile *src;
    struct ember_profile *dst;
    ember_stack_map_fn fn;
    void *ctx;
    uint32_t *memo; /* src node -> dst node + 1 */
    uint32_t *path;
    size_t pcap;
    struct ember_stack_out out;
};

enum { DROPPED = UINT32_MAX }; /* memo of a stack left out */

/* The dst node of src node n in *res; 1 when the stack is left out. */
static int map_node(struct mapper *m, uint32_t n, uint32_t *res)
{
    if (m->memo[n] == DROPPED)
        return 1;
    if (m->memo[n]) {
        *res = m->memo[n] - 1;
        return 0;
    }
    size_t depth = 0;
    for (uint32_t k = n; k != EMBER_ROOT; k = m->src->nodes[k].parent)
        depth++;
    if (EMBER_VEC_RESERVE(m->path, m->pcap, depth + 1) < 0)
        return -ENOMEM;
    size_t d = depth;
    for (uint32_t k = n; k != EMBER_ROOT; k = m->src->nodes[k].parent)
        m->path[--d] = m->src->nodes[k].frame;
    m->out.n = 0;
    m->out.drop = false;
    int err = m->fn(m->ctx, m->dst, m->src, m->path, depth, &m->out);
    if (!err && m->out.drop) {
        m->memo[n] = DROPPED;
        return 1;
    }
    uint32_t node = EMBER_ROOT;
    for (size_t i = 0; i < m->out.n && !err; i++)
        err = ember_profile_child_fast(m->dst, node, m->out.frames[i], &node);
    if (err)
        return err;
    m->memo[n] = node + 1;
    *res = node;
    return 0;
}

/* A profile like src, empty: its values, modules (same ids) and decimals. */
static int profile_like(const struct ember_profile *src, unsigned *vmap, struct ember_profile **out)
{
    uint32_t *mods = NULL;
    struct ember_profile *dst = ember_profile_new();
    int err = dst ? ember_profile_values_like(dst, src, vmap) : -ENOMEM;
    if (!err)
        err = ember_profile_modules_like(dst, src, &mods);
    if (!err)
        err = ember_profile_meta_like(dst, src);
    free(mods);
    if (!err)
        dst->decimals = src->decimals;
    if (err)
        ember_profile_free(dst);
    *out = err ? NULL : dst;
    return err;
}

int ember_profile_map(const struct ember_profile *src, ember_stack_map_fn fn, void *ctx,
                      struct ember_profile **out)
{
    struct mapper m = {.src = src, .fn = fn, .ctx = ctx};
    m.memo = calloc(src->nnodes, sizeof(*m.memo));
    unsigned vmap[EMBER_MAX_VALUES];
    int err = m.memo ? profile_like(src, vmap, &m.dst) : -ENOMEM;
    for (uint32_t n = 0; n < src->nnodes && !err; n++) {
        uint32_t r;
        bool any = false;
        for (unsigned k = 0; k < src->nvalues; k++)
            any |= src->self[k][n] != 0;
        if (!any || (err = map_node(&m, n, &r)) != 0) {
            err = err > 0 ? 0 : err;
            continue;
        }
        for (unsigned k = 0; k < src->nvalues && !err; k++)
            if (src->self[k][n])
                err = ember_profile_add_raw(m.dst, r, vmap[k], src->self[k][n]);
    }
    for (size_t i = 0; i < ember_profile_labelled_count(src) && !err; i++) {
        uint32_t r;
        err = map_node(&m, src->extra->parts[i].node, &r);
        err = err > 0 ? 0 : err ? err : ember_profile_labelled_copy(m.dst, src, i, r, vmap);
    }
    if (!err && src->keep_seq) {
        m.dst->keep_seq = true;
        for (size_t i = 0; i < src->seq_len && !err; i++) {
            uint32_t r;
            err = map_node(&m, src->seq_node[i], &r);
            if (err > 0) /* left out: kept at the root, the sequence in step */
                err = 0, r = EMBER_ROOT;
            for (unsigned k = 0; k < src->nvalues && !err; k++)
                if (src->seq_w[k][i])
                    err = ember_profile_seq_append(m.dst, r, vmap[k], src->seq_w[k][i]);
        }
    }
    free(m.memo);
    free(m.path);
    free(m.out.frames);
    if (err) {
        ember_profile_free(m.dst);
        return err;
    }
    *out = m.dst;
    return 0;
}

/* Which nodes lead to weight: their own, or a descendant's (children come
 * after their parents in node order). */
static bool *live_nodes(const struct ember_profile *src)
{
    bool *live = calloc(src->nnodes ? src->nnodes : 1, sizeof(*live));
    for (uint32_t n = src->nnodes; live && n-- > 1;) {
        for (unsigned k = 0; k < src->nvalues && !live[n]; k++)
            live[n] = src->self[k][n] != 0;
        if (live[n])
            live[src->nodes[n].parent] = true;
    }
    return live;
}

int ember_profile_map_frames(const struct ember_profile *src, ember_frame_map_fn fn, void *ctx,
                             struct ember_profile **out)
{
    unsigned vmap[EMBER_MAX_VALUES];
    struct ember_profile *dst = NULL;
    uint32_t *fmemo = calloc(src->frames.count ? src->frames.count : 1, sizeof(*fmemo));
    uint32_t *node = malloc((src->nnodes ? src->nnodes : 1) * sizeof(*node));
    bool *live = live_nodes(src);
    int err = fmemo && node && live ? profile_like(src, vmap, &dst) : -ENOMEM;
    if (!err)
        node[EMBER_ROOT] = EMBER_ROOT;
    for (uint32_t n = 1; n < src->nnodes && !err; n++) {
        if (!live[n])
            continue;
        uint32_t f = src->nodes[n].frame;
        if (!fmemo[f]) {
            uint32_t to;
            if ((err = fn(ctx, dst, src, f, &to)) != 0)
                break;
            fmemo[f] = to + 1;
        }
        err = ember_profile_child_fast(dst, node[src->nodes[n].parent], fmemo[f] - 1, &node[n]);
        for (unsigned k = 0; k < src->nvalues && !err; k++)
            if (src->self[k][n])
                err = ember_profile_add_raw(dst, node[n], vmap[k], src->self[k][n]);
    }
    for (size_t i = 0; i < ember_profile_labelled_count(src) && !err; i++)
        if (live[src->extra->parts[i].node])
            err = ember_profile_labelled_copy(dst, src, i, node[src->extra->parts[i].node], vmap);
    if (!err && src->keep_seq) {
        dst->keep_seq = true;
        for (size_t i = 0; i < src->seq_len && !err; i++)
            for (unsigned k = 0; k < src->nvalues && !err; k++)
                if (src->seq_w[k][i])
                    err = ember_profile_seq_append(dst, node[src->seq_node[i]], vmap[k],
                                                   src->seq_w[k][i]);
    }
    free(fmemo);
    free(node);
    free(live);
    if (err) {
        ember_profile_free(dst);
        return err;
    }
    *out = dst;
    return 0;
}
