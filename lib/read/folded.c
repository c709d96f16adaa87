/*
 * folded.c - folded stacks, "frame;frame;frame COUNT", as input (the writer
 * is lib/write/folded.c).
 *
 * Input follows flamegraph.pl: the count is the last run of digits (with an
 * optional fraction) after whitespace; if what precedes it also ends in
 * whitespace and a number, the line is differential (before, after). A
 * trailing '\r' is ignored (flamegraph.pl skips CRLF lines entirely).
 * Frames are split on ';'; like Perl's split, trailing empty frames vanish.
 * Lines that do not end in a count are skipped wherever they are, as
 * flamegraph.pl skips them, and one warning at the first says how many
 * (folded_scan.c); detection takes an input whose lines mostly have one
 * (folded_probe). A count beyond 63 bits is an error, not a skipped line.
 *
 * Truncation: folded files need not end with a newline, and a line cut
 * inside its count ("a;b;c 12" cut to "a;b;c 1") or at a line's end is
 * still a valid line, so those cuts cannot be told. A last line without
 * its newline and without a count ("a;b;c", "a;b;c ") can only be a cut
 * one: that is an error, not a skipped line.
 *
 * Speed: the lines are read apart from what is done with them
 * (ember_folded_scan in folded_scan.c: a profile here, merged diffs in
 * stack_diff.c), each shown to a hint one line ahead so that what adding
 * its stack reads is on its way. Stacks go into the profile as text (ember_stack_text_add: a stack
 * seen before is one hash of its text, a new one reuses the previous one's
 * nodes where the texts agree), through the public API alone.
 */
#include "read/read_impl.h"
#include "base/chunk.h"
#include "base/diag.h"
#include "base/vec.h"

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
        if (__builtin_mul_overflow(m, 10, &m) || __builtin_add_overflow(m, s[i] - '0', &m))
            return false;
        if (frac)
            digits++;
    }
    v->mant = m;
    v->digits = digits;
    return true;
}

/* Splits "STACK<ws>COUNT" (the count is the whole last word). A count
 * that does not fit is one all the same (digits, at most one '.'). */
int ember_folded_split_count(const char *s, size_t n, size_t *stack_len, struct ember_decimal *v)
{
    size_t b = n;
    while (b > 0 && ((s[b - 1] >= '0' && s[b - 1] <= '9') || s[b - 1] == '.'))
        b--;
    if (b == 0 || b == n || !is_space((unsigned char)s[b - 1]) || s[b] == '.')
        return 0;
    *stack_len = b - 1;
    if (ember_parse_decimal(s + b, n - b, v))
        return 1;
    const char *dot = memchr(s + b, '.', n - b);
    return dot && memchr(dot + 1, '.', (size_t)(s + n - dot - 1)) ? 0 : -ERANGE;
}

void ember_folded_parse_line(const char *s, size_t n, bool unterminated,
                             struct ember_folded_parsed *p)
{
    if (n > 0 && s[n - 1] == '\r')
        n--;
    size_t slen, slen2;
    p->s = s;
    p->n = n;
    p->l = (struct ember_folded_line){.stack = s};
    int counted = ember_folded_split_count(s, n, &slen, &p->l.count);
    if (counted <= 0) {
        p->kind = counted < 0    ? EMBER_LINE_HUGE
                  : n == 0       ? EMBER_LINE_BLANK
                  : unterminated ? EMBER_LINE_CUT
                                 : EMBER_LINE_SKIPPED;
        return;
    }
    counted = ember_folded_split_count(s, slen, &slen2, &p->l.before);
    p->kind = counted < 0 ? EMBER_LINE_HUGE : EMBER_LINE_COUNTED;
    p->l.diff = counted > 0;
    p->l.len = p->l.diff ? slen2 : slen;
    /* Perl's split drops trailing empty fields */
    while (p->l.len > 0 && s[p->l.len - 1] == ';')
        p->l.len--;
    ember_stack_text_key(s, p->l.len, p->l.hash);
}

/* Reading a profile: its stacks come as text. */
struct folded_tree {
    struct ember_profile *p;
    struct ember_stack_text *t;
};

/* A line to come: what adding it will read fetched. */
static void tree_hint(void *ctx, const struct ember_folded_line *l)
{
    const struct folded_tree *r = ctx;
    ember_stack_text_prefetch(r->t, l->hash);
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
        err = ember_stack_text_add_split(r->t, l->stack, l->len, l->hash, l->ends, l->name_hash,
                                         l->names, &leaf);
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

/* A line's names split on the reading thread, while the tree is behind. */
static size_t tree_split(const void *ctx, const struct ember_folded_line *l, size_t *ends,
                         uint64_t *hashes)
{
    (void)ctx;
    return ember_stack_text_split(';', l->stack, l->len, ends, hashes);
}

static const struct ember_folded_calls tree_calls = {tree_hint, tree_line, NULL, tree_split};

/* Threads from which a file is read in ranges (folded_threads.c) rather
 * than on a thread of its own (folded_scan.c): merging the threads'
 * profiles costs about half of what building them does on a collapsed
 * profile (every line a new stack), so on two threads the reading thread
 * is faster there (1.13-1.41 s against 1.26-2.07 s wall for 245 MB of
 * gen_perf --deep 300000 on the 2-core VM, and 0.97 s against 1.51 s of
 * CPU), while the ranges' serial part is about 1% against 90%: from four
 * threads on they should be ahead (an estimate: this machine has two
 * cores, and no larger one was at hand). */
enum { RANGES_FROM = 4 };

static int folded_read(struct ember_profile *p, struct ember_input *in,
                       const struct ember_read_opts *o, struct ember_read_stats *st,
                       struct ember_diag *d)
{
    int err =
        o->threads >= RANGES_FROM ? ember_folded_read_ranges(p, in, o, st, d, FOLDED_RANGE) : 1;
    if (err != 1)
        return err;
    struct folded_tree r = {p, NULL};
    err = ember_stack_text_new(p, ';', &r.t);
    if (!err)
        err = ember_folded_scan(in, o, st, d, &tree_calls, &r);
    ember_stack_text_free(r.t);
    return err;
}

/* A line the probe takes for folded: "stack COUNT", the stack not
 * starting with whitespace (perf's and DTrace's frames are indented). */
static bool probe_line(const char *s, size_t n)
{
    size_t slen;
    struct ember_decimal v;
    return !is_space((unsigned char)s[0]) && ember_folded_split_count(s, n, &slen, &v) != 0 &&
           slen > 0;
}

void ember_folded_census(const char *data, size_t len, struct ember_folded_census *c)
{
    const char *s = data, *end = data + len, *nl;
    *c = (struct ember_folded_census){0};
    for (uint64_t line = 1; s < end && (nl = memchr(s, '\n', (size_t)(end - s))); line++) {
        size_t n = (size_t)(nl - s);
        if (n > 0 && s[n - 1] == '\r')
            n--;
        bool comment = n == 0 || s[0] == '#'; /* says nothing of the format */
        if (!comment && probe_line(s, n)) {
            c->good++;
        } else if (!comment && c->bad++ == 0) {
            c->first_bad = line;
            c->bad_text = s;
            c->bad_len = n;
        }
        s = nl + 1;
    }
    c->rest = s;
    c->rest_len = (size_t)(end - s);
}

/* Folded when most whole lines of the first bytes are "stack COUNT" (at
 * least as many as not), as flamegraph.pl reads any text and skips the
 * lines it cannot use: one bad line is no reason to refuse the input,
 * wherever it is. Sure when every line is. Without a whole line (a first
 * line longer than what probing sees: a deep stack, or a long name), the
 * cut one tells, or more of it. */
static enum ember_probe folded_probe(const char *data, size_t len)
{
    struct ember_folded_census c;
    ember_folded_census(data, len, &c);
    if (c.good == 0 && c.bad == 0 && c.rest_len && !is_space((unsigned char)c.rest[0]))
        return probe_line(c.rest, c.rest_len) ? EMBER_PROBE_MAYBE : EMBER_PROBE_MORE;
    if (c.good == 0 || c.bad > c.good)
        return EMBER_PROBE_NO;
    return c.bad ? EMBER_PROBE_MAYBE : EMBER_PROBE_YES;
}

const struct ember_format ember_format_folded = {
    .name = "folded",
    .description = "folded stacks \"frame;frame;frame COUNT\" (FlameGraph's format)",
    .probe = folded_probe,
    .read = folded_read,
};
