/*
 * walk.c - visiting the stacks of a profile in folded-line byte order.
 *
 * FlameGraph sorts folded lines as strings. Walking the trie with siblings
 * sorted by name is not the same order: "a;x" sorts after "a.b;y" because
 * ';' > '.', so the lines under "a" and the line that ends at "a" can be
 * separated by the lines of a sibling "a.b". We therefore sort, per node,
 * items of two kinds: the line ending at a child (its name alone) and the
 * lines below a child (its name followed by ';'). That reproduces string
 * order exactly, and the flame layout built from this walk draws the same
 * frames as flamegraph.pl, including its split frames in that corner case.
 *
 * The walk is iterative: stacks can be tens of thousands of frames deep.
 */
#include "profile_impl.h"
#include "util/vec.h"

#include <errno.h>
#include <stdlib.h>

enum { ITEM_SELF = 0, ITEM_BELOW = 1 };

struct walk_item {
    uint32_t node;
    uint32_t kind;
};

struct walk_level {
    size_t start, pos, end; /* this level's items in the item stack */
};

struct children {
    uint32_t *first; /* node n's children are kids[first[n] .. first[n+1]) */
    uint32_t *kids;
};

static bool has_self(const struct ember_profile *p, uint32_t n)
{
    for (unsigned m = 0; m < p->nvalues; m++)
        if (p->self[m][n])
            return true;
    return false;
}

static int children_build(const struct ember_profile *p, struct children *c)
{
    c->first = calloc((size_t)p->nnodes + 1, sizeof(*c->first));
    c->kids = malloc(((size_t)p->nnodes + 1) * sizeof(*c->kids));
    if (!c->first || !c->kids)
        return -ENOMEM;
    for (uint32_t n = 1; n < p->nnodes; n++)
        c->first[p->nodes[n].parent + 1]++;
    for (uint32_t n = 0; n < p->nnodes; n++)
        c->first[n + 1] += c->first[n];
    uint32_t *fill = malloc((size_t)p->nnodes * sizeof(*fill));
    if (!fill)
        return -ENOMEM;
    memcpy(fill, c->first, (size_t)p->nnodes * sizeof(*fill));
    for (uint32_t n = 1; n < p->nnodes; n++)
        c->kids[fill[p->nodes[n].parent]++] = n;
    free(fill);
    return 0;
}

static int item_cmp(const void *va, const void *vb, void *ctx)
{
    const struct ember_profile *p = ctx;
    const struct walk_item *a = va, *b = vb;
    uint32_t fa = p->nodes[a->node].frame, fb = p->nodes[b->node].frame;
    const unsigned char *na = (const unsigned char *)p->frames.str[fa];
    const unsigned char *nb = (const unsigned char *)p->frames.str[fb];
    size_t la = p->frames.len[fa], lb = p->frames.len[fb];
    int c = memcmp(na, nb, la < lb ? la : lb);
    if (c)
        return c;
    if (la == lb)
        return (int)a->kind - (int)b->kind;
    /* One name is a prefix of the other: compare what follows the shorter
     * one (end of line, or ';') with the longer one's next byte. */
    if (la < lb)
        return a->kind == ITEM_SELF || ';' <= nb[la] ? -1 : 1;
    return b->kind == ITEM_SELF || ';' <= na[lb] ? 1 : -1;
}

/* Pushes the sorted items of node n's children onto the item stack. */
static int push_items(const struct ember_profile *p, const struct children *c, uint32_t n,
                      struct walk_item **items, size_t *len, size_t *cap)
{
    size_t start = *len;
    uint32_t nk = c->first[n + 1] - c->first[n];
    if (nk == 0)
        return 0;
    if (EMBER_VEC_RESERVE(*items, *cap, start + 2 * (size_t)nk) < 0)
        return -ENOMEM;
    for (uint32_t i = c->first[n]; i < c->first[n + 1]; i++) {
        uint32_t k = c->kids[i];
        if (has_self(p, k))
            (*items)[(*len)++] = (struct walk_item){k, ITEM_SELF};
        if (c->first[k + 1] > c->first[k])
            (*items)[(*len)++] = (struct walk_item){k, ITEM_BELOW};
    }
    if (*len > start)
        qsort_r(*items + start, *len - start, sizeof(**items), item_cmp, (void *)p);
    return 0;
}

int ember_profile_walk(const struct ember_profile *p, ember_walk_fn fn, void *ctx)
{
    struct children c = {0};
    struct walk_item *items = NULL;
    struct walk_level *levels = NULL;
    uint32_t *path = NULL;
    size_t nitems = 0, icap = 0, lcap = 0, pcap = 0, depth = 0;
    int64_t w[EMBER_MAX_VALUES] = {0};
    int ret = children_build(p, &c);

    if (!ret)
        ret = push_items(p, &c, EMBER_ROOT, &items, &nitems, &icap);
    if (!ret)
        ret = EMBER_VEC_RESERVE(levels, lcap, 1);
    if (!ret)
        levels[0] = (struct walk_level){0, 0, nitems};
    while (!ret) {
        struct walk_level *lv = &levels[depth];
        if (lv->pos == lv->end) {
            nitems = lv->start;
            if (depth == 0)
                break;
            depth--;
            continue;
        }
        struct walk_item it = items[lv->pos++];
        if ((ret = EMBER_VEC_RESERVE(path, pcap, depth + 1)) < 0)
            break;
        path[depth] = it.node;
        if (it.kind == ITEM_SELF) {
            for (unsigned m = 0; m < p->nvalues; m++)
                w[m] = p->self[m][it.node];
            ret = fn(ctx, path, depth + 1, w);
            continue;
        }
        size_t start = nitems;
        if ((ret = push_items(p, &c, it.node, &items, &nitems, &icap)) < 0)
            break;
        if ((ret = EMBER_VEC_RESERVE(levels, lcap, depth + 2)) < 0)
            break;
        depth++;
        levels[depth] = (struct walk_level){start, start, nitems};
    }
    free(c.first);
    free(c.kids);
    free(items);
    free(levels);
    free(path);
    return ret;
}

int ember_profile_walk_sequence(const struct ember_profile *p, ember_walk_fn fn, void *ctx)
{
    uint32_t *path = NULL;
    size_t pcap = 0;
    int64_t w[EMBER_MAX_VALUES] = {0};
    int ret = 0;
    for (size_t i = 0; i < p->seq_len && !ret; i++) {
        size_t depth = 0;
        for (uint32_t n = p->seq_node[i]; n != EMBER_ROOT; n = p->nodes[n].parent)
            depth++;
        if ((ret = EMBER_VEC_RESERVE(path, pcap, depth)) < 0)
            break;
        size_t d = depth;
        for (uint32_t n = p->seq_node[i]; n != EMBER_ROOT; n = p->nodes[n].parent)
            path[--d] = n;
        for (unsigned m = 0; m < p->nvalues; m++)
            w[m] = p->seq_w[m][i];
        ret = fn(ctx, path, depth, w);
    }
    free(path);
    return ret;
}
