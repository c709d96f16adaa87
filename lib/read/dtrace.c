/*
 * dtrace.c - DTrace stack aggregations (`dtrace -n '... { @[stack()] =
 * count(); }'` or ustack()), by the rules of FlameGraph's stackcollapse.pl.
 *
 * After a 3-line header (column titles, the probe, a blank line), each
 * stack is frame lines, leaf first, then a line holding only its count.
 * A frame loses its "+0x..." offset (from the last '+'; with
 * include_offset, only the leaf does), C++ arguments and trailing template
 * arguments after a "::", and splits Java inline chains "a->b" into
 * a;b_[i]. Rust names that DTrace demangled only partly ("mod`a::b::h<16
 * hex>", "$LT$" escapes) are finished, as inferno-collapse-dtrace does.
 *
 * Deliberate differences from the script: it drops a leading 'L' from
 * every frame (meant for Java's "Lpkg/Class;" names, but it also turns
 * "LZ4_compress" into "Z4_compress"); ember does it only for names with a
 * '/', as stackcollapse-perf does. With --includeoffset, the script cuts
 * the whole stack at its last '+', which loses the leaf when the leaf has
 * no offset (FlameGraph issue 202); ember cuts only the leaf's offset, as
 * inferno does.
 *
 * Truncation: DTrace ends every line it prints, and every stack with its
 * count. So an input whose last line has no newline (a count cut from
 * "1971" to "19" among them) or whose last stack has no count was cut
 * short: an error (the script drops such a stack silently). A cut just
 * after a stack's count line cannot be told from the end of the output.
 */
#include "read/read_impl.h"
#include "read/lines.h"
#include "read/perf/perf_tidy.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <string.h>
#include <stdlib.h>

enum { DTRACE_HEADER_LINES = 3 };

static bool is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

struct dtrace_reader {
    struct ember_profile *p;
    const struct ember_lines_at *at;
    bool include_offset;
    struct ember_read_stats *st;
    const char *file;
    struct ember_diag *d;
    uint32_t *frames; /* leaf first, each line's pieces reversed */
    size_t n, cap;
    bool in_stack; /* a frame line of the current stack was read (the leaf's) */
    char *buf;
    size_t bcap;
};

/* "^\s*\d+$": returns true and the count for a count line. */
static bool count_line(const char *s, size_t n, int64_t *v)
{
    size_t i = 0;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    if (i == n)
        return false;
    int64_t c = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        c = c > (INT64_MAX - 9) / 10 ? INT64_MAX : c * 10 + (s[i] - '0');
    }
    *v = c;
    return true;
}

/* The symbol of "module`symbol[+offset]" as ember_tidy_rust leaves it
 * (without the space that a cut " (.llvm.NNN)" suffix leaves), its offset
 * kept. Names only get shorter. */
static size_t tidy_rust(char *b, size_t len)
{
    const char *tick = memchr(b, '`', len);
    size_t start = tick ? (size_t)(tick - b) + 1 : 0;
    const char *plus = memrchr(b + start, '+', len - start);
    size_t off = plus ? (size_t)(plus - b) : len, end = off;
    while (end > start && b[end - 1] == ' ')
        end--;
    size_t n = ember_tidy_rust(b + start, end - start);
    if (n == end - start)
        return len;
    memmove(b + start + n, b + off, len - off);
    return start + n + (len - off);
}

static int add_piece(struct dtrace_reader *r, const char *s, size_t n, bool inlined)
{
    if (EMBER_VEC_RESERVE(r->buf, r->bcap, n + 5) < 0)
        return -ENOMEM;
    char *b = r->buf;
    size_t i = n > 0 && s[0] == 'L' && memchr(s, '/', n) ? 1 : 0;
    memcpy(b, s + i, n - i);
    size_t len = tidy_rust(b, n - i);
    if (EMBER_VEC_RESERVE(r->frames, r->cap, r->n + 1) < 0)
        return -ENOMEM;
    if (!inlined)
        return ember_profile_intern(r->p, b, len, &r->frames[r->n++]);
    /* an inlined piece: views spell it "f_[i]" */
    struct ember_frame fr = {.name = b,
                             .name_len = len,
                             .module = EMBER_NO_MODULE,
                             .kind = EMBER_FRAME_INLINED,
                             .kind_in_name = true};
    return ember_profile_intern_frame(r->p, &fr, &r->frames[r->n++]);
}

static int frame_line(struct dtrace_reader *r, const char *s, size_t n)
{
    while (n > 0 && is_space((unsigned char)*s))
        s++, n--;
    bool leaf = !r->in_stack;
    r->in_stack = true;
    const char *plus = memrchr(s, '+', n);
    if (plus && (!r->include_offset || leaf))
        n = (size_t)(plus - s);
    const char *cc = memmem(s, n, "::", 2);
    if (cc) {
        for (size_t i = n; i-- > (size_t)(cc - s) + 2;) {
            if (s[i] == '(' || s[i] == '<') {
                n = i;
                break;
            }
        }
    }
    if (n == 0)
        s = "-", n = 1;
    /* Perl's split /->/ drops trailing empty pieces */
    while (n >= 2 && memcmp(s + n - 2, "->", 2) == 0)
        n -= 2;
    size_t first = r->n;
    for (size_t start = 0, idx = 0; n > 0 && start <= n; idx++) {
        const char *arrow = memmem(s + start, n - start, "->", 2);
        size_t end = arrow ? (size_t)(arrow - s) : n;
        int err = add_piece(r, s + start, end - start, idx > 0);
        if (err)
            return err;
        start = end + 2;
    }
    /* pieces are in written order; the stack is kept leaf first */
    for (size_t a = first, b = r->n; b > a + 1; a++, b--) {
        uint32_t t = r->frames[a];
        r->frames[a] = r->frames[b - 1];
        r->frames[b - 1] = t;
    }
    return 0;
}

static int end_stack(struct dtrace_reader *r, int64_t count, uint64_t line)
{
    uint32_t node, none;
    int err = 0;
    if (r->n == 0) { /* a count with no frames above it: kept, and visible */
        err = ember_profile_intern(r->p, "[no stack]", 10, &none);
        if (!err)
            err = ember_profile_add_stack(r->p, &none, 1, EMBER_LEAF_FIRST, NULL, &node);
    } else {
        err = ember_profile_add_stack(r->p, r->frames, r->n, EMBER_LEAF_FIRST, NULL, &node);
    }
    if (!err)
        err = ember_profile_add(r->p, node, 0, count);
    if (err == -ERANGE)
        return ember_diag_set(r->d, err, r->file, line, "counts overflow a 64-bit total");
    r->n = 0;
    r->in_stack = false;
    r->st->samples++;
    return err;
}

/* One line of the input (without its end of line). */
static int dtrace_line(void *ctx, const char *s, size_t n, uint64_t line)
{
    struct dtrace_reader *r = ctx;
    int64_t count;
    if (r->at->unterminated)
        return ember_format_truncated(r->d, r->file, line, r->in_stack ? "a stack" : "a line",
                                      "the rest of line %llu and its newline (DTrace ends every "
                                      "line)",
                                      (unsigned long long)line);
    if (line <= DTRACE_HEADER_LINES)
        return 0;
    if (count_line(s, n, &count))
        return end_stack(r, count, line);
    size_t i = 0;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    return i < n ? frame_line(r, s, n) : 0;
}

static int dtrace_read(struct ember_profile *p, struct ember_input *in,
                       const struct ember_read_opts *o, struct ember_read_stats *st,
                       struct ember_diag *d)
{
    struct dtrace_reader r = {.p = p,
                              .include_offset = ember_read_opts_flag(o, "include-offset"),
                              .st = st,
                              .file = ember_input_name(in),
                              .d = d};
    struct ember_lines_at at;
    r.at = &at;
    int err = ember_read_lines(in, o, d, dtrace_line, &r, &at);
    if (!err && r.in_stack)
        err = ember_format_truncated(d, r.file, at.line, "a stack",
                                     "its count, a line holding only a number");
    free(r.frames);
    free(r.buf);
    return err;
}

/* After the header, indented frames and an indented count: sure at the
 * first stack, when no line before it was unindented. DTrace indents
 * every line of its stacks, but the reader takes any line for a frame, so
 * an unindented one (some other output) does not refuse the input by
 * itself: it is DTrace's when such lines are no more than the indented
 * ones (folded stacks are all unindented). */
static enum ember_probe dtrace_probe(const char *data, size_t len)
{
    const char *s = data, *end = data + len, *nl;
    uint64_t line = 0, indented = 0, stray = 0, frames = 0;
    bool stack = false;
    for (; s < end && (nl = memchr(s, '\n', (size_t)(end - s))); s = nl + 1) {
        size_t n = (size_t)(nl - s), i = 0;
        int64_t count;
        if (++line <= DTRACE_HEADER_LINES || n == 0)
            continue;
        while (i < n && is_space((unsigned char)s[i]))
            i++;
        if (i == 0) {
            stray++;
        } else if (count_line(s, n, &count)) {
            if (!frames && !stack)
                return EMBER_PROBE_NO; /* a count before any frame */
            stack = true;
            indented++;
            if (!stray)
                return EMBER_PROBE_YES;
        } else if (i < n) {
            frames++;
            indented++;
        }
    }
    if (stray > indented || !frames)
        return EMBER_PROBE_NO;
    return stack ? EMBER_PROBE_YES : EMBER_PROBE_MAYBE;
}

static const struct ember_format_option dtrace_options[] = {
    {"include-offset", EMBER_OPTION_FLAG, NULL, NULL,
     "DTrace: callers keep their +0x... offsets (stackcollapse.pl --includeoffset)"},
    {NULL, 0, NULL, NULL, NULL},
};

const struct ember_format ember_format_dtrace = {
    .name = "dtrace",
    .description = "DTrace stack()/ustack() aggregations (stackcollapse.pl's input)",
    .probe = dtrace_probe,
    .read = dtrace_read,
    .options = dtrace_options,
    .options_heading = "DTrace options:",
};
