/*
 * callgrind.c - valgrind's callgrind (and cachegrind) profiles, read by the
 * rules of the Callgrind Format Specification into a call graph, which
 * callgrind_stacks.c turns into stacks.
 *
 * Reading. Header lines "key: value" ("events:" names the cost columns,
 * "positions:" the position columns, default "line"; a file holds one or
 * more parts). Body lines: "fl=", "fi=", "fe=", "fn=", "cfi=", "cfl=",
 * "cfn=", "ob=", "cob=", "jfi=", "jfn=" name what follows, "(id) name"
 * defining an id and "(id)" using it (one table for files, one for
 * functions, one for objects); a cost line is the positions then the costs
 * ("+N", "-N" and "*" are relative to the previous cost line's column; for
 * positions that is the spec's subposition compression, for costs an
 * extension that speedscope's test files use); "calls=COUNT TARGET" says
 * that the next line is the inclusive cost of a call from the current
 * function to cfn= in cfi= (or in the current position's file: fl=, or
 * fi=/fe= in inlined code, as callgrind writes it), after which cfn= and
 * cfi= are forgotten; jump= and jcnd= lines are ignored (the position line
 * after them has no costs). The key of a function is (file of its fl=,
 * name): static functions of the same name in two files stay apart in the
 * graph, and show the same name. Every event is kept, a value of the
 * profile each (events of one name in several parts are one; past
 * EMBER_MAX_VALUES the rest are dropped with a warning, never the one
 * shown); the one shown is --event NAME, else the first of the first
 * "events:" line; counts are weights in the file's own units.
 *
 * Cut-off files. "totals:" gives the sum of a part's cost lines, every
 * event (the spec: "to allow for a consistency check"): it must match.
 * valgrind ends every part with it (callgrind; cachegrind ends its file
 * with "summary:", which cg_annotate requires): so in a file from valgrind
 * (a "creator: callgrind" line, or the "desc: I1 cache:" line that both
 * tools write), input that ends inside a part, before its closing line, is
 * an error naming the last line read. Other writers (speedscope's test
 * files, xdebug) may write neither; their cut-off files cannot be told.
 * "summary:" in a header is what the run cost, which may exceed the cost
 * lines (by a few Ir with --cache-sim=yes), so it is not checked.
 *
 * Memory: the names, the functions and the call edges (what the file
 * describes, not how long it is), then the stacks of the expansion.
 */
#include "read/callgrind/callgrind_impl.h"
#include "read/read_impl.h"
#include "base/chunk.h"
#include "base/u64map.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <string.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAX_COLUMNS = 64 /* positions + events on a cost line */ };

/* Name tables: "fl=(3) x.c" then "fl=(3)". */
enum name_kind { NAME_FILE, NAME_FN, NAME_OBJ, NAME_KINDS };

struct cg_reader {
    struct ember_profile *p;
    const struct ember_read_opts *o;
    struct ember_read_stats *st;
    const char *file;
    struct ember_diag *d;
    uint64_t line;
    struct ember_profile *names;         /* interning of every name read */
    struct ember_u64map ids[NAME_KINDS]; /* compression id -> name */
    struct ember_u64map func_ids;        /* (file name << 32 | fn name) -> func */
    struct ember_u64map edge_ids;        /* (from << 32 | to) -> edge */
    struct cg_graph g;
    /* the current position */
    uint32_t fl, pos_file, fn, cfi, cfn;
    bool have_fl, have_fn, have_cfi, have_cfn;
    /* every event, by name across parts (a value of the profile each) */
    char evname[EMBER_MAX_VALUES][EMBER_UNIT_MAX];
    unsigned nev, sel; /* sel: the event shown, CG_NONE until a part has it */
    /* the cost line layout of the current part */
    unsigned npos, nevents;
    unsigned colmap[MAX_COLUMNS]; /* its event columns -> events; CG_NONE: dropped */
    bool have_events;
    char first_events[256];
    uint64_t events_line;
    int64_t prev[MAX_COLUMNS];
    /* a calls= line waits for its cost line */
    bool pending_call;
    uint64_t call_line;
    /* the part being read, and the line that must close it */
    char events[256];            /* this part's "events:" names */
    int64_t sums[MAX_COLUMNS];   /* its cost lines, per event */
    const char *closing;         /* "totals:" (callgrind), "summary:" (cachegrind), or NULL */
    bool in_part, costs_in_part; /* between "events:" and the closing line */
    uint64_t part_line, last_line;
};

static int cg_error(struct cg_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(struct cg_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int cg_error(struct cg_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int err = ember_diag_vset(r->d, -EINVAL, r->file, r->line, fmt, ap);
    va_end(ap);
    return err;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The next blank-separated word of [s, s+n) from *i: its start and length,
 * length 0 at the end. */
static size_t next_word(const char *s, size_t n, size_t *i, size_t *start)
{
    while (*i < n && is_blank(s[*i]))
        (*i)++;
    *start = *i;
    while (*i < n && !is_blank(s[*i]))
        (*i)++;
    return *i - *start;
}

/* ---- names ---------------------------------------------------------------- */

static int intern(struct cg_reader *r, const char *s, size_t n, uint32_t *id)
{
    return ember_profile_intern(r->names, s, n, id);
}

/* "(id) name", "(id)" or "name" of one kind; *out is the interned name. */
static int parse_name(struct cg_reader *r, enum name_kind kind, const char *s, size_t n,
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
            return cg_error(r,
                            "name id (%llu) used before it was defined (expected \"(%llu) "
                            "NAME\" first)",
                            (unsigned long long)id, (unsigned long long)id);
        *out = known;
        return 0;
    }
    int err = intern(r, s + at, n - at, out);
    if (!err && defined && known != *out)
        return cg_error(r,
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

static int cost_overflow(struct cg_reader *r)
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

/* A cost line's event columns, as (event, cost) pairs: v[c] is column c
 * of the part's events. */
struct costs {
    int64_t v[MAX_COLUMNS];
    unsigned n;
};

static int add_self(struct cg_reader *r, const struct costs *c)
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
            return cost_overflow(r);
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
            return cost_overflow(r);
    }
    g->funcs[to].called = true;
    return 0;
}

static int add_call(struct cg_reader *r, const struct costs *c)
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

/* ---- lines ------------------------------------------------------------------ */

/* A number: decimal or 0x hex; false if [s, s+n) is not one. */
static bool parse_u64(const char *s, size_t n, uint64_t *v)
{
    uint64_t x = 0;
    unsigned base = 10;
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        base = 16, s += 2, n -= 2;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned d;
        if (s[i] >= '0' && s[i] <= '9')
            d = (unsigned)(s[i] - '0');
        else if (base == 16 && s[i] >= 'a' && s[i] <= 'f')
            d = (unsigned)(s[i] - 'a' + 10);
        else if (base == 16 && s[i] >= 'A' && s[i] <= 'F')
            d = (unsigned)(s[i] - 'A' + 10);
        else
            return false;
        if (x > (UINT64_MAX - d) / base)
            return false;
        x = x * base + d;
    }
    *v = x;
    return true;
}

/* One token of a cost line: absolute, or relative to the column's previous
 * value ("+N", "-N", "*"). */
static bool parse_token(const char *s, size_t n, int64_t prev, int64_t *v)
{
    uint64_t u;
    if (n == 1 && s[0] == '*') {
        *v = prev;
        return true;
    }
    if (s[0] == '+' || s[0] == '-') {
        if (!parse_u64(s + 1, n - 1, &u) || u > INT64_MAX)
            return false;
        int64_t delta = s[0] == '-' ? -(int64_t)u : (int64_t)u;
        return !__builtin_add_overflow(prev, delta, v);
    }
    if (!parse_u64(s, n, &u) || u > INT64_MAX)
        return false;
    *v = (int64_t)u;
    return true;
}

static bool is_cost_line(const char *s, size_t n)
{
    return n > 0 && ((s[0] >= '0' && s[0] <= '9') || s[0] == '+' || s[0] == '-' || s[0] == '*');
}

/* Adds a cost line's event columns v[npos..k) to the part's sums. */
static int sum_costs(struct cg_reader *r, const int64_t *v, unsigned k)
{
    for (unsigned c = r->npos; c < k; c++)
        if (__builtin_add_overflow(r->sums[c - r->npos], v[c], &r->sums[c - r->npos]))
            return cost_overflow(r);
    return 0;
}

/* Reads a cost line's columns into v (zero past the last given); its event
 * columns into *out. A function's own line (self) counts in the part's
 * sums; a call's inclusive cost does not. */
static int cost_line(struct cg_reader *r, const char *s, size_t n, bool self, struct costs *out)
{
    if (!r->have_events)
        return cg_error(r, "cost line before any \"events:\" line (expected the header first)");
    unsigned cols = r->npos + r->nevents, k = 0;
    int64_t v[MAX_COLUMNS];
    size_t i = 0, start, len;
    while ((len = next_word(s, n, &i, &start)) > 0) {
        if (k >= cols)
            return cg_error(r,
                            "cost line with more than %u columns (expected %u positions and "
                            "%u events)",
                            cols, r->npos, r->nevents);
        if (!parse_token(s + start, len, r->prev[k], &v[k]))
            return cg_error(r,
                            "bad cost line column %u: \"%.*s\" (expected a number, 0xHEX, "
                            "+N, -N or *)",
                            k + 1, (int)(len > 40 ? 40 : len), s + start);
        k++;
    }
    if (k < r->npos)
        return cg_error(r, "cost line with %u columns (expected %u positions, then costs)", k,
                        r->npos);
    for (unsigned i = 0; i < k; i++)
        r->prev[i] = v[i];
    r->costs_in_part = true;
    int err = self ? sum_costs(r, v, k) : 0;
    if (err)
        return err;
    out->n = k - r->npos;
    for (unsigned c = 0; c < out->n; c++) {
        out->v[c] = v[r->npos + c];
        if (out->v[c] < 0 && r->colmap[c] != CG_NONE)
            return cg_error(r, "negative cost %lld (expected counts of events)",
                            (long long)out->v[c]);
    }
    return 0;
}

static bool starts_with(const char *s, size_t n, const char *prefix)
{
    size_t len = strlen(prefix);
    return n >= len && memcmp(s, prefix, len) == 0;
}

/* The name of event column c of this part, for messages. */
static void event_name(const struct cg_reader *r, unsigned c, char *out, size_t size)
{
    size_t i = 0, start, len = 0, n = strlen(r->events);
    for (unsigned k = 0; k <= c; k++)
        len = next_word(r->events, n, &i, &start);
    snprintf(out, size, "%.*s", (int)len, r->events + start);
}

/* A new part (its "events:" line): the one before it must have closed. */
static int start_part(struct cg_reader *r)
{
    if (r->closing && r->in_part && r->costs_in_part)
        return cg_error(r,
                        "a new part starts before the part from line %llu ended (expected its "
                        "\"%s\" line first: valgrind ends every part with one)",
                        (unsigned long long)r->part_line, r->closing);
    memset(r->sums, 0, sizeof(r->sums));
    r->in_part = true;
    r->costs_in_part = false;
    r->part_line = r->line;
    return 0;
}

/* The counts of a "totals:" or "summary:" line, one per event of the part
 * (missing ones are 0, as on cost lines). */
static int closing_counts(struct cg_reader *r, const char *key, const char *s, size_t n, int64_t *v)
{
    unsigned k = 0;
    size_t i = 0, start, len;
    memset(v, 0, MAX_COLUMNS * sizeof(*v));
    while ((len = next_word(s, n, &i, &start)) > 0) {
        uint64_t u;
        if (k >= r->nevents)
            return cg_error(r, "\"%s\" line with more than %u counts (expected one per event)", key,
                            r->nevents);
        if (!parse_u64(s + start, len, &u) || u > INT64_MAX)
            return cg_error(r, "bad \"%s\" count %u: \"%.*s\" (expected a number)", key, k + 1,
                            (int)(len > 40 ? 40 : len), s + start);
        v[k++] = (int64_t)u;
    }
    return 0;
}

/* "totals:": the sum of the part's cost lines (the spec: "to allow for a
 * consistency check"); it closes the part. */
static int totals_line(struct cg_reader *r, const char *s, size_t n)
{
    int64_t v[MAX_COLUMNS];
    int err = r->have_events ? closing_counts(r, "totals:", s, n, v) : 0;
    for (unsigned c = 0; c < r->nevents && !err; c++)
        if (v[c] != r->sums[c]) {
            char name[64];
            event_name(r, c, name, sizeof(name));
            err = cg_error(r,
                           "\"totals:\" gives %lld %s, the part's cost lines (from line %llu) "
                           "sum to %lld (expected equal: is the file damaged or cut short?)",
                           (long long)v[c], name, (unsigned long long)r->part_line,
                           (long long)r->sums[c]);
        }
    r->in_part = r->costs_in_part = false;
    return err;
}

/* "summary:": in a header (callgrind), what the run cost, which may exceed
 * the cost lines; after them (cachegrind), the line that closes the file,
 * which cg_annotate requires with every event. */
static int summary_line(struct cg_reader *r, const char *s, size_t n)
{
    if (!r->costs_in_part || !r->closing || strcmp(r->closing, "summary:") != 0)
        return 0;
    int64_t v[MAX_COLUMNS];
    int err = closing_counts(r, "summary:", s, n, v);
    size_t i = 0, start, count = 0;
    while (!err && next_word(s, n, &i, &start) > 0)
        count++;
    if (!err && count != r->nevents)
        err = cg_error(r,
                       "\"summary:\" line with %zu counts (expected %u, one per event: is it "
                       "cut short?)",
                       count, r->nevents);
    for (unsigned c = 0; c < r->nevents && !err; c++)
        if (v[c] < r->sums[c]) {
            char name[64];
            event_name(r, c, name, sizeof(name));
            err = cg_error(r,
                           "\"summary:\" gives %lld %s, less than the cost lines' %lld "
                           "(expected at least their sum: is the file damaged or cut short?)",
                           (long long)v[c], name, (long long)r->sums[c]);
        }
    r->in_part = r->costs_in_part = false;
    return err;
}

/* Lays every cost array out with room for n events per function and edge
 * (a later part may name events the first did not). */
static int restride(struct cg_graph *g, unsigned n)
{
    int64_t **arrays[] = {&g->self, &g->total, &g->incoming, &g->cost};
    size_t *caps[] = {&g->scap, &g->tcap, &g->icap, &g->ccap};
    for (int a = 0; a < 4; a++) {
        size_t rows = a < 3 ? g->nfuncs : g->nedges;
        int64_t *dst = calloc(rows ? rows * n : 1, sizeof(*dst));
        if (!dst)
            return -ENOMEM;
        for (size_t i = 0; i < rows; i++)
            memcpy(dst + i * n, *arrays[a] + i * g->stride, g->stride * sizeof(*dst));
        free(*arrays[a]);
        *arrays[a] = dst;
        *caps[a] = rows ? rows * n : 1;
    }
    g->stride = n;
    return 0;
}

/* The event called name[0..len): its index, added when new; CG_NONE when
 * EMBER_MAX_VALUES are kept already (one place stays for the event shown
 * until a part has it). */
static unsigned event_index(struct cg_reader *r, const char *name, size_t len, bool shown)
{
    for (unsigned e = 0; e < r->nev; e++)
        if (strlen(r->evname[e]) == len && memcmp(r->evname[e], name, len) == 0)
            return e;
    unsigned room = EMBER_MAX_VALUES - (r->sel == CG_NONE && !shown);
    if (r->nev >= room) {
        warn(r, "event %.*s not kept (ember keeps %d events of a profile)",
             (int)(len > 60 ? 60 : len), name, EMBER_MAX_VALUES);
        return CG_NONE;
    }
    memcpy(r->evname[r->nev], name, len);
    r->evname[r->nev][len] = '\0';
    return r->nev++;
}

/* "events: A B C": the columns of this part, each an event of the profile
 * by its name; the one shown is --event's, else the first of the first
 * part. */
static int events_line(struct cg_reader *r, const char *s, size_t n)
{
    char *kept = r->st->kept_event;
    size_t i = 0, start, len;
    int err = start_part(r);
    if (err)
        return err;
    snprintf(r->events, sizeof(r->events), "%.*s", (int)(n > 250 ? 250 : n), s);
    if (!r->events_line) {
        r->events_line = r->line;
        snprintf(r->first_events, sizeof(r->first_events), "%.*s", (int)(n > 200 ? 200 : n), s);
        if (r->o->value)
            snprintf(kept, sizeof(r->st->kept_event), "%s", r->o->value);
        else if ((len = next_word(s, n, &i, &start)) > 0)
            snprintf(kept, sizeof(r->st->kept_event), "%.*s", (int)len, s + start);
        i = 0;
    }
    unsigned count = 0;
    size_t klen = strlen(kept);
    while ((len = next_word(s, n, &i, &start)) > 0) {
        if (count >= MAX_COLUMNS - 3)
            return cg_error(r,
                            "\"events:\" line with more than %u names (expected 1 to %u event "
                            "names)",
                            MAX_COLUMNS - 3, MAX_COLUMNS - 3);
        if (len >= EMBER_UNIT_MAX)
            return cg_error(r, "event name \"%.40s...\" of %zu bytes (expected at most %d)",
                            s + start, len, EMBER_UNIT_MAX - 1);
        bool shown = len == klen && memcmp(s + start, kept, len) == 0;
        unsigned e = event_index(r, s + start, len, shown);
        if (shown && e != CG_NONE)
            r->sel = e;
        r->colmap[count++] = e;
    }
    if (count == 0)
        return cg_error(r, "\"events:\" line with no names (expected 1 to %u event names)",
                        MAX_COLUMNS - 3);
    r->nevents = count;
    r->have_events = true;
    memset(r->prev, 0, sizeof(r->prev));
    return r->nev > r->g.stride ? restride(&r->g, r->nev) : 0;
}

/* "positions: instr line": how many position columns start a cost line. */
static int positions_line(struct cg_reader *r, const char *s, size_t n)
{
    unsigned count = 0;
    size_t i = 0, start;
    while (next_word(s, n, &i, &start) > 0)
        count++;
    if (count == 0 || count > 3)
        return cg_error(r,
                        "\"positions:\" line with %u names (expected one to three of instr, "
                        "bb, line)",
                        count);
    r->npos = count;
    memset(r->prev, 0, sizeof(r->prev));
    return 0;
}

/* "key: value" (header line) or "key=value" (position name); the length of
 * the key, or 0 if the line is neither. */
static size_t key_length(const char *s, size_t n, char sep)
{
    size_t i = 0;
    while (i < n && is_word(s[i]))
        i++;
    return i > 0 && i < n && s[i] == sep ? i : 0;
}

static bool key_is(const char *s, size_t klen, const char *key)
{
    return strlen(key) == klen && memcmp(s, key, klen) == 0;
}

static void warn(struct cg_reader *r, const char *fmt, ...)
{
    r->st->skipped++;
    if (!r->o->warn)
        return;
    struct ember_diag d;
    va_list ap;
    va_start(ap, fmt);
    ember_diag_vset(&d, 0, r->file, r->line, fmt, ap);
    va_end(ap);
    r->o->warn(r->o->warn_ctx, &d);
}

static int assignment(struct cg_reader *r, const char *s, size_t klen, const char *v, size_t vn)
{
    uint32_t id;
    int err = 0;
    if (key_is(s, klen, "fl")) {
        err = parse_name(r, NAME_FILE, v, vn, &id);
        r->fl = r->pos_file = id;
        r->have_fl = true;
    } else if (key_is(s, klen, "fi") || key_is(s, klen, "fe")) {
        err = parse_name(r, NAME_FILE, v, vn, &r->pos_file); /* inlined code: same function */
    } else if (key_is(s, klen, "fn")) {
        err = parse_name(r, NAME_FN, v, vn, &r->fn);
        r->have_fn = true;
        r->pos_file = r->fl;
    } else if (key_is(s, klen, "cfi") || key_is(s, klen, "cfl")) {
        err = parse_name(r, NAME_FILE, v, vn, &r->cfi);
        r->have_cfi = true;
    } else if (key_is(s, klen, "cfn")) {
        err = parse_name(r, NAME_FN, v, vn, &r->cfn);
        r->have_cfn = true;
    } else if (key_is(s, klen, "ob") || key_is(s, klen, "cob")) {
        err = parse_name(r, NAME_OBJ, v, vn, &id);
    } else if (key_is(s, klen, "jfi")) {
        err = parse_name(r, NAME_FILE, v, vn, &id);
    } else if (key_is(s, klen, "jfn")) {
        err = parse_name(r, NAME_FN, v, vn, &id);
    } else if (key_is(s, klen, "calls")) {
        r->pending_call = true;
        r->call_line = r->line;
    } else if (!key_is(s, klen, "jump") && !key_is(s, klen, "jcnd")) {
        warn(r, "skipped unknown line \"%.*s=...\" (expected fl=, fn=, cfn=, calls= ...)",
             (int)(klen > 40 ? 40 : klen), s);
    }
    return err;
}

static int header(struct cg_reader *r, const char *s, size_t klen, const char *v, size_t vn)
{
    while (vn > 0 && is_blank(*v))
        v++, vn--;
    if (key_is(s, klen, "events"))
        return events_line(r, v, vn);
    if (key_is(s, klen, "positions"))
        return positions_line(r, v, vn);
    if (key_is(s, klen, "totals"))
        return totals_line(r, v, vn);
    if (key_is(s, klen, "summary"))
        return summary_line(r, v, vn);
    if (key_is(s, klen, "creator") && starts_with(v, vn, "callgrind"))
        r->closing = "totals:";
    else if (key_is(s, klen, "desc") && starts_with(v, vn, "I1 cache:") && !r->closing)
        r->closing = "summary:"; /* cachegrind's header (callgrind's says creator: first) */
    return 0;                    /* version, cmd, pid, part, event ... */
}

static int on_line(struct cg_reader *r, const char *s, size_t n)
{
    r->last_line = r->line;
    if (n > 0 && s[n - 1] == '\r')
        n--;
    if (r->pending_call) {
        struct costs cost;
        r->pending_call = false;
        if (!is_cost_line(s, n))
            return ember_diag_set(r->d, -EINVAL, r->file, r->line,
                                  "expected the cost line of the call on line %llu (positions "
                                  "and inclusive costs)",
                                  (unsigned long long)r->call_line);
        int err = cost_line(r, s, n, false, &cost);
        return err ? err : add_call(r, &cost);
    }
    size_t i = 0;
    while (i < n && is_blank(s[i]))
        i++;
    if (i == n || s[i] == '#')
        return 0;
    if (is_cost_line(s, n)) {
        struct costs cost;
        int err = cost_line(r, s, n, true, &cost);
        return err ? err : add_self(r, &cost);
    }
    size_t k = key_length(s + i, n - i, '=');
    if (k)
        return assignment(r, s + i, k, s + i + k + 1, n - i - k - 1);
    k = key_length(s + i, n - i, ':');
    if (k)
        return header(r, s + i, k, s + i + k + 1, n - i - k - 1);
    char q[160];
    ember_quote(q, sizeof(q), s, n, 100);
    return cg_error(r,
                    "unrecognized line \"%s\" (expected a cost line, \"key=name\" or "
                    "\"key: value\")",
                    q);
}

/* ---- reading --------------------------------------------------------------- */

static int read_lines(struct cg_reader *r, struct ember_input *in)
{
    struct ember_chunk c = {0};
    int err = 0;
    while (!err) {
        int got = ember_input_read_chunk(in, &c, EMBER_CUT_LINE, r->d);
        if (got <= 0) {
            err = got;
            break;
        }
        r->line = c.first_line;
        for (const char *s = c.data, *end = c.data + c.len; s < end && !err; r->line++) {
            const char *nl = memchr(s, '\n', (size_t)(end - s));
            size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
            err = on_line(r, s, n);
            s += n + 1;
        }
        if (!err && r->o->progress)
            r->o->progress(r->o->progress_ctx, in);
    }
    ember_chunk_release(&c);
    return err;
}

static int check_end(struct cg_reader *r)
{
    if (r->closing && r->in_part)
        return ember_diag_set(r->d, -EINVAL, r->file, r->last_line,
                              "the input ends inside the part from line %llu, before its \"%s\" "
                              "line (valgrind's tools always write it: is the file cut short?)",
                              (unsigned long long)r->part_line, r->closing);
    if (r->pending_call)
        return ember_diag_set(r->d, -EINVAL, r->file, r->call_line,
                              "the input ends after calls= (expected the cost line of the call)");
    if (!r->have_events)
        return ember_diag_set(r->d, -EINVAL, r->file, r->last_line,
                              "the input ends without an \"events:\" line (expected a callgrind "
                              "profile: \"events: Ir ...\", then fn= and cost lines)");
    if (r->sel == CG_NONE)
        return ember_diag_set(r->d, -EINVAL, r->file, r->events_line,
                              "no event \"%s\" in this profile (its events: %s)",
                              r->o->value ? r->o->value : r->st->kept_event, r->first_events);
    return 0;
}

/* Copies event e's costs into the graph's scalars, for the expansion. */
static void use_event(struct cg_graph *g, unsigned e)
{
    for (size_t f = 0; f < g->nfuncs; f++) {
        size_t at = f * g->stride + e;
        g->funcs[f].self = g->self[at];
        g->funcs[f].total = g->total[at];
        g->funcs[f].incoming = g->incoming[at];
    }
    for (size_t k = 0; k < g->nedges; k++)
        g->edges[k].cost = g->cost[k * g->stride + e];
}

/* Every event's stacks, each a value of the profile (named by the event,
 * counting it), the one shown first: its warnings are the ones told. */
static int expand(struct cg_reader *r)
{
    unsigned values[EMBER_MAX_VALUES];
    int err = 0;
    for (unsigned e = 0; e < r->nev && !err; e++)
        err = ember_profile_value(r->p, r->evname[e], "count", &values[e]);
    for (unsigned k = 0; k < r->nev && !err; k++) {
        unsigned e = k == 0 ? r->sel : k <= r->sel ? k - 1 : k;
        struct cg_out out = {.p = r->p,
                             .names = r->names,
                             .o = r->o,
                             .st = r->st,
                             .file = r->file,
                             .d = r->d,
                             .value = values[e],
                             .quiet = k > 0};
        use_event(&r->g, e);
        err = ember_callgrind_stacks(&r->g, &out);
    }
    if (!err)
        ember_profile_select_index(r->p, values[r->sel]);
    return err;
}

static int callgrind_read(struct ember_profile *p, struct ember_input *in,
                          const struct ember_read_opts *o, struct ember_read_stats *st,
                          struct ember_diag *d)
{
    struct cg_reader r = {
        .p = p, .o = o, .st = st, .file = ember_input_name(in), .d = d, .npos = 1, .sel = CG_NONE};
    int err = (r.names = ember_profile_new()) ? 0 : -ENOMEM;
    for (int k = 0; k < NAME_KINDS && !err; k++)
        err = ember_u64map_init(&r.ids[k]);
    if (!err)
        err = ember_u64map_init(&r.func_ids);
    if (!err)
        err = ember_u64map_init(&r.edge_ids);
    if (!err)
        err = read_lines(&r, in);
    if (!err)
        err = check_end(&r);
    if (!err)
        err = expand(&r);
    for (int k = 0; k < NAME_KINDS; k++)
        ember_u64map_release(&r.ids[k]);
    ember_u64map_release(&r.func_ids);
    ember_u64map_release(&r.edge_ids);
    ember_profile_free(r.names);
    free(r.g.funcs);
    free(r.g.edges);
    free(r.g.self);
    free(r.g.total);
    free(r.g.incoming);
    free(r.g.cost);
    return err;
}

/* "# callgrind format", or a header naming the events before any body. */
static enum ember_probe callgrind_probe(const char *data, size_t len)
{
    static const char magic[] = "# callgrind format";
    if (len >= sizeof(magic) - 1 && memcmp(data, magic, sizeof(magic) - 1) == 0)
        return EMBER_PROBE_YES;
    const char *s = data, *end = data + len;
    for (unsigned lines = 0; s < end && lines < 64; lines++) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        if (n >= 7 && memcmp(s, "events:", 7) == 0)
            return EMBER_PROBE_YES;
        if (n > 0 && s[0] != '#' && !key_length(s, n, ':'))
            return EMBER_PROBE_NO; /* a body line before "events:" */
        if (!nl)
            break;
        s = nl + 1;
    }
    return EMBER_PROBE_NO;
}

const struct ember_format ember_format_callgrind = {
    .name = "callgrind",
    .description = "valgrind callgrind (or cachegrind) output; --event NAME picks the cost",
    .probe = callgrind_probe,
    .read = callgrind_read,
};
