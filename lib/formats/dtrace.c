/*
 * dtrace.c - DTrace stack aggregations (`dtrace -n '... { @[stack()] =
 * count(); }'` or ustack()), by the rules of FlameGraph's stackcollapse.pl.
 *
 * After a 3-line header (column titles, the probe, a blank line), each
 * stack is frame lines, leaf first, then a line holding only its count.
 * A frame loses its "+0x..." offset (from the last '+'), C++ arguments and
 * trailing template arguments after a "::", and splits Java inline chains
 * "a->b" into a;b_[i]. One deliberate difference: the script drops a
 * leading 'L' from every frame (meant for Java's "Lpkg/Class;" names, but
 * it also turns "LZ4_compress" into "Z4_compress"); ember does it only for
 * names with a '/', as stackcollapse-perf does.
 */
#include "formats_impl.h"
#include "io/chunk.h"
#include "model/profile_impl.h"
#include "util/diag.h"
#include "util/vec.h"

#include <errno.h>
#include <stdlib.h>

enum { DTRACE_HEADER_LINES = 3 };

static bool is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

struct dtrace_reader {
    struct ember_profile *p;
    struct ember_read_stats *st;
    const char *file;
    struct ember_diag *d;
    uint32_t *frames; /* leaf first, each line's pieces reversed */
    size_t n, cap;
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

static int add_piece(struct dtrace_reader *r, const char *s, size_t n, bool inlined)
{
    if (EMBER_VEC_RESERVE(r->buf, r->bcap, n + 5) < 0)
        return -ENOMEM;
    char *b = r->buf;
    size_t len = 0;
    size_t i = n > 0 && s[0] == 'L' && memchr(s, '/', n) ? 1 : 0;
    for (; i < n; i++)
        b[len++] = s[i] == ';' ? ':' : s[i];
    if (inlined) {
        memcpy(b + len, "_[i]", 4);
        len += 4;
    }
    if (EMBER_VEC_RESERVE(r->frames, r->cap, r->n + 1) < 0)
        return -ENOMEM;
    return ember_frames_intern(&r->p->frames, b, len, &r->frames[r->n++]);
}

static int frame_line(struct dtrace_reader *r, const char *s, size_t n)
{
    while (n > 0 && is_space((unsigned char)*s))
        s++, n--;
    const char *plus = memrchr(s, '+', n);
    if (plus)
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
    uint32_t node = EMBER_ROOT;
    int err = 0;
    for (size_t i = r->n; i-- > 0 && !err;)
        err = ember_profile_child_fast(r->p, node, r->frames[i], &node);
    if (!err)
        err = ember_profile_add(r->p, node, 0, count);
    if (err == -ERANGE)
        return ember_diag_set(r->d, err, r->file, line, "counts overflow a 64-bit total");
    r->n = 0;
    r->st->samples++;
    return err;
}

static int dtrace_read(struct ember_profile *p, struct ember_input *in,
                       const struct ember_read_opts *o, struct ember_read_stats *st,
                       struct ember_diag *d)
{
    struct dtrace_reader r = {.p = p, .st = st, .file = ember_input_name(in), .d = d};
    struct ember_chunk c = {0};
    int err = 0;
    while (!err) {
        int got = ember_input_read_chunk(in, &c, EMBER_CUT_LINE, d);
        if (got <= 0) {
            err = got;
            break;
        }
        uint64_t line = c.first_line;
        for (const char *s = c.data, *end = c.data + c.len; s < end && !err; line++) {
            const char *nl = memchr(s, '\n', (size_t)(end - s));
            const char *next = nl ? nl + 1 : end;
            size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
            int64_t count;
            if (n > 0 && s[n - 1] == '\r')
                n--;
            if (line <= DTRACE_HEADER_LINES) {
                /* the header */
            } else if (count_line(s, n, &count)) {
                err = end_stack(&r, count, line);
            } else {
                size_t i = 0;
                while (i < n && is_space((unsigned char)s[i]))
                    i++;
                if (i < n)
                    err = frame_line(&r, s, n);
            }
            s = next;
        }
        if (!err && o->progress)
            o->progress(o->progress_ctx, in);
    }
    if (!err && r.n)
        st->skipped++; /* frames without a count: the script drops them too */
    ember_chunk_release(&c);
    free(r.frames);
    free(r.buf);
    return err;
}

/* After the header, indented frames and an indented count. */
static enum ember_probe dtrace_probe(const char *data, size_t len)
{
    const char *s = data, *end = data + len;
    unsigned line = 0, frames = 0;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        if (!nl)
            break;
        size_t n = (size_t)(nl - s);
        int64_t count;
        if (++line > DTRACE_HEADER_LINES && n > 0) {
            size_t i = 0;
            while (i < n && is_space((unsigned char)s[i]))
                i++;
            if (i == 0)
                return EMBER_PROBE_NO;
            if (count_line(s, n, &count))
                return frames ? EMBER_PROBE_YES : EMBER_PROBE_NO;
            if (i < n)
                frames++;
        }
        s = nl + 1;
    }
    return frames ? EMBER_PROBE_MAYBE : EMBER_PROBE_NO;
}

const struct ember_format ember_format_dtrace = {
    .name = "dtrace",
    .description = "DTrace stack()/ustack() aggregations (stackcollapse.pl's input)",
    .probe = dtrace_probe,
    .read = dtrace_read,
};
