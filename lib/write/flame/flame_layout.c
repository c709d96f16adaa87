/*
 * flame_layout.c - a flame graph's frames: flamegraph.pl's flow() over the
 * profile's stacks (flame.c tells how), pruning the subtrees narrower than
 * --minwidth beforehand.
 *
 * Invariants: the frames come out exactly as flamegraph.pl's, sorted by
 * depth then x; a pruned subtree adds to the layout just what walking it
 * would have.
 */
#include "ember/model.h"
#include "write/flame/flame_internal.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* For pruning: per node, what the lines below it add to the layout. A
 * subtree narrower than --minwidth draws nothing: its frames are all
 * hidden, so walking it only counts them, adds its width to the time and
 * (differential) its deltas to the largest delta. Frames are nodes, but a
 * node whose line and lines below are split by a sibling's (the case
 * walk.c describes: a sibling whose name extends the node's by a byte
 * below ';') makes two frames: those are found by looking the siblings
 * up. A node with too many possible such siblings to look up keeps its
 * ancestors walked as before. */
struct below {
    int64_t *total;   /* of the drawn metric, over the subtree, the node included */
    uint32_t *frames; /* the frames of the nodes strictly below */
    int64_t *maxd;    /* differential: largest |after - before| strictly below */
    uint64_t *skip;   /* bit per node: walk nothing below it */
};

/* of closes at depth; its parent is open at depth - 1 (the root at 0). */
static int close_frame(struct ember_flame_layout *l, size_t depth,
                       const struct ember_flame_open *of, struct ember_flame_open *parent)
{
    if ((double)(l->time - of->start) < l->min_time) {
        l->hidden_frames++;
        if (parent)
            parent->hidden += l->time - of->start;
        return 0;
    }
    l->hidden_width += of->hidden;
    if (EMBER_VEC_RESERVE(l->frames, l->fcap, l->nframes + 1) < 0)
        return -ENOMEM;
    l->frames[l->nframes++] =
        (struct ember_flame_frame){of->node, (uint32_t)depth, of->start, l->time, of->delta};
    return 0;
}

/* Makes path the open frames, closing those it leaves. */
static int open_path(struct ember_flame_layout *l, const uint32_t *path, size_t depth)
{
    size_t same = 0;
    while (same < l->nopen && same < depth && l->open[same].node == path[same])
        same++;
    for (size_t k = l->nopen; k-- > same;) {
        int err = close_frame(l, k + 1, &l->open[k], k ? &l->open[k - 1] : &l->root);
        if (err)
            return err;
    }
    if (EMBER_VEC_RESERVE(l->open, l->ocap, depth) < 0)
        return -ENOMEM;
    for (size_t k = same; k < depth; k++)
        l->open[k] = (struct ember_flame_open){path[k], l->time, 0, 0};
    l->nopen = depth;
    return 0;
}

static int flow(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct ember_flame_layout *l = ctx;
    if (!l->diff && self[l->wm] == 0)
        return 0; /* a stack with weight in other values only */
    int err = open_path(l, path, depth);
    if (err)
        return err;
    if (l->diff) {
        int64_t d = self[1] - self[0];
        if (depth)
            l->open[depth - 1].delta += d;
        if (llabs(d) > l->maxdelta)
            l->maxdelta = llabs(d);
        l->time += self[1];
    } else {
        l->time += self[l->wm];
    }
    return 0;
}

/* The lines below a pruned node, all hidden: what flow would make of them. */
static int flow_below(void *ctx, const uint32_t *path, size_t depth)
{
    struct ember_flame_layout *l = ctx;
    const struct below *b = l->below;
    uint32_t x = path[depth - 1];
    int err = open_path(l, path, depth);
    if (err)
        return err;
    l->time += b->total[x] - ember_profile_self(l->p, x, l->wm);
    l->hidden_frames += b->frames[x];
    if (l->diff && b->maxd[x] > l->maxdelta)
        l->maxdelta = b->maxd[x];
    return 0;
}

static bool bit(const uint64_t *b, uint32_t n)
{
    return b[n >> 6] >> (n & 63) & 1;
}

static void set_bit(uint64_t *b, uint32_t n)
{
    b[n >> 6] |= (uint64_t)1 << (n & 63);
}

/* The frames' names, read once for sorting. */
struct frame_names {
    const char **str;
    size_t *len;
    uint32_t count;
};

static int frame_names_get(const struct ember_profile *p, struct frame_names *f)
{
    f->count = ember_profile_frame_count(p);
    size_t n = f->count ? f->count : 1;
    f->str = malloc(n * sizeof(*f->str));
    f->len = malloc(n * sizeof(*f->len));
    if (!f->str || !f->len)
        return -ENOMEM;
    for (uint32_t i = 0; i < f->count; i++)
        f->str[i] = ember_profile_frame_name(p, i, &f->len[i]);
    return 0;
}

static int name_cmp(const void *va, const void *vb, void *ctx)
{
    const struct frame_names *f = ctx;
    uint32_t a = *(const uint32_t *)va, b = *(const uint32_t *)vb;
    int c = memcmp(f->str[a], f->str[b], f->len[a] < f->len[b] ? f->len[a] : f->len[b]);
    return c ? c : (f->len[a] > f->len[b]) - (f->len[a] < f->len[b]);
}

enum { MAX_EXTENSIONS = 32 };

/* For each frame, the frames whose names extend its name by a byte below
 * ';' (they sort right after it): ext[f] .. ext[f] + next[f] in sorted,
 * next[f] > MAX_EXTENSIONS: too many to look up. */
static int name_extensions(const struct ember_profile *p, uint32_t **sorted, uint32_t **ext,
                           uint32_t **next)
{
    struct frame_names names, *f = &names;
    int err = frame_names_get(p, f);
    size_t n = f->count ? f->count : 1;
    *sorted = malloc(n * sizeof(**sorted));
    *ext = malloc(n * sizeof(**ext));
    *next = calloc(n, sizeof(**next));
    if (err || !*sorted || !*ext || !*next) {
        free(f->str);
        free(f->len);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < f->count; i++)
        (*sorted)[i] = i;
    qsort_r(*sorted, f->count, sizeof(**sorted), name_cmp, (void *)f);
    for (uint32_t i = 0; i < f->count; i++) {
        uint32_t a = (*sorted)[i], j = i + 1;
        for (; j < f->count && j - i <= MAX_EXTENSIONS; j++) {
            uint32_t b = (*sorted)[j];
            if (f->len[b] <= f->len[a] || memcmp(f->str[a], f->str[b], f->len[a]) != 0 ||
                (unsigned char)f->str[b][f->len[a]] >= ';')
                break;
        }
        (*ext)[a] = i + 1;
        (*next)[a] = j - i - 1;
    }
    free(f->str);
    free(f->len);
    return 0;
}

/* The self weights the layout reads, by node: the drawn value's, and in a
 * differential profile (two values) also BEFORE's. */
struct weights {
    const int64_t *drawn, *before; /* before: NULL unless differential */
};

static struct weights weights_of(const struct ember_profile *p, unsigned wm, bool diff)
{
    return (struct weights){ember_profile_self_values(p, wm),
                            diff ? ember_profile_self_values(p, 0) : NULL};
}

/* Whether node n's own line is drawn: flow skips the lines without weight
 * in the drawn value (a differential graph draws any line with weight). */
static bool drawn(const struct weights *w, uint32_t n)
{
    return w->drawn[n] != 0 || (w->before && w->before[n] != 0);
}

/* The frames node n makes: none without drawn lines, two when split.
 * lines: bit per node, drawn lines below it. bad: the siblings that could
 * split it were too many to look up. */
static uint32_t node_frames(const struct ember_profile *p, const struct weights *w, uint32_t n,
                            const uint64_t *lines, const uint32_t *sorted, const uint32_t *ext,
                            const uint32_t *next, bool *bad)
{
    bool self = drawn(w, n), below = bit(lines, n);
    uint32_t f = ember_profile_node_frame(p, n), up = ember_profile_node_parent(p, n);
    if (!self || !below || next[f] == 0)
        return self || below;
    if (next[f] > MAX_EXTENSIONS) {
        *bad = true;
        return 2;
    }
    for (uint32_t i = ext[f]; i < ext[f] + next[f]; i++) {
        uint32_t sib = ember_profile_child_lookup(p, up, sorted[i]);
        if (sib && (drawn(w, sib) || bit(lines, sib)))
            return 2;
    }
    return 1;
}

static void below_free(struct below *b)
{
    free(b->total);
    free(b->frames);
    free(b->maxd);
    free(b->skip);
}

/* Sums each subtree (children have larger indices than their parents)
 * and marks the nodes narrower than min_time, with drawn lines below, for
 * pruning. Weights below 0 would make a subtree's frames wider than it:
 * then nothing is pruned. */
static int below_build(const struct ember_profile *p, unsigned wm, bool diff, double min_time,
                       struct below *b)
{
    size_t nn = ember_profile_node_count(p), words = (nn + 63) / 64;
    struct weights w = weights_of(p, wm, diff);
    uint32_t *sorted = NULL, *ext = NULL, *next = NULL;
    uint64_t *lines = calloc(words, sizeof(*lines)), *bad = calloc(words, sizeof(*bad));
    /* read at each node's parent, anywhere: huge pages spare the TLB */
    b->total = ember_table_calloc(nn, sizeof(*b->total));
    b->frames = ember_table_calloc(nn, sizeof(*b->frames));
    b->maxd = diff ? ember_table_calloc(nn, sizeof(*b->maxd)) : NULL;
    b->skip = calloc(words, sizeof(*b->skip));
    int err = !lines || !bad || !b->total || !b->frames || (diff && !b->maxd) || !b->skip
                  ? -ENOMEM
                  : name_extensions(p, &sorted, &ext, &next);
    bool negative = false;
    for (uint32_t n = (uint32_t)nn; !err && n-- > 1;) {
        if (drawn(&w, n) || bit(lines, n))
            set_bit(lines, ember_profile_node_parent(p, n));
        negative |= w.drawn[n] < 0;
    }
    for (uint32_t n = (uint32_t)nn; !err && !negative && n-- > 1;) {
        uint32_t up = ember_profile_node_parent(p, n);
        bool nb = false;
        uint64_t fr = (uint64_t)b->frames[up] + b->frames[n] +
                      node_frames(p, &w, n, lines, sorted, ext, next, &nb);
        if (nb || bit(bad, n) || fr > UINT32_MAX)
            set_bit(bad, up);
        b->frames[up] = fr > UINT32_MAX ? UINT32_MAX : (uint32_t)fr;
        b->total[n] += w.drawn[n];
        b->total[up] += b->total[n];
        if (diff) {
            int64_t d = llabs(w.drawn[n] - w.before[n]);
            d = d > b->maxd[n] ? d : b->maxd[n];
            b->maxd[up] = d > b->maxd[up] ? d : b->maxd[up];
        }
        if (bit(lines, n) && !bit(bad, n) && (double)b->total[n] < min_time)
            set_bit(b->skip, n);
    }
    free(lines);
    free(bad);
    free(sorted);
    free(ext);
    free(next);
    return err;
}

static int frame_cmp(const void *va, const void *vb)
{
    const struct ember_flame_frame *a = va, *b = vb;
    if (a->depth != b->depth)
        return a->depth < b->depth ? -1 : 1;
    return a->start < b->start ? -1 : a->start > b->start;
}

int ember_flame_layout_build(struct ember_flame_layout *l, bool flamechart)
{
    struct below below = {0};
    l->below = &below;
    int err = 0;
    if (flamechart) {
        err = ember_profile_walk_sequence(l->p, flow, l);
    } else {
        err = l->min_time > 0 ? below_build(l->p, l->wm, l->diff, l->min_time, &below) : 0;
        if (!err)
            err = ember_profile_walk_pruned(l->p, flow, below.skip, flow_below, l);
    }
    below_free(&below);
    l->below = NULL;
    for (size_t k = l->nopen; k-- > 0 && !err;)
        err = close_frame(l, k + 1, &l->open[k], k ? &l->open[k - 1] : &l->root);
    if (!err)
        err = close_frame(l, 0, &l->root, NULL);
    if (!err && l->nframes)
        qsort(l->frames, l->nframes, sizeof(*l->frames), frame_cmp);
    return err;
}

void ember_flame_layout_free(struct ember_flame_layout *l)
{
    free(l->open);
    free(l->frames);
}
