/*
 * folded.c - folded stacks, "frame;frame;frame COUNT", as input and output.
 *
 * Input follows flamegraph.pl: the count is the last run of digits (with an
 * optional fraction) after whitespace; if what precedes it also ends in
 * whitespace and a number, the line is differential (before, after). A
 * trailing '\r' is ignored (flamegraph.pl skips CRLF lines entirely).
 * Frames are split on ';'; like Perl's split, trailing empty frames vanish.
 * Lines that do not end in a count are skipped with a warning.
 *
 * Truncation: folded files need not end with a newline, and a line cut
 * inside its count ("a;b;c 12" cut to "a;b;c 1") or at a line's end is
 * still a valid line, so those cuts cannot be told. A last line without
 * its newline and without a count ("a;b;c", "a;b;c ") can only be a cut
 * one: that is an error, not a skipped line.
 *
 * Speed: the lines are scanned apart from what is done with them
 * (ember_folded_scan: a profile here, merged diffs in diff.c), each shown
 * to a hint one line ahead so that what adding its stack reads is on its
 * way. Stacks go into the profile as text (ember_stack_text_add: a stack
 * seen before is one hash of its text, a new one reuses the previous one's
 * nodes where the texts agree), through the public API alone.
 */
#include "formats_impl.h"
#include "ember/transform.h"
#include "io/chunk.h"
#include "io/writer.h"
#include "util/diag.h"
#include "util/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

bool ember_parse_decimal(const char *s, size_t n, struct ember_decimal *v)
{
    size_t i = 0;
    int64_t m = 0;
    unsigned digits = 0;
    bool frac = false;
    if (n == 0 || s[0] < '0' || s[0] > '9')
        return false;
    for (; i < n; i++) {
        if (s[i] == '.' && !frac) {
            frac = true;
            continue;
        }
        if (s[i] < '0' || s[i] > '9')
            return false;
        if (frac && digits >= EMBER_MAX_DECIMALS)
            continue; /* beyond what the model keeps */
        if (m > (INT64_MAX - 9) / 10)
            return false;
        m = m * 10 + (s[i] - '0');
        if (frac)
            digits++;
    }
    v->mant = m;
    v->digits = digits;
    return true;
}

/* Splits "STACK<ws>COUNT" (the count is the whole last word); returns false
 * if the line does not end in a count. */
static bool split_count(const char *s, size_t n, size_t *stack_len, struct ember_decimal *v)
{
    size_t b = n;
    while (b > 0 && ((s[b - 1] >= '0' && s[b - 1] <= '9') || s[b - 1] == '.'))
        b--;
    if (b == 0 || b == n || !is_space((unsigned char)s[b - 1]) ||
        !ember_parse_decimal(s + b, n - b, v))
        return false;
    *stack_len = b - 1;
    return true;
}

/* Reading a profile: its stacks come as text. */
struct folded_tree {
    struct ember_profile *p;
    struct ember_stack_text *t;
};

/* A line to come: its stack's hash, and what adding it will read fetched. */
static void tree_hint(void *ctx, struct ember_folded_line *l)
{
    const struct folded_tree *r = ctx;
    ember_stack_text_hint(r->t, l->stack, l->len, l->hash);
}

/* A line into the profile: its stack, and its counts. */
static int tree_line(void *ctx, const struct ember_folded_line *l)
{
    const struct folded_tree *r = ctx;
    struct ember_profile *p = r->p;
    int err = 0;
    if (l->diff && !ember_profile_is_differential(p))
        err = ember_profile_set_differential(p, "samples", "count");
    uint32_t leaf = EMBER_ROOT;
    if (!err)
        err = ember_stack_text_add(r->t, l->stack, l->len, l->hash, &leaf);
    if (!err && l->diff) {
        err = ember_profile_add_decimal(p, leaf, 0, l->before);
        if (!err)
            err = ember_profile_add_decimal(p, leaf, 1, l->count);
    } else if (!err) {
        /* in a differential profile a one-count line is unchanged */
        err = ember_profile_add_decimal(p, leaf, 0, l->count);
        if (!err && ember_profile_is_differential(p))
            err = ember_profile_add_decimal(p, leaf, 1, l->count);
    }
    return err;
}

static const struct ember_folded_calls tree_calls = {tree_hint, tree_line};

/* Reading lines, whatever is done with them. Each line is parsed one line
 * ahead of the callback, and shown to the hint first, so that what the
 * callback will look up is already on its way from memory. */
struct folded_scan {
    const struct ember_read_opts *o;
    struct ember_read_stats *st;
    const char *file;
    uint64_t line;
    struct ember_diag *d;
    const struct ember_folded_calls *fn;
    void *ctx;
};

/* A parsed line: COUNTED has a count, SKIPPED not, CUT is an input's last
 * line without a count or a line end, BLANK is empty. */
enum line_kind { LINE_BLANK, LINE_COUNTED, LINE_SKIPPED, LINE_CUT };

struct parsed {
    enum line_kind kind;
    uint64_t line;
    const char *s; /* the line, for messages */
    size_t n;
    struct ember_folded_line l;
};

static void warn_line(struct folded_scan *r, const struct parsed *p)
{
    r->st->skipped++;
    if (!r->o->warn)
        return;
    struct ember_diag d;
    char q[200];
    ember_quote(q, sizeof(q), p->s, p->n, 120);
    ember_diag_set(&d, 0, r->file, p->line,
                   "skipped line without a count (expected \"frame;frame COUNT\"): \"%s\"", q);
    r->o->warn(r->o->warn_ctx, &d);
}

/* The last line of the input, without its newline nor a count. */
static int cut_line(struct folded_scan *r, const struct parsed *p)
{
    char q[200], inside[240];
    ember_quote(q, sizeof(q), p->s, p->n, 120);
    snprintf(inside, sizeof(inside), "the line \"%s\"", q);
    return ember_format_truncated(r->d, r->file, p->line, inside,
                                  "a count at the end of the line (\"frame;frame COUNT\")");
}

/* A line, without its '\n'; unterminated: it had none (the input's last). */
static void parse_line(const char *s, size_t n, bool unterminated, struct parsed *p)
{
    if (n > 0 && s[n - 1] == '\r')
        n--;
    size_t slen, slen2;
    p->s = s;
    p->n = n;
    p->l = (struct ember_folded_line){.stack = s};
    if (!split_count(s, n, &slen, &p->l.count)) {
        p->kind = n == 0 ? LINE_BLANK : unterminated ? LINE_CUT : LINE_SKIPPED;
        return;
    }
    p->kind = LINE_COUNTED;
    p->l.diff = split_count(s, slen, &slen2, &p->l.before);
    p->l.len = p->l.diff ? slen2 : slen;
    /* Perl's split drops trailing empty fields */
    while (p->l.len > 0 && s[p->l.len - 1] == ';')
        p->l.len--;
}

static int deliver(struct folded_scan *r, struct parsed *p)
{
    if (p->kind == LINE_CUT)
        return cut_line(r, p);
    if (p->kind == LINE_SKIPPED)
        warn_line(r, p);
    if (p->kind != LINE_COUNTED)
        return 0;
    int err = r->fn->line(r->ctx, &p->l);
    if (err == -ERANGE)
        return ember_diag_set(r->d, err, r->file, p->line, "counts overflow a 64-bit total");
    if (!err)
        r->st->samples++;
    return err;
}

/* The lines of a chunk, each delivered after the next one is parsed. */
static int scan_chunk(struct folded_scan *r, const char *s, const char *end)
{
    struct parsed ring[2];
    unsigned cur = 0;
    bool pending = false;
    int err = 0;
    while (s < end && !err) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        struct parsed *p = &ring[cur ^ 1];
        parse_line(s, n, !nl, p);
        p->line = r->line++;
        if (p->kind == LINE_COUNTED && r->fn->hint)
            r->fn->hint(r->ctx, &p->l);
        if (pending)
            err = deliver(r, &ring[cur]);
        cur ^= 1;
        pending = true;
        s += n + 1;
    }
    return !err && pending ? deliver(r, &ring[cur]) : err;
}

int ember_folded_scan(struct ember_input *in, const struct ember_read_opts *o,
                      struct ember_read_stats *st, struct ember_diag *d,
                      const struct ember_folded_calls *fn, void *ctx)
{
    struct folded_scan r = {o, st, ember_input_name(in), 0, d, fn, ctx};
    struct ember_chunk c = {0};
    int err = 0;
    while (!err) {
        int got = ember_input_read_chunk(in, &c, EMBER_CUT_LINE, d);
        if (got <= 0) {
            err = got;
            break;
        }
        r.line = c.first_line;
        err = scan_chunk(&r, c.data, c.data + c.len);
        if (!err && o->progress)
            o->progress(o->progress_ctx, in);
    }
    ember_chunk_release(&c);
    return err;
}

static int folded_read(struct ember_profile *p, struct ember_input *in,
                       const struct ember_read_opts *o, struct ember_read_stats *st,
                       struct ember_diag *d)
{
    struct folded_tree r = {p, NULL};
    int err = ember_stack_text_new(p, ';', &r.t);
    if (!err)
        err = ember_folded_scan(in, o, st, d, &tree_calls, &r);
    ember_stack_text_free(r.t);
    return err;
}

/* Every line of the first bytes (but a possibly cut last one) must be
 * "stack COUNT" with a stack that does not start with whitespace. */
static enum ember_probe folded_probe(const char *data, size_t len)
{
    const char *s = data, *end = data + len;
    unsigned good = 0;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        if (!nl)
            break;
        size_t n = (size_t)(nl - s), slen;
        if (n > 0 && s[n - 1] == '\r')
            n--;
        struct ember_decimal v;
        if (n > 0) {
            if (is_space((unsigned char)s[0]) || !split_count(s, n, &slen, &v) || slen == 0)
                return EMBER_PROBE_NO;
            good++;
        }
        s = nl + 1;
    }
    if (good == 0 && s < end) {
        size_t slen;
        struct ember_decimal v;
        size_t n = (size_t)(end - s);
        if (!is_space((unsigned char)s[0]) && split_count(s, n, &slen, &v) && slen > 0)
            return EMBER_PROBE_MAYBE;
        /* a first line longer than what probing sees (a deep stack, or a
         * long name): its end tells */
        if (!is_space((unsigned char)s[0]))
            return EMBER_PROBE_MORE;
    }
    return good ? EMBER_PROBE_YES : EMBER_PROBE_NO;
}

const struct ember_format ember_format_folded = {
    .name = "folded",
    .description = "folded stacks \"frame;frame;frame COUNT\" (FlameGraph's format)",
    .probe = folded_probe,
    .read = folded_read,
};

/* ---- writing ---------------------------------------------------------- */

struct fold_out {
    struct ember_writer w;
    const struct ember_profile *p;
    bool diff;         /* before and after are written ... */
    unsigned selected; /* ... else this value */
    unsigned decimals;
};

static int write_line(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct fold_out *o = ctx;
    const struct ember_profile *p = o->p;
    if (!o->diff && self[o->selected] == 0)
        return 0; /* a stack with weight in other values only */
    for (size_t i = 0; i < depth; i++) {
        size_t len;
        const char *name = ember_profile_frame_name(p, ember_profile_node_frame(p, path[i]), &len);
        if (i)
            ember_writer_put(&o->w, ";", 1);
        ember_writer_put(&o->w, name, len);
    }
    /* the selected value, or before and after */
    unsigned first = o->diff ? 0 : o->selected, last = o->diff ? 1 : o->selected;
    for (unsigned v = first; v <= last; v++) {
        char num[40];
        num[0] = ' ';
        ember_writer_put(&o->w, num, 1 + ember_weight_format(num + 1, self[v], o->decimals));
    }
    ember_writer_put(&o->w, "\n", 1);
    return o->w.err;
}

int ember_write_folded(const struct ember_profile *p, const struct ember_sink *out)
{
    struct ember_profile *named; /* folded stacks are names */
    int err = ember_profile_names(p, &named);
    struct fold_out *o = err ? NULL : malloc(sizeof(*o));
    if (!o) {
        ember_profile_free(named);
        return err ? err : -ENOMEM;
    }
    ember_writer_init(&o->w, out);
    o->p = named ? named : p;
    o->diff = ember_profile_is_differential(o->p);
    o->selected = ember_profile_selected(o->p);
    o->decimals = ember_profile_decimals(o->p);
    err = ember_profile_walk(o->p, write_line, o);
    int ferr = ember_writer_flush(&o->w);
    free(o);
    ember_profile_free(named);
    return err ? err : ferr;
}
