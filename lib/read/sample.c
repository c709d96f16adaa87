/*
 * sample.c - the call graph that macOS `sample` prints, by the rules of
 * inferno's collapse-sample.
 *
 * Everything up to a line starting "Call graph:" is skipped; the graph
 * ends at "Total number in stack" (then another "Call graph:" may follow,
 * so that concatenated outputs work). A graph line is four spaces,
 * indentation made of ' ', '+', '|', ':' and '!' (two characters a
 * level), a sample count and the frame:
 *
 *     + ! 794 rg::search_impl::hcf61284e58f410e0  (in rg) + 172  [0x1037cbcac]
 *
 * A line's count includes its children's, and `sample` lists the samples
 * taken in a function itself as child lines of their own (one per
 * address), so only leaves carry samples: each leaf's stack gets the
 * leaf's count, as inferno does (and the "Sort by top of stack" table that
 * `sample` prints agrees). Frames are "module`function" ("libfoo`f" for
 * "(in libfoo.dylib)"), or the function alone with no_modules; Rust names
 * lose their hash and escapes. Stacks whose leaf is one of the waiting
 * functions inferno hides (__psynch_cvwait, kevent, read, ...) are left out.
 *
 * A graph line that does not fit is an error naming the file and line, as
 * in inferno 0.12: no four spaces, only indentation, an odd indentation, a
 * line indented more than one level below the previous one, no count, a
 * count that is not a number, no function. No call graph at all is an
 * error too.
 *
 * Truncation: sample ends each call graph with a "Total number in stack"
 * line, so an input that ends inside a call graph (a cut capture, or a
 * line of it cut mid-way), or after sample's header ("Analysis of sampling
 * ...") but before "Call graph:", is an error, as in inferno 0.12 (which
 * says it less clearly). A cut after the graph, in the tables that follow
 * (which ember does not read), loses nothing and is not looked for.
 *
 * Deliberate differences from inferno:
 * - a stack met several times adds up its counts: inferno 0.12 keeps the
 *   last count only (its expected result for sample.txt has "__open 2"
 *   where the call graph has 7 + 5 + 2 samples of that stack);
 * - the function is cut at its top-level parameter list, as ember's perf
 *   reader cuts it (quotes dropped, as FlameGraph drops them):
 *   "(anonymous namespace)::Page::pop(void*)" keeps its namespace
 *   (inferno cuts at the first '(' and leaves "");
 * - the module comes only from "(in MODULE)": inferno takes any text
 *   before a ')' when there is no "(in ", so the thread line
 *   "Thread_1   DispatchQueue_1: main-thread  (serial)" gets a module
 *   "Thread_1   DispatchQueue_1: main-thread  (serial".
 *
 * Invariants: path[0..depth) are the trie nodes of the current stack, one
 * a level, and idle[i] says whether path[i]'s function is a waiting one;
 * leaf_pending says the last frame pushed has not been added yet. Memory
 * is that path and the profile, whatever the input's size.
 */
#include "read/read_impl.h"
#include "read/lines.h"
#include "read/perf/perf_tidy.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <string.h>
#include <stdlib.h>

static const char *const idle_functions[] = {
    "__psynch_cvwait",    "__select", "__semwait_signal", "__ulock_wait", "__wait4",
    "__workq_kernreturn", "kevent",   "mach_msg_trap",    "read",         "semaphore_wait_trap",
};

#define HEADER_LINE "Analysis of sampling "
#define START_LINE  "Call graph:"
#define END_LINE    "Total number in stack"

struct sample_reader {
    struct ember_profile *p;
    const struct ember_lines_at *at;
    const struct ember_read_opts *o;
    struct ember_read_stats *st;
    const char *file;
    struct ember_diag *d;
    bool seen_header, in_graph, seen_graph, leaf_pending;
    int64_t count; /* the last line's count */
    uint32_t *path;
    bool *idle;
    size_t depth, cap, icap;
    char *buf;
    size_t bcap;
};

static bool starts_with(const char *s, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    return n >= k && memcmp(s, lit, k) == 0;
}

static bool is_indent(char c)
{
    return c == ' ' || c == '+' || c == '|' || c == ':' || c == '!';
}

static bool ends_with(const char *s, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    return n >= k && memcmp(s + n - k, lit, k) == 0;
}

static bool is_idle(const char *f, size_t n)
{
    for (size_t i = 0; i < sizeof(idle_functions) / sizeof(idle_functions[0]); i++)
        if (ends_with(f, n, idle_functions[i]))
            return true;
    return false;
}

/* The error for a graph line that does not fit. */
static int bad_line(struct sample_reader *r, uint64_t line, const char *what, const char *s,
                    size_t n)
{
    char q[200];
    ember_quote(q, sizeof(q), s, n, 120);
    return ember_diag_set(r->d, -EINVAL, r->file, line,
                          "%s (expected 4 spaces, two indentation characters a level, a sample "
                          "count and a function): \"%s\"",
                          what, q);
}

/* Adds the current stack, ended by its leaf line. */
static int add_leaf(struct sample_reader *r, uint64_t line)
{
    if (!r->leaf_pending || r->depth == 0)
        return 0;
    r->leaf_pending = false;
    if (r->idle[r->depth - 1])
        return 0;
    int err = ember_profile_add(r->p, r->path[r->depth - 1], 0, r->count);
    if (err == -ERANGE)
        return ember_diag_set(r->d, err, r->file, line, "sample counts overflow a 64-bit total");
    if (!err)
        r->st->samples++;
    return err;
}

/* The function of "NAME  (in MODULE) + 12  [0x...]": up to the module, cut
 * at its parameter list; Rust hashes and escapes undone. Writes it to
 * r->buf and returns its length. */
static size_t function_name(struct sample_reader *r, const char *s, size_t n)
{
    const char *in = NULL;
    for (const char *q = s; (q = memmem(q, n - (size_t)(q - s), "(in ", 4)); q++)
        in = q;
    const char *addr = memmem(s, n, "  [", 3);
    size_t len = in ? (size_t)(in - s) : addr ? (size_t)(addr - s) : n;
    memcpy(r->buf, s, len);
    len = ember_tidy_generic(r->buf, len);
    while (len > 0 && r->buf[len - 1] == ' ')
        len--;
    r->buf[len] = '\0';
    return ember_tidy_rust(r->buf, len);
}

/* "libfoo" of "(in libfoo.dylib)", or "" without "(in ...)". */
static size_t module_name(const char *s, size_t n, const char **mod)
{
    const char *in = NULL;
    for (const char *q = s; (q = memmem(q, n - (size_t)(q - s), "(in ", 4)); q++)
        in = q;
    *mod = "";
    if (!in)
        return 0;
    const char *m = in + 4, *close = memchr(m, ')', n - (size_t)(m - s));
    if (!close)
        return 0;
    size_t len = (size_t)(close - m);
    if (ends_with(m, len, ".dylib"))
        len -= 6;
    *mod = m;
    return len;
}

/* Pushes the frame of "NAME  (in MODULE) ...". */
static int push_frame(struct sample_reader *r, const char *s, size_t n)
{
    if (EMBER_VEC_RESERVE(r->buf, r->bcap, 2 * n + 2) < 0 ||
        EMBER_VEC_RESERVE(r->path, r->cap, r->depth + 1) < 0 ||
        EMBER_VEC_RESERVE(r->idle, r->icap, r->depth + 1) < 0)
        return -ENOMEM;
    size_t flen = function_name(r, s, n);
    bool idle = is_idle(r->buf, flen);
    const char *mod;
    size_t mlen = ember_read_opts_flag(r->o, "no-modules") ? 0 : module_name(s, n, &mod);
    if (mlen > 0) {
        /* "module`function": the function moves right to make room */
        memmove(r->buf + mlen + 1, r->buf, flen);
        memcpy(r->buf, mod, mlen);
        r->buf[mlen] = '`';
        flen += mlen + 1;
    }
    uint32_t frame, parent = r->depth ? r->path[r->depth - 1] : EMBER_ROOT;
    int err = ember_profile_intern(r->p, r->buf, flen, &frame);
    if (!err)
        err = ember_profile_child(r->p, parent, frame, &r->path[r->depth]);
    if (err)
        return err;
    r->idle[r->depth++] = idle;
    r->leaf_pending = true;
    return 0;
}

/* A sample count: digits only. */
static bool parse_count(const char *s, size_t n, int64_t *v)
{
    int64_t c = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || c > (INT64_MAX - 9) / 10)
            return false;
        c = c * 10 + (s[i] - '0');
    }
    *v = c;
    return true;
}

/* "COUNT FRAME" after the indentation. */
static int graph_entry(struct sample_reader *r, const char *s, size_t n, const char *all,
                       size_t alln, uint64_t line)
{
    const char *sp = memchr(s, ' ', n);
    int64_t count;
    if (!sp || sp + 1 == s + n)
        return bad_line(r, line, "a call graph line without a sample count and a function", all,
                        alln);
    if (!parse_count(s, (size_t)(sp - s), &count))
        return bad_line(r, line, "a call graph line whose sample count is not a number", all, alln);
    r->count = count;
    return push_frame(r, sp + 1, (size_t)(s + n - sp - 1));
}

static int graph_line(struct sample_reader *r, const char *s, size_t n, uint64_t line)
{
    if (!starts_with(s, n, "    "))
        return bad_line(r, line, "a call graph line that does not start with 4 spaces", s, n);
    size_t k = 4;
    while (k < n && is_indent(s[k]))
        k++;
    if (k == n)
        return bad_line(r, line, "a call graph line with only indentation characters", s, n);
    if ((k - 4) % 2)
        return bad_line(r, line, "a call graph line with an odd indentation", s, n);
    size_t depth = (k - 4) / 2 + 1;
    if (depth > r->depth + 1)
        return bad_line(r, line, "a call graph line indented more than one level deeper", s, n);
    if (depth <= r->depth) {
        int err = add_leaf(r, line);
        if (err)
            return err;
        r->depth = depth - 1;
    }
    return graph_entry(r, s + k, n - k, s, n, line);
}

/* The input ended inside the call graph: before its end line, or in a
 * line of it cut mid-way. */
static int graph_cut(struct sample_reader *r, uint64_t line)
{
    return ember_format_truncated(r->d, r->file, line, "the call graph",
                                  "the rest of the call graph, up to a line starting "
                                  "\"" END_LINE "\"");
}

static int on_line(void *ctx, const char *s, size_t n, uint64_t line)
{
    struct sample_reader *r = ctx;
    if (!r->in_graph) {
        if (line == 1 && starts_with(s, n, HEADER_LINE))
            r->seen_header = true;
        if (starts_with(s, n, START_LINE))
            r->in_graph = r->seen_graph = true;
        return 0;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0)
        return 0;
    if (starts_with(s, n, END_LINE)) {
        r->in_graph = false;
        int err = add_leaf(r, line);
        r->depth = 0;
        return err;
    }
    if (r->at->unterminated)
        return graph_cut(r, line);
    return graph_line(r, s, n, line);
}

static int sample_read(struct ember_profile *p, struct ember_input *in,
                       const struct ember_read_opts *o, struct ember_read_stats *st,
                       struct ember_diag *d)
{
    struct sample_reader r = {.p = p, .o = o, .st = st, .file = ember_input_name(in), .d = d};
    struct ember_lines_at at;
    r.at = &at;
    int err = ember_read_lines(in, o, d, on_line, &r, &at);
    if (!err && r.in_graph)
        err = graph_cut(&r, at.line);
    if (!err && !r.seen_graph && r.seen_header)
        err = ember_format_truncated(d, r.file, at.line, "the header of sample's output",
                                     "a line starting \"" START_LINE "\" and the call graph");
    else if (!err && !r.seen_graph)
        err = ember_diag_set(d, -EINVAL, r.file, at.line,
                             "no call graph: expected a line starting \"" START_LINE
                             "\" (the output of macOS sample)");
    free(r.path);
    free(r.idle);
    free(r.buf);
    return err;
}

/* sample's header, or a call graph with its first graph line. */
static enum ember_probe sample_probe(const char *data, size_t len)
{
    if (starts_with(data, len, HEADER_LINE))
        return EMBER_PROBE_YES;
    for (const char *s = data, *end = data + len; s < end;) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        if (!nl)
            break;
        if (starts_with(s, (size_t)(nl - s), START_LINE)) {
            const char *t = nl + 1;
            while (t < end && (*t == ' ' || *t == '+' || *t == '!' || *t == ':' || *t == '|'))
                t++;
            return t - nl - 1 >= 4 && t < end && *t >= '0' && *t <= '9' ? EMBER_PROBE_YES
                                                                        : EMBER_PROBE_NO;
        }
        s = nl + 1;
    }
    return EMBER_PROBE_NO;
}

static const struct ember_format_option sample_options[] = {
    {"no-modules", EMBER_OPTION_FLAG, NULL, NULL,
     "macOS sample: function names without their module"},
    {NULL, 0, NULL, NULL, NULL},
};

const struct ember_format ember_format_sample = {
    .name = "sample",
    .description = "macOS sample call graphs (inferno-collapse-sample's input)",
    .probe = sample_probe,
    .read = sample_read,
    .options = sample_options,
    .options_heading = "macOS sample options:",
};
