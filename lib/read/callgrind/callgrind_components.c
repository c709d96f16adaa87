/*
 * callgrind_components.c - a call graph's strongly connected components
 * (Tarjan's algorithm, without recursion), what each costs, and the tree
 * a component is drawn as from the member entered: each member under the
 * member that calls it most (Prim's algorithm on the calls' costs).
 *
 * Invariants: a function belongs to one component; a component's tree
 * holds each member once, its root the member entered.
 */
#include "read/callgrind/callgrind_expand.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- components (Tarjan's algorithm, without recursion) --------------------- */

struct tarjan {
    uint32_t *index, *low, *members;
    bool *on;
    struct {
        uint32_t func, edge;
    } * calls;
    uint32_t next;
    size_t nmembers, ncalls;
};

static void tarjan_push(struct tarjan *t, const struct cg_graph *g, uint32_t f)
{
    t->index[f] = t->low[f] = t->next++;
    t->members[t->nmembers++] = f;
    t->on[f] = true;
    t->calls[t->ncalls].func = f;
    t->calls[t->ncalls++].edge = g->funcs[f].first_edge;
}

/* Pops f's component off the member stack if f is its first member. */
static void tarjan_close(struct tarjan *t, struct expansion *x, uint32_t f)
{
    if (t->low[f] != t->index[f])
        return;
    struct comp *c = &x->comps[x->ncomps];
    c->first = (uint32_t)x->nmembers;
    uint32_t m;
    do {
        m = t->members[--t->nmembers];
        t->on[m] = false;
        x->fs[m].comp = (uint32_t)x->ncomps;
        x->members[x->nmembers++] = m;
    } while (m != f);
    c->size = (uint32_t)x->nmembers - c->first;
    x->ncomps++;
}

static void tarjan_from(struct tarjan *t, struct expansion *x, uint32_t root)
{
    const struct cg_graph *g = x->g;
    tarjan_push(t, g, root);
    while (t->ncalls > 0) {
        uint32_t f = t->calls[t->ncalls - 1].func, e = t->calls[t->ncalls - 1].edge;
        if (e != CG_NONE) {
            uint32_t to = g->edges[e].to;
            t->calls[t->ncalls - 1].edge = g->edges[e].next;
            if (t->index[to] == CG_NONE)
                tarjan_push(t, g, to);
            else if (t->on[to] && t->index[to] < t->low[f])
                t->low[f] = t->index[to];
            continue;
        }
        t->ncalls--;
        if (t->ncalls > 0 && t->low[f] < t->low[t->calls[t->ncalls - 1].func])
            t->low[t->calls[t->ncalls - 1].func] = t->low[f];
        tarjan_close(t, x, f);
    }
}

int ember_callgrind_find_components(struct expansion *x)
{
    size_t n = x->g->nfuncs;
    struct tarjan t = {.index = malloc((n + 1) * sizeof(uint32_t)),
                       .low = malloc((n + 1) * sizeof(uint32_t)),
                       .members = malloc((n + 1) * sizeof(uint32_t)),
                       .on = calloc(n + 1, sizeof(bool)),
                       .calls = malloc((n + 1) * sizeof(*t.calls))};
    x->comps = calloc(n + 1, sizeof(*x->comps));
    x->members = malloc((n + 1) * sizeof(*x->members));
    int err =
        t.index && t.low && t.members && t.on && t.calls && x->comps && x->members ? 0 : -ENOMEM;
    if (!err) {
        memset(t.index, 0xff, n * sizeof(uint32_t)); /* CG_NONE: not seen */
        for (size_t f = 0; f < n; f++)
            if (t.index[f] == CG_NONE)
                tarjan_from(&t, x, (uint32_t)f);
    }
    free(t.index);
    free(t.low);
    free(t.members);
    free(t.on);
    free(t.calls);
    return err;
}

/* Each component's activity, the calls into it, and its entry member. */
void ember_callgrind_measure_components(struct expansion *x)
{
    const struct cg_graph *g = x->g;
    for (size_t i = 0; i < x->ncomps; i++) {
        x->comps[i].best = INT64_MIN;
        x->comps[i].entry = CG_NONE;
    }
    for (uint32_t f = 0; f < g->nfuncs; f++) {
        const struct cg_func *fn = &g->funcs[f];
        struct comp *c = &x->comps[x->fs[f].comp];
        c->exclusive += fn->self;
        for (uint32_t e = fn->first_edge; e != CG_NONE; e = g->edges[e].next) {
            uint32_t to = x->fs[g->edges[e].to].comp;
            if (to != x->fs[f].comp) {
                c->exclusive += g->edges[e].cost;
                x->comps[to].incoming += g->edges[e].cost;
            }
        }
        if (fn->total - fn->incoming > c->best) { /* both >= 0: no overflow */
            c->best = fn->total - fn->incoming;
            c->entry = f;
        }
    }
}

/* ---- the expansion ------------------------------------------------------------ */
/* ---- a component's tree --------------------------------------------------- */

static bool offer_before(const struct offer *a, const struct offer *b)
{
    /* the heaviest call, then the earliest placed caller, then the first
     * function: the same tree every time */
    if (a->cost != b->cost)
        return a->cost > b->cost;
    if (a->from != b->from)
        return a->from < b->from;
    return a->member < b->member;
}

static int offer_push(struct expansion *x, struct offer o)
{
    if (EMBER_VEC_RESERVE(x->heap, x->hcap, x->nheap + 1) < 0)
        return -ENOMEM;
    size_t i = x->nheap++;
    while (i > 0 && offer_before(&o, &x->heap[(i - 1) / 2])) {
        x->heap[i] = x->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    x->heap[i] = o;
    return 0;
}

static struct offer offer_pop(struct expansion *x)
{
    struct offer top = x->heap[0], last = x->heap[--x->nheap];
    size_t i = 0, n = x->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && offer_before(&x->heap[c + 1], &x->heap[c]))
            c++;
        if (!offer_before(&x->heap[c], &last))
            break;
        x->heap[i] = x->heap[c];
        i = c;
    }
    if (n > 0)
        x->heap[i] = last;
    return top;
}

/* Puts member m at position pos of tree t (under the member at position
 * from) and offers its calls to the members not placed yet. */
static int place(struct expansion *x, uint32_t *t, uint32_t size, uint32_t pos, uint32_t m,
                 uint32_t from)
{
    t[pos] = m;
    t[size + pos] = from;
    x->fs[m].mark = x->marks;
    const struct cg_graph *g = x->g;
    int err = 0;
    for (uint32_t e = g->funcs[m].first_edge; e != CG_NONE && !err; e = g->edges[e].next) {
        uint32_t to = g->edges[e].to;
        if (x->fs[to].comp == x->fs[m].comp && x->fs[to].mark != x->marks)
            err = offer_push(x, (struct offer){g->edges[e].cost, to, pos});
    }
    return err;
}

/* The tree in which root's component is drawn when entered at root: each
 * member under the placed member that calls it most (Prim's algorithm for
 * a maximum spanning tree, along calls), so a member's subtree holds the
 * members it is the main caller of, not whatever a search met first. */
static int build_tree(struct expansion *x, uint32_t root, uint32_t *t, uint32_t size)
{
    x->marks++;
    x->nheap = 0;
    int err = place(x, t, size, 0, root, CG_NONE);
    uint32_t n = 1;
    while (!err && n < size && x->nheap > 0) {
        struct offer o = offer_pop(x);
        if (x->fs[o.member].mark != x->marks)
            err = place(x, t, size, n++, o.member, o.from);
    }
    return err;
}

void ember_callgrind_drop_trees(struct expansion *x)
{
    for (size_t i = 0; i < x->ncached; i++) {
        free(x->fs[x->cached[i]].tree);
        x->fs[x->cached[i]].tree = NULL;
    }
    x->ncached = x->cached_members = 0;
}

/* root's tree, built once and kept (until TREE_CACHE members are kept:
 * then all are dropped and built again as needed). */
int ember_callgrind_tree_of(struct expansion *x, uint32_t root, uint32_t size,
                            const uint32_t **tree)
{
    struct fstate *s = &x->fs[root];
    if (!s->tree) {
        if (x->cached_members + size > TREE_CACHE)
            ember_callgrind_drop_trees(x);
        if (EMBER_VEC_RESERVE(x->cached, x->cachecap, x->ncached + 1) < 0 ||
            !(s->tree = malloc(2 * (size_t)size * sizeof(uint32_t))))
            return -ENOMEM;
        x->cached[x->ncached++] = root;
        x->cached_members += size;
        int err = build_tree(x, root, s->tree, size);
        if (err)
            return err;
    }
    *tree = s->tree;
    return 0;
}
