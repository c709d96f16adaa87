/*
 * callgrind_graph.c - callgrind's names ("(id) name" compression, one
 * table each for files, functions and objects) and the call graph they
 * name: functions by (file, name), their self costs, and call edges with
 * their inclusive costs.
 *
 * Invariants: one function per (file of its fl=, name), one edge per
 * (caller, callee), costs never negative and summed without overflow.
 */
#include "read/callgrind/callgrind_read.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

/* ---- names ---------------------------------------------------------------- */

static int intern(struct cg_reader *r, const char *s, size_t n, uint32_t *id)
{
    return ember_profile_intern(r->names, s, n, id);
}

/* "(id) name", "(id)" or "name" of one kind; *out is the interned name. */
int ember_callgrind_name(struct cg_reader *r, enum name_kind kind, const char *s, size_t n,
                         uint32_t *out)
{
    while (n > 0 && is_blank(*s))
        s++, n--;
    if (n < 3 || s[0] != '(' || s[1] < '0' || s[1] > '9')
        return intern(r, s, n, out);
    uint64_t id = 0;
    size_t i = 1;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
        id = id > (UINT64_MAX - 9) / 10 ? UINT64_MAX : id * 10 + (uint64_t)(s[i] - '0');
    if (i == n || s[i] != ')')
        return intern(r, s, n, out);
    size_t at = i + 1;
    while (at < n && is_blank(s[at]))
        at++;
    uint32_t known;
    bool defined = ember_u64map_get(&r->ids[kind], id, &known);
    if (at == n) {
        if (!defined)
            return ember_callgrind_error(
                r,
                "name id (%llu) used before it was defined (expected \"(%llu) "
                "NAME\" first)",
                (unsigned long long)id, (unsigned long long)id);
        *out = known;
        return 0;
    }
    int err = intern(r, s + at, n - at, out);
    if (!err && defined && known != *out)
        return ember_callgrind_error(
            r,
            "name id (%llu) defined again with another name (expected each id "
            "to name one thing)",
            (unsigned long long)id);
    return err ? err : ember_u64map_put(&r->ids[kind], id, *out);
}

/* ---- the call graph -------------------------------------------------------- */

static int func_get(struct cg_reader *r, uint32_t file, uint32_t name, uint32_t *f)
{
    uint64_t key = (uint64_t)file << 32 | name;
    if (ember_u64map_get(&r->func_ids, key, f))
        return 0;
    struct cg_graph *g = &r->g;
    if (g->nfuncs >= CG_NONE - 1 || EMBER_VEC_RESERVE(g->funcs, g->fcap, g->nfuncs + 1) < 0)
        return -ENOMEM;
    size_t need = (g->nfuncs + 1) * g->stride;
    if (EMBER_VEC_RESERVE(g->self, g->scap, need) < 0 ||
        EMBER_VEC_RESERVE(g->total, g->tcap, need) < 0 ||
        EMBER_VEC_RESERVE(g->incoming, g->icap, need) < 0)
        return -ENOMEM;
    size_t at = g->nfuncs * g->stride;
    memset(g->self + at, 0, g->stride * sizeof(*g->self));
    memset(g->total + at, 0, g->stride * sizeof(*g->total));
    memset(g->incoming + at, 0, g->stride * sizeof(*g->incoming));
    *f = (uint32_t)g->nfuncs++;
    g->funcs[*f] =
        (struct cg_func){.name = name, .file = file, .first_edge = CG_NONE, .last_edge = CG_NONE};
    return ember_u64map_put(&r->func_ids, key, *f);
}

int ember_callgrind_overflow(struct cg_reader *r)
{
    return ember_diag_set(r->d, -ERANGE, r->file, r->line, "costs overflow a 64-bit total");
}

static int current_func(struct cg_reader *r, uint32_t *f)
{
    uint32_t unknown;
    int err = intern(r, "???", 3, &unknown);
    if (!err)
        err = func_get(r, r->have_fl ? r->fl : unknown, r->have_fn ? r->fn : unknown, f);
    return err;
}

int ember_callgrind_add_self(struct cg_reader *r, const struct costs *c)
{
    uint32_t f;
    int err = current_func(r, &f);
    if (err)
        return err;
    struct cg_graph *g = &r->g;
    for (unsigned k = 0; k < c->n; k++) {
        if (r->colmap[k] == CG_NONE)
            continue;
        size_t at = (size_t)f * g->stride + r->colmap[k];
        if (__builtin_add_overflow(g->self[at], c->v[k], &g->self[at]) ||
            __builtin_add_overflow(g->total[at], c->v[k], &g->total[at]))
            return ember_callgrind_overflow(r);
    }
    return 0;
}

static int add_edge(struct cg_reader *r, uint32_t from, uint32_t to, const struct costs *c)
{
    struct cg_graph *g = &r->g;
    uint64_t key = (uint64_t)from << 32 | to;
    uint32_t e;
    if (!ember_u64map_get(&r->edge_ids, key, &e)) {
        if (g->nedges >= CG_NONE - 1 || EMBER_VEC_RESERVE(g->edges, g->ecap, g->nedges + 1) < 0)
            return -ENOMEM;
        size_t need = (g->nedges + 1) * g->stride;
        if (EMBER_VEC_RESERVE(g->cost, g->ccap, need) < 0)
            return -ENOMEM;
        memset(g->cost + g->nedges * g->stride, 0, g->stride * sizeof(*g->cost));
        e = (uint32_t)g->nedges++;
        g->edges[e] = (struct cg_edge){.to = to, .next = CG_NONE};
        struct cg_func *fr = &g->funcs[from];
        if (fr->last_edge == CG_NONE)
            fr->first_edge = e;
        else
            g->edges[fr->last_edge].next = e;
        fr->last_edge = e;
        int err = ember_u64map_put(&r->edge_ids, key, e);
        if (err)
            return err;
    }
    for (unsigned k = 0; k < c->n; k++) {
        if (r->colmap[k] == CG_NONE)
            continue;
        unsigned ev = r->colmap[k];
        int64_t cost = c->v[k], *ec = &g->cost[(size_t)e * g->stride + ev],
                *ft = &g->total[(size_t)from * g->stride + ev],
                *ti = &g->incoming[(size_t)to * g->stride + ev];
        if (__builtin_add_overflow(*ec, cost, ec) || __builtin_add_overflow(*ft, cost, ft) ||
            __builtin_add_overflow(*ti, cost, ti))
            return ember_callgrind_overflow(r);
    }
    g->funcs[to].called = true;
    return 0;
}

int ember_callgrind_add_call(struct cg_reader *r, const struct costs *c)
{
    if (!r->have_cfn)
        return ember_diag_set(r->d, -EINVAL, r->file, r->call_line,
                              "calls= without a cfn= before it (expected the called function)");
    uint32_t from, to;
    int err = current_func(r, &from);
    if (!err)
        err = func_get(r, r->have_cfi ? r->cfi : r->pos_file, r->cfn, &to);
    if (!err)
        err = add_edge(r, from, to, c);
    /* as KCachegrind does: a call's cfn=/cfi= hold for that call only */
    r->have_cfi = r->have_cfn = false;
    return err;
}
