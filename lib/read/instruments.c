/*
 * instruments.c - the text that Instruments' Edit > Deep Copy puts on the
 * clipboard for a call tree (Time Profiler, Counters, Allocations): the
 * input of FlameGraph's stackcollapse-instruments.pl, and of speedscope's
 * importer. Tab-separated, with a header naming the columns:
 *
 *   Weight<TAB>Self Weight<TAB><TAB>Symbol Name                   (13.4)
 *   96.08 Gc  100.0%<TAB>-<TAB> <TAB>example_app (40414)
 *   46.92 Gc   48.8%<TAB>404.75 Mc<TAB> <TAB>  std::time::Instant::elapsed
 *
 * Other versions say "Running Time" and "Self (ms)" (7.3.1), "Bytes Used"
 * and "Count" (allocations), "Symbol Names" (16.0). A row is a call-tree
 * node: its depth is the indentation of its symbol (relative to the first
 * row's), its weight a number and a unit.
 *
 * Weights: the Self column when there is one (what the script reads);
 * otherwise self = the row's total minus its children's totals (what
 * speedscope computes), never below zero (totals are rounded for display,
 * so children can add up to more than their parent). Units become one
 * unit per profile, kept as exact decimals: milliseconds for times (ns,
 * µs, ms, s, min, h), cycles for counters (Kc, Mc, Gc, Tc), bytes for
 * sizes (Bytes, KB, MB, GB, TB: powers of 1024), a bare number in the
 * header's unit ("Self (ms)") or as a count; "-" is zero. Symbols are kept
 * as written.
 *
 * Deliberate differences from speedscope: it reads a weight with parseInt,
 * so "73.35 MB" counts 73 MB and "2.45 s" 2000 ms, and its self weights
 * inherit the truncation ("start;main 1.00 MB" where Instruments says main
 * allocates nothing itself); ember keeps the decimals and the Self column.
 * The script reads only a CSV layout of old Instruments versions (a "ms"
 * total, then the self count); ember reads the tab-separated copies of
 * today's versions.
 *
 * Errors (file and line): no header with a symbol and a weight column, a
 * row indented less than the first or more than one level deeper than the
 * row before, a weight that is not a number with a known unit, units of
 * different kinds in one copy.
 *
 * Truncation: a deep copy has no end marker, need not end with a newline
 * (16.0's does not), and its totals do not always add up (13.4 shows a
 * node of 1.34 Kc whose only child has 532 cycles and whose self is "-"),
 * so a copy cut between rows, or inside a symbol's name, cannot be told.
 * A last row cut before its symbol (no newline, and no symbol column or
 * only its indentation) can: that is an error saying so.
 *
 * Invariants: path[0..depth) are the open rows, root first: their nodes,
 * and (without a Self column) their totals and their children's totals.
 * Memory is that path and the profile.
 */
#include "read/read_impl.h"
#include "read/lines.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <string.h>
#include <stdlib.h>

enum unit_kind { KIND_NONE, KIND_TIME, KIND_CYCLES, KIND_BYTES, KIND_COUNT };

struct open_row {
    uint32_t node;
    struct ember_decimal total, children;
};

struct inst_reader {
    struct ember_profile *p;
    const struct ember_lines_at *at;
    const struct ember_read_opts *o;
    struct ember_read_stats *st;
    const char *file;
    struct ember_diag *d;
    bool header_done;
    int symbol_col, weight_col; /* -1: none */
    bool weight_is_self;
    enum unit_kind bare; /* the unit of a bare number, from the header */
    enum unit_kind kind; /* the kind of every weight read so far */
    size_t base;         /* the first row's indentation */
    bool base_set;
    struct open_row *path;
    size_t depth, cap;
};

static bool starts_with(const char *s, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    return n >= k && memcmp(s, lit, k) == 0;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The field number col of a tab-separated line. */
static bool field(const char *s, size_t n, int col, const char **f, size_t *len)
{
    for (int i = 0; i < col; i++) {
        const char *tab = memchr(s, '\t', n);
        if (!tab)
            return false;
        n -= (size_t)(tab + 1 - s);
        s = tab + 1;
    }
    const char *tab = memchr(s, '\t', n);
    *f = s;
    *len = tab ? (size_t)(tab - s) : n;
    return true;
}

/* ---- decimals ---- */

static const int64_t pow10s[] = {1,       10,       100,       1000,       10000,      100000,
                                 1000000, 10000000, 100000000, 1000000000, 10000000000};

/* a and b at the same number of digits (the larger); false on overflow */
static bool align(struct ember_decimal *a, struct ember_decimal *b)
{
    struct ember_decimal *lo = a->digits < b->digits ? a : b, *hi = lo == a ? b : a;
    if (__builtin_mul_overflow(lo->mant, pow10s[hi->digits - lo->digits], &lo->mant))
        return false;
    lo->digits = hi->digits;
    return true;
}

static bool dec_add(struct ember_decimal *acc, struct ember_decimal v, int sign)
{
    if (!align(acc, &v))
        return false;
    return !__builtin_add_overflow(acc->mant, sign * v.mant, &acc->mant);
}

/* ---- weights ---- */

struct unit {
    const char *name;
    enum unit_kind kind;
    int64_t mul;    /* to the kind's base unit... */
    unsigned shift; /* ...then divided by 10^shift */
};

static const struct unit units[] = {
    {"ns", KIND_TIME, 1, 6},
    {"\xc2\xb5s", KIND_TIME, 1, 3}, /* µs */
    {"\xce\xbcs", KIND_TIME, 1, 3},
    {"us", KIND_TIME, 1, 3},
    {"ms", KIND_TIME, 1, 0},
    {"s", KIND_TIME, 1000, 0},
    {"min", KIND_TIME, 60000, 0},
    {"h", KIND_TIME, 3600000, 0},
    {"cycles", KIND_CYCLES, 1, 0},
    {"Kc", KIND_CYCLES, 1000, 0},
    {"Mc", KIND_CYCLES, 1000000, 0},
    {"Gc", KIND_CYCLES, 1000000000, 0},
    {"Tc", KIND_CYCLES, 1000000000000, 0},
    {"Bytes", KIND_BYTES, 1, 0},
    {"bytes", KIND_BYTES, 1, 0},
    {"B", KIND_BYTES, 1, 0},
    {"KB", KIND_BYTES, 1 << 10, 0},
    {"MB", KIND_BYTES, 1 << 20, 0},
    {"GB", KIND_BYTES, 1 << 30, 0},
    {"TB", KIND_BYTES, 1LL << 40, 0},
};

/* "404.75 Mc  0.4%", "4273.0ms", "-": the value in the kind's base unit. */
static bool parse_weight(const char *s, size_t n, enum unit_kind bare, struct ember_decimal *v,
                         enum unit_kind *kind)
{
    size_t i = 0, j;
    while (i < n && is_blank(s[i]))
        i++;
    *v = (struct ember_decimal){0, 0};
    *kind = KIND_NONE;
    if (i == n || (s[i] == '-' && (i + 1 == n || is_blank(s[i + 1]))))
        return true; /* nothing, or "-": zero */
    for (j = i; j < n && ((s[j] >= '0' && s[j] <= '9') || s[j] == '.');)
        j++;
    if (!ember_parse_decimal(s + i, j - i, v))
        return false;
    while (j < n && s[j] == ' ')
        j++;
    size_t u = j;
    while (j < n && !is_blank(s[j]) && !(s[j] >= '0' && s[j] <= '9'))
        j++;
    if (j == u) {
        *kind = bare;
        return true;
    }
    for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
        if (strlen(units[k].name) != j - u || memcmp(units[k].name, s + u, j - u) != 0)
            continue;
        if (__builtin_mul_overflow(v->mant, units[k].mul, &v->mant))
            return false;
        v->digits += units[k].shift;
        for (; v->digits > EMBER_MAX_DECIMALS; v->digits--)
            v->mant /= 10; /* below a femtosecond: not kept */
        /* "846.00 ms" is 846: no needless decimals in the profile */
        for (; v->digits > 0 && v->mant % 10 == 0; v->digits--)
            v->mant /= 10;
        *kind = units[k].kind;
        return true;
    }
    return false;
}

/* ---- the header ---- */

static bool is_weight_title(const char *t, size_t n)
{
    static const char *const titles[] = {"Weight", "Running Time", "Bytes Used", "Count",
                                         "Samples"};
    for (size_t i = 0; i < sizeof(titles) / sizeof(titles[0]); i++)
        if (starts_with(t, n, titles[i]))
            return true;
    return false;
}

static int header(struct inst_reader *r, const char *s, size_t n, uint64_t line)
{
    int total = -1, self = -1;
    const char *f;
    size_t len;
    r->symbol_col = -1;
    for (int col = 0; field(s, n, col, &f, &len); col++) {
        if ((len == 11 || len == 12) && starts_with(f, len, "Symbol Name"))
            r->symbol_col = col;
        else if (starts_with(f, len, "Self") && self < 0)
            self = col;
        else if (is_weight_title(f, len) && total < 0)
            total = col;
        if (memmem(f, len, "(ms)", 4))
            r->bare = KIND_TIME;
    }
    if (r->symbol_col < 0 || (self < 0 && total < 0)) {
        char q[200];
        ember_quote(q, sizeof(q), s, n, 120);
        return ember_diag_set(r->d, -EINVAL, r->file, line,
                              "expected the header of an Instruments deep copy: tab-separated "
                              "titles with \"Symbol Name\" and a weight (\"Weight\", \"Self "
                              "Weight\", \"Running Time\", \"Bytes Used\"...), got \"%s\"",
                              q);
    }
    r->weight_is_self = self >= 0;
    r->weight_col = self >= 0 ? self : total;
    r->header_done = true;
    return 0;
}

/* ---- rows ---- */

static int add_self(struct inst_reader *r, uint32_t node, struct ember_decimal v, uint64_t line)
{
    if (v.mant <= 0)
        return 0;
    int err = ember_profile_add_decimal(r->p, node, 0, v);
    if (err == -ERANGE)
        return ember_diag_set(r->d, err, r->file, line, "weights overflow a 64-bit total");
    if (!err)
        r->st->samples++;
    return err;
}

/* Closes the open rows deeper than depth; without a Self column, each
 * one's self weight is its total less its children's. */
static int close_rows(struct inst_reader *r, size_t depth, uint64_t line)
{
    for (; r->depth > depth; r->depth--) {
        struct open_row *o = &r->path[r->depth - 1];
        if (r->weight_is_self)
            continue;
        struct ember_decimal self = o->total;
        bool ok = dec_add(&self, o->children, -1);
        if (ok && r->depth > 1)
            ok = dec_add(&r->path[r->depth - 2].children, o->total, 1);
        if (!ok)
            return ember_diag_set(r->d, -ERANGE, r->file, line, "weights overflow");
        int err = add_self(r, o->node, self, line);
        if (err)
            return err;
    }
    return 0;
}

static int bad_row(struct inst_reader *r, uint64_t line, const char *what, const char *s, size_t n)
{
    char q[200];
    ember_quote(q, sizeof(q), s, n, 120);
    return ember_diag_set(r->d, -EINVAL, r->file, line, "%s: \"%s\"", what, q);
}

/* The row's depth from its symbol's indentation, or -1 (d filled). */
static int row_depth(struct inst_reader *r, size_t indent, size_t *depth, const char *s, size_t n,
                     uint64_t line)
{
    if (!r->base_set) {
        r->base = indent;
        r->base_set = true;
    }
    if (indent < r->base)
        return bad_row(r, line, "a row indented less than the first row (a copy of one tree)", s,
                       n);
    *depth = indent - r->base;
    if (*depth > r->depth)
        return bad_row(r, line, "a row indented more than one level below the row before", s, n);
    return 0;
}

static int push_row(struct inst_reader *r, const char *sym, size_t len, struct ember_decimal w,
                    uint64_t line)
{
    if (EMBER_VEC_RESERVE(r->path, r->cap, r->depth + 1) < 0)
        return -ENOMEM;
    uint32_t frame, node;
    uint32_t parent = r->depth ? r->path[r->depth - 1].node : EMBER_ROOT;
    int err = ember_profile_intern(r->p, sym, len, &frame);
    if (!err)
        err = ember_profile_child(r->p, parent, frame, &node);
    if (err)
        return err;
    r->path[r->depth++] = (struct open_row){node, w, {0, 0}};
    return r->weight_is_self ? add_self(r, node, w, line) : 0;
}

static int row(struct inst_reader *r, const char *s, size_t n, uint64_t line)
{
    const char *sym, *wf;
    size_t slen, wlen, indent = 0, depth;
    bool columns =
        field(s, n, r->symbol_col, &sym, &slen) && field(s, n, r->weight_col, &wf, &wlen);
    while (columns && indent < slen && is_blank(sym[indent]))
        indent++;
    while (columns && slen > indent && is_blank(sym[slen - 1]))
        slen--;
    if ((!columns || indent == slen) && r->at->unterminated)
        return ember_format_truncated(r->d, r->file, line, "a row",
                                      "the rest of the row, up to its symbol");
    if (!columns)
        return bad_row(r, line, "a row without the header's symbol and weight columns", s, n);
    if (indent == slen)
        return bad_row(r, line, "a row without a symbol", s, n);
    struct ember_decimal w;
    enum unit_kind kind;
    if (!parse_weight(wf, wlen, r->bare, &w, &kind))
        return bad_row(r, line, "a weight that is not a number and a known unit (ms, s, Mc, MB...)",
                       wf, wlen);
    if (kind != KIND_NONE && r->kind != KIND_NONE && kind != r->kind)
        return bad_row(r, line, "a weight in another kind of unit than the rows before", wf, wlen);
    if (kind != KIND_NONE)
        r->kind = kind;
    int err = row_depth(r, indent, &depth, s, n, line);
    if (!err)
        err = close_rows(r, depth, line);
    if (!err)
        err = push_row(r, sym + indent, slen - indent, w, line);
    return err;
}

static int on_line(void *ctx, const char *s, size_t n, uint64_t line)
{
    struct inst_reader *r = ctx;
    size_t i = 0;
    while (i < n && is_blank(s[i]))
        i++;
    if (i == n)
        return 0; /* blank lines: Instruments ends its copies with some */
    return r->header_done ? row(r, s, n, line) : header(r, s, n, line);
}

/* What the weights measure, in pprof's words, for writers that say it. */
static void set_unit(struct inst_reader *r)
{
    static const char *const names[][2] = {
        [KIND_TIME] = {"time", "milliseconds"},
        [KIND_CYCLES] = {"cycles", "count"},
        [KIND_BYTES] = {"space", "bytes"},
    };
    if (r->kind == KIND_TIME || r->kind == KIND_CYCLES || r->kind == KIND_BYTES)
        ember_profile_set_unit(r->p, names[r->kind][0], names[r->kind][1]);
}

static int inst_read(struct ember_profile *p, struct ember_input *in,
                     const struct ember_read_opts *o, struct ember_read_stats *st,
                     struct ember_diag *d)
{
    struct inst_reader r = {.p = p, .o = o, .st = st, .file = ember_input_name(in), .d = d};
    struct ember_lines_at at;
    r.at = &at;
    int err = ember_read_lines(in, o, d, on_line, &r, &at);
    uint64_t last = at.line;
    if (!err)
        err = close_rows(&r, 0, last);
    if (!err)
        set_unit(&r);
    if (!err && !r.header_done)
        err = ember_diag_set(d, -EINVAL, r.file, last,
                             "expected the header of an Instruments deep copy (\"Weight<TAB>Self "
                             "Weight<TAB>Symbol Name\"), the input is empty");
    free(r.path);
    return err;
}

/* A first line of tab-separated titles, one of them "Symbol Name(s)". */
static enum ember_probe inst_probe(const char *data, size_t len)
{
    const char *nl = memchr(data, '\n', len);
    size_t n = nl ? (size_t)(nl - data) : len;
    if (n > 0 && data[n - 1] == '\r')
        n--;
    const char *f;
    size_t flen;
    bool symbol = false, weight = false;
    for (int col = 0; field(data, n, col, &f, &flen); col++) {
        symbol |= (flen == 11 || flen == 12) && starts_with(f, flen, "Symbol Name");
        weight |= is_weight_title(f, flen) || starts_with(f, flen, "Self");
    }
    return symbol && weight && memchr(data, '\t', n) ? EMBER_PROBE_YES : EMBER_PROBE_NO;
}

const struct ember_format ember_format_instruments = {
    .name = "instruments",
    .description = "Instruments call trees copied with Edit > Deep Copy",
    .probe = inst_probe,
    .read = inst_read,
};
