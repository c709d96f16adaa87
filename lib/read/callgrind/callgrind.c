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
 *
 * This file reads the body's lines and drives the reading;
 * callgrind_header.c reads the header lines, callgrind_graph.c keeps the
 * names and the call graph, with the state they share in callgrind_read.h.
 */
#include "read/callgrind/callgrind_read.h"
#include "read/read_impl.h"
#include "base/chunk.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <string.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int ember_callgrind_error(struct cg_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int err = ember_diag_vset(r->d, -EINVAL, r->file, r->line, fmt, ap);
    va_end(ap);
    return err;
}

static bool is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The next blank-separated word of [s, s+n) from *i: its start and length,
 * length 0 at the end. */
size_t ember_callgrind_next_word(const char *s, size_t n, size_t *i, size_t *start)
{
    while (*i < n && is_blank(s[*i]))
        (*i)++;
    *start = *i;
    while (*i < n && !is_blank(s[*i]))
        (*i)++;
    return *i - *start;
}

/* ---- lines ------------------------------------------------------------------ */

/* A number: decimal or 0x hex; false if [s, s+n) is not one. */
bool ember_callgrind_parse_u64(const char *s, size_t n, uint64_t *v)
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
        if (!ember_callgrind_parse_u64(s + 1, n - 1, &u) || u > INT64_MAX)
            return false;
        int64_t delta = s[0] == '-' ? -(int64_t)u : (int64_t)u;
        return !__builtin_add_overflow(prev, delta, v);
    }
    if (!ember_callgrind_parse_u64(s, n, &u) || u > INT64_MAX)
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
            return ember_callgrind_overflow(r);
    return 0;
}

/* Reads a cost line's columns into v (zero past the last given); its event
 * columns into *out. A function's own line (self) counts in the part's
 * sums; a call's inclusive cost does not. */
static int cost_line(struct cg_reader *r, const char *s, size_t n, bool self, struct costs *out)
{
    if (!r->have_events)
        return ember_callgrind_error(
            r, "cost line before any \"events:\" line (expected the header first)");
    unsigned cols = r->npos + r->nevents, k = 0;
    int64_t v[MAX_COLUMNS];
    size_t i = 0, start, len;
    while ((len = ember_callgrind_next_word(s, n, &i, &start)) > 0) {
        if (k >= cols)
            return ember_callgrind_error(
                r,
                "cost line with more than %u columns (expected %u positions and "
                "%u events)",
                cols, r->npos, r->nevents);
        if (!parse_token(s + start, len, r->prev[k], &v[k]))
            return ember_callgrind_error(
                r,
                "bad cost line column %u: \"%.*s\" (expected a number, 0xHEX, "
                "+N, -N or *)",
                k + 1, (int)(len > 40 ? 40 : len), s + start);
        k++;
    }
    if (k < r->npos)
        return ember_callgrind_error(
            r, "cost line with %u columns (expected %u positions, then costs)", k, r->npos);
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
            return ember_callgrind_error(r, "negative cost %lld (expected counts of events)",
                                         (long long)out->v[c]);
    }
    return 0;
}

static size_t key_length(const char *s, size_t n, char sep)
{
    size_t i = 0;
    while (i < n && is_word(s[i]))
        i++;
    return i > 0 && i < n && s[i] == sep ? i : 0;
}

void ember_callgrind_warn(struct cg_reader *r, const char *fmt, ...)
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
        err = ember_callgrind_name(r, NAME_FILE, v, vn, &id);
        r->fl = r->pos_file = id;
        r->have_fl = true;
    } else if (key_is(s, klen, "fi") || key_is(s, klen, "fe")) {
        err = ember_callgrind_name(r, NAME_FILE, v, vn,
                                   &r->pos_file); /* inlined code: same function */
    } else if (key_is(s, klen, "fn")) {
        err = ember_callgrind_name(r, NAME_FN, v, vn, &r->fn);
        r->have_fn = true;
        r->pos_file = r->fl;
    } else if (key_is(s, klen, "cfi") || key_is(s, klen, "cfl")) {
        err = ember_callgrind_name(r, NAME_FILE, v, vn, &r->cfi);
        r->have_cfi = true;
    } else if (key_is(s, klen, "cfn")) {
        err = ember_callgrind_name(r, NAME_FN, v, vn, &r->cfn);
        r->have_cfn = true;
    } else if (key_is(s, klen, "ob") || key_is(s, klen, "cob")) {
        err = ember_callgrind_name(r, NAME_OBJ, v, vn, &id);
    } else if (key_is(s, klen, "jfi")) {
        err = ember_callgrind_name(r, NAME_FILE, v, vn, &id);
    } else if (key_is(s, klen, "jfn")) {
        err = ember_callgrind_name(r, NAME_FN, v, vn, &id);
    } else if (key_is(s, klen, "calls")) {
        r->pending_call = true;
        r->call_line = r->line;
    } else if (!key_is(s, klen, "jump") && !key_is(s, klen, "jcnd")) {
        ember_callgrind_warn(
            r, "skipped unknown line \"%.*s=...\" (expected fl=, fn=, cfn=, calls= ...)",
            (int)(klen > 40 ? 40 : klen), s);
    }
    return err;
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
        return err ? err : ember_callgrind_add_call(r, &cost);
    }
    size_t i = 0;
    while (i < n && is_blank(s[i]))
        i++;
    if (i == n || s[i] == '#')
        return 0;
    if (is_cost_line(s, n)) {
        struct costs cost;
        int err = cost_line(r, s, n, true, &cost);
        return err ? err : ember_callgrind_add_self(r, &cost);
    }
    size_t k = key_length(s + i, n - i, '=');
    if (k)
        return assignment(r, s + i, k, s + i + k + 1, n - i - k - 1);
    k = key_length(s + i, n - i, ':');
    if (k)
        return ember_callgrind_header(r, s + i, k, s + i + k + 1, n - i - k - 1);
    char q[160];
    ember_quote(q, sizeof(q), s, n, 100);
    return ember_callgrind_error(r,
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
