/*
 * callgrind_stacks.c - a callgrind call graph turned into stacks.
 *
 * A call graph does not say which stacks happened (speedscope's
 * callgrind.ts explains why); it says what each function cost by itself and
 * what all of a caller's calls to a callee cost, inclusive. ember draws the
 * stacks these numbers imply, and keeps exact the numbers the file gives:
 *
 * - Self costs. A function's nodes share its self cost (the sum of its own
 *   cost lines, what callgrind_annotate shows) in proportion to how much of
 *   its activity each context holds, rounded so that the parts sum to it
 *   exactly (a running total rounded to nearest: each node is within 1 of
 *   its proportion). Nothing is pruned, nothing moves to a caller.
 * - Recursion. callgrind reports it as calls inside a strongly connected
 *   component of the graph (f -> f'2 -> f'2, a -> b -> a'2 -> b'2 -> a'2).
 *   The inclusive cost of such a call counts again the deeper levels, whose
 *   costs callgrind already added to the same functions' lines and calls.
 *   So the unit is the component: its activity ("exclusive") is its
 *   members' self costs plus its calls out of it. Entered from outside with
 *   weight w, the fraction phi = w / exclusive of that activity happens in
 *   this context: each member gets phi of its self cost, each call out of the
 *   component phi of its cost, as the weight of the callee's context. The
 *   members are drawn once per entry, in a tree rooted at the one entered
 *   where each member sits under the member that calls it most (f;f;leaf,
 *   a;b;a;b; in an interpreter's large cycle, a small function does not
 *   carry the rest of the cycle under it).
 * - Roots. The functions nobody calls, with their whole cost; then each
 *   component whose activity exceeds its callers' calls into it, with the
 *   rest, heaviest first (a thread: clone "calls" start_thread with the
 *   thread's whole cost but was itself called for a few instructions, so
 *   the thread is a stack of its own, clone;start_thread, as perf shows it;
 *   a cycle that nobody calls); then any function with a self cost still
 *   unreached (an inconsistent file).
 * - Names. The frame of f'2 is f: callgrind's --separate-recs level is not a
 *   function of the program, and a recursion is drawn f;f;f as the other
 *   readers draw it. A ';' is kept (folded views spell it ':').
 * - Bounds. A graph can have exponentially many paths: after EXPAND_BUDGET
 *   nodes, a component entered again is drawn as its entry function alone,
 *   and not at all if that has no self cost, or has a node already and
 *   this caller passes it less than half a unit (its self cost goes to its
 *   other nodes, so self costs stay exact); a warning says so. On a Python interpreter's profile
 * (2000 functions) that is 0.5 s.
 *
 * Memory: per function and per component a few words; the trees of the
 * components drawn (at most TREE_CACHE members); one share per node that
 * has a self cost.
 */
#include "read/callgrind/callgrind_impl.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum {
    EXPAND_BUDGET = 1 << 20, /* nodes drawn before components drawn before become leaves */
    TREE_CACHE = 1 << 24     /* members kept in cached component trees */
};

/* A strongly connected component of the call graph. */
struct comp {
    __int128 exclusive;   /* its members' self costs and calls out of it */
    __int128 incoming;    /* calls into it from outside */
    int64_t best;         /* the largest total - incoming among its members */
    uint32_t entry;       /* that member: where a root enters the component */
    uint32_t first, size; /* its members: members[first .. first + size) */
    bool rooted;
};

/* Per function, while expanding. */
struct fstate {
    uint32_t comp, frame;
    uint32_t *tree; /* its component drawn from it: members, then their parents' positions */
    uint64_t mark;  /* placed in the tree being built */
    bool frame_known, expanded, reached;
};

/* A drawn function whose calls out of its component are still to follow. */
struct visit {
    uint32_t func, edge, node; /* edge: the next call to look at */
    double phi;                /* the fraction of its component's activity here */
};

/* The part of its function's self cost that one node should get. */
struct share {
    uint32_t func, node;
    double part;
};

/* A call offered to Prim's algorithm: a member not yet placed, its caller's
 * position in the tree, the call's cost. */
struct offer {
    int64_t cost;
    uint32_t member, from;
};

struct expansion {
    const struct cg_graph *g;
    const struct cg_out *out;
    struct fstate *fs;
    struct comp *comps;
    uint32_t *members; /* the components' members, each component's together */
    size_t ncomps, nmembers;
    struct visit *stack;
    size_t depth, cap;
    struct share *shares;
    size_t nshares, scap;
    struct offer *heap;
    size_t nheap, hcap;
    uint32_t *nodes; /* the nodes of the component being drawn */
    size_t ncap;
    uint32_t *cached; /* the functions with a tree */
    size_t ncached, cached_members, cachecap;
    uint64_t visits, marks;
    bool warned;
};

static void warn(struct expansion *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(struct expansion *x, const char *fmt, ...)
{
    const struct cg_out *out = x->out;
    if (out->quiet)
        return; /* the other events' expansions meet the same functions */
    out->st->skipped++;
    if (!out->o->warn)
        return;
    struct ember_diag d;
    va_list ap;
    va_start(ap, fmt);
    ember_diag_vset(&d, 0, out->file, 0, fmt, ap);
    va_end(ap);
    out->o->warn(out->o->warn_ctx, &d);
}

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

static int find_components(struct expansion *x)
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
static void measure_components(struct expansion *x)
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

/* callgrind names the deeper levels of a recursion f'2 (--separate-recs):
 * the length of the name without that suffix. */
static size_t without_recursion_level(const char *name, size_t len)
{
    size_t i = len;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    return i < len && i >= 2 && name[i - 1] == '\'' ? i - 1 : len;
}

static int frame_of(struct expansion *x, uint32_t func, uint32_t *frame)
{
    struct fstate *s = &x->fs[func];
    if (!s->frame_known) {
        size_t len;
        const char *name = ember_profile_frame_name(x->out->names, x->g->funcs[func].name, &len);
        len = without_recursion_level(name, len);
        /* the function's source file, when callgrind knows it ("???" if not) */
        size_t flen;
        const char *file = ember_profile_frame_name(x->out->names, x->g->funcs[func].file, &flen);
        struct ember_frame fr = {.name = name,
                                 .name_len = len,
                                 .file = flen && strcmp(file, "???") != 0 ? file : NULL,
                                 .file_len = flen,
                                 .module = EMBER_NO_MODULE};
        int err = ember_profile_intern_frame(x->out->p, &fr, &s->frame);
        if (err)
            return err;
        s->frame_known = true;
    }
    *frame = s->frame;
    return 0;
}

static int add_share(struct expansion *x, uint32_t func, uint32_t node, double part)
{
    if (EMBER_VEC_RESERVE(x->shares, x->scap, x->nshares + 1) < 0)
        return -ENOMEM;
    x->shares[x->nshares++] = (struct share){func, node, part};
    x->fs[func].reached = true;
    return 0;
}

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

static void drop_trees(struct expansion *x)
{
    for (size_t i = 0; i < x->ncached; i++) {
        free(x->fs[x->cached[i]].tree);
        x->fs[x->cached[i]].tree = NULL;
    }
    x->ncached = x->cached_members = 0;
}

/* root's tree, built once and kept (until TREE_CACHE members are kept:
 * then all are dropped and built again as needed). */
static int tree_of(struct expansion *x, uint32_t root, uint32_t size, const uint32_t **tree)
{
    struct fstate *s = &x->fs[root];
    if (!s->tree) {
        if (x->cached_members + size > TREE_CACHE)
            drop_trees(x);
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

/* ---- the expansion ------------------------------------------------------------ */

/* Draws one function of a component under parent with its share of its
 * self cost; *node is its node. */
static int draw(struct expansion *x, uint32_t func, double phi, uint32_t parent, uint32_t *node)
{
    int64_t self = x->g->funcs[func].self;
    uint32_t frame;
    int err = frame_of(x, func, &frame);
    if (!err)
        err = ember_profile_child(x->out->p, parent, frame, node);
    if (!err && self > 0)
        err = add_share(x, func, *node, phi * (double)self);
    return err;
}

/* Enters root's component under parent_node with the fraction phi of its
 * activity: draws its members in root's tree and pushes them, so that
 * expand_root follows their calls out of it. Once EXPAND_BUDGET nodes are
 * drawn, a component entered at a root entered before is drawn as root
 * alone, and not at all if root has no self cost or already has a node and
 * this one would hold less than half a unit (its self cost goes to its
 * other nodes). */
static int enter(struct expansion *x, uint32_t root, double phi, uint32_t parent_node)
{
    const struct comp *c = &x->comps[x->fs[root].comp];
    uint32_t size = c->size, drawn = size;
    if (x->visits + size > EXPAND_BUDGET && x->fs[root].expanded) {
        if (!x->warned) {
            x->warned = true;
            warn(x,
                 "the call graph expands to more than %d stacks: from here on, functions "
                 "drawn before are drawn without their callees, and not under callers that "
                 "pass them less than half a unit (self costs stay exact)",
                 EXPAND_BUDGET);
        }
        if (x->g->funcs[root].self == 0 ||
            (x->fs[root].reached && phi * (double)c->exclusive < 0.5))
            return 0;
        drawn = 1;
    }
    uint32_t one[2] = {root, CG_NONE};
    const uint32_t *tree = one;
    int err = drawn > 1 ? tree_of(x, root, size, &tree) : 0;
    if (!err && (EMBER_VEC_RESERVE(x->nodes, x->ncap, size) < 0 ||
                 EMBER_VEC_RESERVE(x->stack, x->cap, x->depth + size) < 0))
        err = -ENOMEM;
    for (uint32_t k = 0; k < drawn && !err; k++) {
        uint32_t parent = k == 0 ? parent_node : x->nodes[tree[size + k]];
        err = draw(x, tree[k], phi, parent, &x->nodes[k]);
    }
    if (err)
        return err;
    x->visits += drawn;
    x->fs[root].expanded = true;
    if (drawn < size)
        return 0;
    for (uint32_t k = size; k-- > 0;)
        x->stack[x->depth++] =
            (struct visit){tree[k], x->g->funcs[tree[k]].first_edge, x->nodes[k], phi};
    return 0;
}

/* Follows v's next call if it leaves the component: an entry into the
 * callee's component, with the fraction of its activity that this call's
 * share of the cost is. */
static int follow(struct expansion *x, struct visit *v)
{
    const struct cg_edge *e = &x->g->edges[v->edge];
    v->edge = e->next;
    uint32_t comp = x->fs[e->to].comp;
    if (comp == x->fs[v->func].comp)
        return 0; /* drawn by the tree */
    double exclusive = (double)x->comps[comp].exclusive;
    double phi = v->phi * (double)e->cost / exclusive;
    return exclusive > 0 && phi > 0 ? enter(x, e->to, phi, v->node) : 0;
}

/* Depth first, without recursion: call graphs can be deep. */
static int expand_root(struct expansion *x, uint32_t root, double phi)
{
    if (!(x->comps[x->fs[root].comp].exclusive > 0))
        return 0;
    int err = enter(x, root, phi, EMBER_ROOT);
    while (!err && x->depth > 0) {
        struct visit *v = &x->stack[x->depth - 1];
        if (v->edge == CG_NONE)
            x->depth--;
        else
            err = follow(x, v);
    }
    return err;
}

/* ---- roots ------------------------------------------------------------------- */

static int cmp_heaviest(const void *a, const void *b)
{
    const int64_t *x = a, *y = b; /* (weight, function) pairs, heaviest first */
    if (x[0] != y[0])
        return x[0] < y[0] ? 1 : -1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

static int64_t clamp64(__int128 v)
{
    return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* The components whose activity exceeds the calls into them, entered at
 * their entry member with the rest, heaviest first. */
static int expand_unexplained(struct expansion *x)
{
    int64_t(*order)[2] = malloc((x->ncomps + 1) * sizeof(*order));
    if (!order)
        return -ENOMEM;
    size_t n = 0;
    for (size_t c = 0; c < x->ncomps; c++) {
        const struct comp *k = &x->comps[c];
        if (!k->rooted && k->exclusive > k->incoming) {
            order[n][0] = clamp64(k->exclusive - k->incoming);
            order[n++][1] = k->entry;
        }
    }
    qsort(order, n, sizeof(*order), cmp_heaviest);
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        const struct comp *k = &x->comps[x->fs[order[i][1]].comp];
        err = expand_root(x, (uint32_t)order[i][1],
                          (double)(k->exclusive - k->incoming) / (double)k->exclusive);
    }
    free(order);
    return err;
}

/* Functions with a self cost that nothing reached, heaviest first, each
 * with its whole component. */
static int expand_unreached(struct expansion *x)
{
    const struct cg_graph *g = x->g;
    int64_t(*order)[2] = malloc((g->nfuncs + 1) * sizeof(*order));
    if (!order)
        return -ENOMEM;
    size_t n = 0;
    for (size_t f = 0; f < g->nfuncs; f++)
        if (g->funcs[f].self > 0 && !x->fs[f].reached) {
            order[n][0] = g->funcs[f].total;
            order[n++][1] = (int64_t)f;
        }
    qsort(order, n, sizeof(*order), cmp_heaviest);
    int err = 0;
    for (size_t i = 0; i < n && !err; i++)
        if (!x->fs[order[i][1]].reached)
            err = expand_root(x, (uint32_t)order[i][1], 1.0);
    free(order);
    return err;
}

static int expand_roots(struct expansion *x)
{
    const struct cg_graph *g = x->g;
    int err = 0;
    /* nobody calls them, so each is a component of its own: all of it */
    for (uint32_t f = 0; f < g->nfuncs && !err; f++)
        if (!g->funcs[f].called && g->funcs[f].total > 0) {
            x->comps[x->fs[f].comp].rooted = true;
            err = expand_root(x, f, 1.0);
        }
    if (!err)
        err = expand_unexplained(x);
    if (!err)
        err = expand_unreached(x);
    return err;
}

/* ---- self costs to nodes ------------------------------------------------------- */

static int add_weight(struct expansion *x, uint32_t node, int64_t w)
{
    if (w <= 0)
        return 0;
    int err = ember_profile_add(x->out->p, node, x->out->value, w);
    if (err == -ERANGE)
        return ember_diag_set(x->out->d, err, x->out->file, 0, "costs overflow a 64-bit total");
    if (!x->out->quiet)
        x->out->st->samples++;
    return err;
}

/* Gives one function's self cost to its nodes s[0..n), in proportion to
 * their shares: a running total rounded to nearest, the last part taking
 * what is left, so that the parts sum to the cost exactly. */
static int apportion(struct expansion *x, const struct share *s, size_t n)
{
    int64_t self = x->g->funcs[s[0].func].self, given = 0;
    long double all = 0, sum = 0;
    for (size_t i = 0; i < n; i++)
        all += s[i].part;
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        sum += s[i].part;
        int64_t upto = i + 1 == n ? self : (int64_t)((long double)self * sum / all + 0.5L);
        if (upto < given)
            upto = given;
        if (upto > self)
            upto = self;
        err = add_weight(x, s[i].node, upto - given);
        given = upto;
    }
    return err;
}

/* The shares grouped by function (a counting sort: stable, so each
 * function's nodes keep the expansion's order), then apportioned. */
static int apportion_all(struct expansion *x)
{
    size_t nf = x->g->nfuncs;
    size_t *start = calloc(nf + 1, sizeof(*start));
    struct share *sorted = malloc((x->nshares + 1) * sizeof(*sorted));
    int err = start && sorted ? 0 : -ENOMEM;
    if (!err) {
        for (size_t i = 0; i < x->nshares; i++)
            start[x->shares[i].func + 1]++;
        for (size_t f = 0; f < nf; f++)
            start[f + 1] += start[f];
        for (size_t i = 0; i < x->nshares; i++)
            sorted[start[x->shares[i].func]++] = x->shares[i];
        for (size_t i = 0, j; i < x->nshares && !err; i = j) {
            for (j = i + 1; j < x->nshares && sorted[j].func == sorted[i].func; j++)
                ;
            err = apportion(x, sorted + i, j - i);
        }
    }
    free(start);
    free(sorted);
    return err;
}

int ember_callgrind_stacks(const struct cg_graph *g, const struct cg_out *out)
{
    struct expansion x = {.g = g, .out = out, .fs = calloc(g->nfuncs + 1, sizeof(*x.fs))};
    int err = x.fs ? 0 : -ENOMEM;
    if (!err)
        err = find_components(&x);
    if (!err) {
        measure_components(&x);
        err = expand_roots(&x);
    }
    if (!err && x.nshares)
        err = apportion_all(&x);
    if (x.fs)
        drop_trees(&x);
    free(x.fs);
    free(x.comps);
    free(x.members);
    free(x.stack);
    free(x.shares);
    free(x.heap);
    free(x.nodes);
    free(x.cached);
    return err;
}
