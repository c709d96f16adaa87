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
 *
 * This file expands; callgrind_components.c finds the components and
 * their trees, with the state they share in callgrind_expand.h.
 */
#include "read/callgrind/callgrind_expand.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
    int err = drawn > 1 ? ember_callgrind_tree_of(x, root, size, &tree) : 0;
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
        err = ember_callgrind_find_components(&x);
    if (!err) {
        ember_callgrind_measure_components(&x);
        err = expand_roots(&x);
    }
    if (!err && x.nshares)
        err = apportion_all(&x);
    if (x.fs)
        ember_callgrind_drop_trees(&x);
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
