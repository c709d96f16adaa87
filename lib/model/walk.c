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
 * Those two texts of every frame are sorted once (ember_piece_ranks), so
 * siblings sort by integers, not by reading their names. A caller may
 * prune: below the nodes it marks, the walk calls it once instead of
 * visiting their lines (a flame graph's frames too narrow to draw), and
 * builds the lists of children only for the nodes it visits.
 *
 * The walk is iterative: stacks can be tens of thousands of frames deep.
 */
#include "model/profile_impl.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

enum { ITEM_SELF = 0, ITEM_BELOW = 1 };

struct walk_item {
    uint32_t rank; /* of the item's text: its name, and ';' for BELOW */
    uint32_t node;
};

struct walk_level {
    size_t start, pos, end; /* this level's items in the item stack */
};

/* Pruning: below a node whose bit is set in skip, below() instead. */
struct walk_prune {
    const uint64_t *skip;
    ember_walk_below_fn below;
};

struct walk {
    const struct ember_profile *p;
    const struct walk_prune *prune;
    uint32_t *rank;
    uint64_t *has_kids; /* bit per node */
    uint32_t *first;    /* a visited node n's children: kids[first[n] .. first[n+1]) */
    uint32_t *kids;
};

/* The order of a frame's two texts, name (kind 0) and name + ';' (kind 1),
 * among all frames' (ties, a name + ';' equal to another name: the shorter
 * name first, as the line order has it). */
struct piece {
    const char *s;
    uint32_t len, frame, kind;
};

/* Byte i of a piece's text, -1 past its end. */
static int piece_byte(const struct piece *pc, size_t i)
{
    return i < pc->len ? (unsigned char)pc->s[i] : i == pc->len && pc->kind ? ';' : -1;
}

static int piece_cmp(const void *va, const void *vb)
{
    const struct piece *a = va, *b = vb;
    uint32_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->s, b->s, n);
    if (c)
        return c;
    /* past the shorter name: at most a ';' on one side before a difference */
    for (size_t i = n;; i++) {
        int ca = piece_byte(a, i), cb = piece_byte(b, i);
        if (ca != cb)
            return ca < cb ? -1 : 1;
        if (ca < 0)
            break;
    }
    if (a->len != b->len)
        return (a->len > b->len) - (a->len < b->len);
    /* the same text: frames of one name in different places, in id order */
    return (a->frame > b->frame) - (a->frame < b->frame);
}

static void piece_swap(struct piece *a, size_t i, size_t j)
{
    struct piece t = a[i];
    a[i] = a[j];
    a[j] = t;
}

/* Sorts n pieces that agree on their first d bytes, as piece_cmp would: a
 * three-way radix quicksort (Bentley and Sedgewick's multikey quicksort),
 * which reads each byte about once where a comparison sort reads a common
 * prefix again at every comparison (names share long ones: "app::Session::").
 * It recurses into the two smaller parts, at most half each, and loops on
 * the largest: the stack stays O(log n) deep, however long the names. */
static void piece_sort(struct piece *a, size_t n, size_t d)
{
    while (n > 1) {
        if (n < 12) {
            for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && piece_cmp(&a[j - 1], &a[j]) > 0; j--)
                    piece_swap(a, j - 1, j);
            return;
        }
        piece_swap(a, 0, n / 2);
        int v = piece_byte(&a[0], d);
        /* a[0, lt): below v; [lt, i): v; (gt, n): above v */
        size_t lt = 0, i = 1, gt = n - 1;
        while (i <= gt) {
            int c = piece_byte(&a[i], d);
            if (c < v)
                piece_swap(a, lt++, i++);
            else if (c > v)
                piece_swap(a, i, gt--);
            else
                i++;
        }
        size_t part[3][2] = {{0, lt}, {lt, gt + 1}, {gt + 1, n}};
        size_t depth[3] = {d, d + 1, d};
        unsigned big = 0;
        for (unsigned k = 1; k < 3; k++)
            if (part[k][1] - part[k][0] > part[big][1] - part[big][0])
                big = k;
        for (unsigned k = 0; k < 3; k++) {
            size_t from = part[k][0], m = part[k][1] - part[k][0];
            if (k == big || m < 2)
                continue;
            if (k == 1 && v < 0) /* the same text: by length, then frame */
                qsort(a + from, m, sizeof(*a), piece_cmp);
            else
                piece_sort(a + from, m, depth[k]);
        }
        if (big == 1 && v < 0) {
            qsort(a + part[1][0], part[1][1] - part[1][0], sizeof(*a), piece_cmp);
            return;
        }
        a += part[big][0];
        n = part[big][1] - part[big][0];
        d = depth[big];
    }
}

int ember_piece_ranks(const struct ember_frames *f, uint32_t **out)
{
    if (f->count > INT32_MAX)
        return -ERANGE;
    size_t n = (size_t)f->count * 2;
    struct piece *pc = malloc((n ? n : 1) * sizeof(*pc));
    uint32_t *rank = malloc((n ? n : 1) * sizeof(*rank));
    if (!pc || !rank) {
        free(pc);
        free(rank);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < f->count; i++)
        for (uint32_t k = 0; k < 2; k++)
            pc[2 * i + k] = (struct piece){f->str[i], f->len[i], i, k};
    piece_sort(pc, n, 0);
    for (size_t i = 0; i < n; i++)
        rank[2 * pc[i].frame + pc[i].kind] = (uint32_t)i + 1;
    free(pc);
    *out = rank;
    return 0;
}

static bool bit(const uint64_t *b, uint32_t n)
{
    return b[n >> 6] >> (n & 63) & 1;
}

static bool has_self(const struct ember_profile *p, uint32_t n)
{
    for (unsigned m = 0; m < p->nvalues; m++)
        if (p->self[m][n])
            return true;
    return false;
}

static bool skipped(const struct walk *w, uint32_t n)
{
    return w->prune && bit(w->prune->skip, n);
}

/* Which nodes have children, and the children of the nodes the walk will
 * visit below: the root, and every child of a visited node not skipped. */
static int children_build(struct walk *w)
{
    const struct ember_profile *p = w->p;
    size_t words = ((size_t)p->nnodes + 63) / 64;
    uint64_t *visit = calloc(words, sizeof(*visit));
    w->has_kids = calloc(words, sizeof(*w->has_kids));
    w->first = ember_table_calloc((size_t)p->nnodes + 1, sizeof(*w->first));
    if (!visit || !w->has_kids || !w->first) {
        free(visit);
        return -ENOMEM;
    }
    visit[0] = 1;
    size_t nkids = 0;
    for (uint32_t n = 1; n < p->nnodes; n++) {
        uint32_t up = p->nodes[n].parent;
        w->has_kids[up >> 6] |= (uint64_t)1 << (up & 63);
        if (!bit(visit, up) || skipped(w, up))
            continue;
        visit[n >> 6] |= (uint64_t)1 << (n & 63);
        w->first[up + 1]++;
        nkids++;
    }
    for (uint32_t n = 0; n < p->nnodes; n++)
        w->first[n + 1] += w->first[n];
    w->kids = malloc((nkids ? nkids : 1) * sizeof(*w->kids));
    if (!w->kids) {
        free(visit);
        return -ENOMEM;
    }
    /* first[up] counts up as each child is placed, ending at first[up+1]:
     * shifting back afterwards gives the starts again */
    for (uint32_t n = 1; n < p->nnodes; n++)
        if (bit(visit, n))
            w->kids[w->first[p->nodes[n].parent]++] = n;
    for (uint32_t n = p->nnodes; n-- > 1;)
        w->first[n] = w->first[n - 1];
    w->first[0] = 0;
    free(visit);
    return 0;
}

static int item_cmp(const void *va, const void *vb)
{
    const struct walk_item *a = va, *b = vb;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Pushes the sorted items of node n's children onto the item stack. */
static int push_items(const struct walk *w, uint32_t n, struct walk_item **items, size_t *len,
                      size_t *cap)
{
    const struct ember_profile *p = w->p;
    size_t start = *len;
    uint32_t nk = w->first[n + 1] - w->first[n];
    if (nk == 0)
        return 0;
    if (EMBER_VEC_RESERVE(*items, *cap, start + 2 * (size_t)nk) < 0)
        return -ENOMEM;
    for (uint32_t i = w->first[n]; i < w->first[n + 1]; i++) {
        uint32_t k = w->kids[i], f = p->nodes[k].frame;
        if (has_self(p, k))
            (*items)[(*len)++] = (struct walk_item){w->rank[2 * (size_t)f + ITEM_SELF], k};
        if (bit(w->has_kids, k))
            (*items)[(*len)++] = (struct walk_item){w->rank[2 * (size_t)f + ITEM_BELOW], k};
    }
    if (*len - start > 1)
        qsort(*items + start, *len - start, sizeof(**items), item_cmp);
    return 0;
}

static int walk(const struct ember_profile *p, ember_walk_fn fn, const struct walk_prune *prune,
                void *ctx)
{
    struct walk w = {.p = p, .prune = prune};
    struct walk_item *items = NULL;
    struct walk_level *levels = NULL;
    uint32_t *path = NULL;
    size_t nitems = 0, icap = 0, lcap = 0, pcap = 0, depth = 0;
    int64_t wt[EMBER_MAX_VALUES] = {0};
    int ret = ember_piece_ranks(&p->frames, &w.rank);
    if (!ret)
        ret = children_build(&w);
    if (!ret)
        ret = push_items(&w, EMBER_ROOT, &items, &nitems, &icap);
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
        uint32_t f = p->nodes[it.node].frame;
        if (it.rank == w.rank[2 * (size_t)f + ITEM_SELF]) {
            for (unsigned m = 0; m < p->nvalues; m++)
                wt[m] = p->self[m][it.node];
            ret = fn(ctx, path, depth + 1, wt);
            continue;
        }
        if (skipped(&w, it.node)) {
            ret = prune->below(ctx, path, depth + 1);
            continue;
        }
        size_t start = nitems;
        if ((ret = push_items(&w, it.node, &items, &nitems, &icap)) < 0)
            break;
        if ((ret = EMBER_VEC_RESERVE(levels, lcap, depth + 2)) < 0)
            break;
        depth++;
        levels[depth] = (struct walk_level){start, start, nitems};
    }
    free(w.rank);
    free(w.has_kids);
    free(w.first);
    free(w.kids);
    free(items);
    free(levels);
    free(path);
    return ret;
}

int ember_profile_walk_pruned(const struct ember_profile *p, ember_walk_fn fn, const uint64_t *skip,
                              ember_walk_below_fn below, void *ctx)
{
    struct walk_prune prune = {skip, below};
    return walk(p, fn, skip ? &prune : NULL, ctx);
}

int ember_profile_walk(const struct ember_profile *p, ember_walk_fn fn, void *ctx)
{
    return walk(p, fn, NULL, ctx);
}

/* The sequence's entries, those at the root (stacks a transform left out)
 * when all. */
static int walk_sequence(const struct ember_profile *p, ember_walk_fn fn, void *ctx, bool all)
{
    uint32_t *path = NULL;
    size_t pcap = 0;
    int64_t w[EMBER_MAX_VALUES] = {0};
    int ret = 0;
    for (size_t i = 0; i < p->seq_len && !ret; i++) {
        size_t depth = 0;
        for (uint32_t n = p->seq_node[i]; n != EMBER_ROOT; n = p->nodes[n].parent)
            depth++;
        if (depth == 0 && !all)
            continue;
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

int ember_profile_walk_sequence(const struct ember_profile *p, ember_walk_fn fn, void *ctx)
{
    return walk_sequence(p, fn, ctx, false);
}

int ember_profile_walk_sequence_all(const struct ember_profile *p, ember_walk_fn fn, void *ctx)
{
    return walk_sequence(p, fn, ctx, true);
}
