/*
 * perf_script_ranges.c - one thread's share of a `perf script` text that
 * can be read at any place (a regular file or memory, not gzip): byte
 * ranges read by ember_input_pread, so that reading, finding where samples
 * start and counting lines happen on every thread, none of them under a
 * lock.
 *
 * A range [r, e) owns the samples that start in it: its text is
 * [start(r), start(e)), where start(x) is the first offset at or after x
 * that follows a blank line (ember_blank_line_end, the rule by which
 * EMBER_CUT_SAMPLE cuts a pipe's chunks) or begins an event line at
 * column 0 (ember_perf_starts_sample: samples without stacks have no blank
 * line between them), or the input's size if none does. start() looks at
 * the bytes alone, never at where it began looking, so neighbouring ranges
 * agree on it and their texts tile the input exactly; a range holding no
 * sample start has an empty text (the range before reads on through it),
 * and a sample longer than a range is read whole by the range where it
 * starts. There a parser is where a fresh one is (after a blank line the
 * sample ended; an event line ends it as it starts another, and the range
 * before ends it at its end), so each range's samples are those that one
 * thread reading it all would add.
 *
 * Invariants: lines are counted from the range's text's start (its first
 * line is 1); the lines before it are counted only when a message needs
 * its line number (ember_perf_line), from the last place this thread
 * counted to (its ranges come in increasing order) or from the start.
 */
#include "read/perf/perf_script_impl.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum {
    BLOCK = 1 << 20,  /* text read and parsed at a time */
    WINDOW = 4 << 10, /* looked at to find a range's first sample, at first */
};

void ember_perf_ranges_init(struct perf_ranges *rr, struct ember_input *in)
{
    memset(rr, 0, sizeof(*rr));
    rr->in = in;
    rr->size = (uint64_t)ember_input_size(in);
}

void ember_perf_ranges_release(struct perf_ranges *rr)
{
    ember_chunk_release(&rr->c);
    free(rr->win);
}

/* Reads [at, at + n) into rr->win; *got < n only at the input's end. */
static int read_window(struct perf_ranges *rr, uint64_t at, size_t n, size_t *got,
                       struct ember_diag *d)
{
    if (EMBER_VEC_RESERVE(rr->win, rr->wcap, n) < 0)
        return -ENOMEM;
    return ember_input_pread(rr->in, rr->win, n, at, got, d);
}

/* Looks through the window win[0, got) for a sample start after the '\n'
 * at *q or after: true with *q that start. Else *q is where to go on from:
 * the window's end, or a '\n' whose next line is not whole in the window
 * (*cut: more of it is needed), a line of EMBER_MAX_LINE or more (*skip
 * set: it starts nothing; reading it all stops there with an error). The
 * window's bytes before the first '\n' looked at are the two before it. */
static bool scan_window(const char *win, size_t got, size_t *q, bool *cut, bool *skip)
{
    const char *p;
    *cut = false;
    while (*q < got && (p = memchr(win + *q, '\n', got - *q))) {
        *q = (size_t)(p - win);
        if (ember_blank_line_end(win, *q))
            return ++*q, true;
        const char *e = *skip ? NULL : memchr(p + 1, '\n', got - *q - 1);
        if (!e && !*skip) {
            *skip = got - *q - 1 >= EMBER_MAX_LINE;
            *cut = !*skip;
            return false;
        }
        if (e && (size_t)(e - p - 1) < EMBER_MAX_LINE &&
            ember_perf_starts_sample(p + 1, (size_t)(e - p - 1)))
            return ++*q, true;
        *skip = false;
        ++*q;
    }
    *q = got;
    return false;
}

/* start(x): the first offset at or after x where a sample starts whatever
 * came before: just after a blank line, or at an event line at column 0
 * (ember_perf_starts_sample; a `perf script` of samples without stacks
 * has no blank lines); 0 for 0, the input's size if there is none (a last
 * line without its '\n' starts none: its message tells what it cut). A
 * window begins 2 bytes before the '\n' that may end the line before a
 * start, so that ember_blank_line_end sees that line; it grows to hold a
 * line whole, up to EMBER_MAX_LINE. */
static int sample_start(struct perf_ranges *rr, uint64_t x, uint64_t *out, struct ember_diag *d)
{
    *out = x == 0 ? 0 : rr->size;
    if (x == 0 || x >= rr->size)
        return 0;
    uint64_t nl = x - 1; /* the '\n' before a start is here or after */
    size_t want = WINDOW;
    bool skip = false, cut;
    for (;;) {
        uint64_t ws = nl >= 2 ? nl - 2 : 0;
        size_t got, q = (size_t)(nl - ws);
        int err = read_window(rr, ws, want, &got, d);
        if (err)
            return err;
        if (scan_window(rr->win, got, &q, &cut, &skip)) {
            *out = ws + q;
            return 0;
        }
        if (got < want)
            return 0; /* the input's end */
        nl = ws + q;
        if (cut && want < EMBER_MAX_LINE + 4)
            want = want * 2 < EMBER_MAX_LINE + 4 ? want * 2 : EMBER_MAX_LINE + 4;
    }
}

/* The number of '\n' before the content's offset `origin`: a message's
 * line number is that plus the line's number in its range. */
static uint64_t lines_before(void *ctx, uint64_t origin)
{
    struct perf_ranges *rr = ctx;
    if (origin < rr->known_off)
        rr->known_off = rr->known_lines = 0;
    while (rr->known_off < origin) {
        uint64_t left = origin - rr->known_off;
        size_t n = left < BLOCK ? (size_t)left : BLOCK, got;
        struct ember_diag d; /* not the reader's: a message is being made in it */
        if (read_window(rr, rr->known_off, n, &got, &d) < 0 || got == 0)
            break; /* the line number is then short: better than none */
        rr->known_lines += ember_count_lines(rr->win, got);
        rr->known_off += got;
    }
    return rr->known_lines;
}

/* Parses [rr->c's lines, up to the last whole one unless `last`); keeps the
 * rest (a line's beginning) at the front of the chunk. */
static int parse_lines(struct perf_ranges *rr, struct perf_parser *ps, size_t fresh, bool last)
{
    struct ember_chunk *c = &rr->c;
    size_t full = c->len, cut = full;
    if (!last) {
        const char *nl = memrchr(c->data + fresh, '\n', full - fresh);
        if (!nl) /* the line is longer than what was read: read more */
            return full >= EMBER_MAX_LINE
                       ? ember_diag_set(ps->d, -ERANGE, ps->file, ember_perf_line(ps),
                                        "line longer than %zu MiB", EMBER_MAX_LINE >> 20)
                       : 0;
        cut = (size_t)(nl - c->data) + 1;
    }
    c->len = cut;
    c->first_line = ps->line;
    int err = ember_perf_parse_chunk(ps, c);
    memmove(c->data, c->data + cut, full - cut);
    c->len = full - cut;
    return err;
}

int ember_perf_parse_range(struct perf_ranges *rr, struct perf_parser *ps, uint64_t r, uint64_t e,
                           uint64_t *read)
{
    uint64_t pos, stop;
    *read = 0;
    int err = sample_start(rr, r, &pos, ps->d);
    if (!err)
        err = sample_start(rr, e, &stop, ps->d);
    if (err || pos >= stop)
        return err;
    *read = stop - pos;
    ps->origin = pos;
    ps->line = 1;
    ps->lines_before = lines_before;
    ps->lines_ctx = rr;
    rr->c.len = 0;
    while (pos < stop && !err) {
        size_t want = stop - pos < BLOCK ? (size_t)(stop - pos) : BLOCK, got;
        if (ember_chunk_reserve(&rr->c, rr->c.len + want) < 0)
            return -ENOMEM;
        err = ember_input_pread(rr->in, rr->c.data + rr->c.len, want, pos, &got, ps->d);
        if (err)
            break;
        if (got < want) /* the file was cut while read: its end is here */
            stop = pos + got;
        pos += got;
        rr->c.len += got;
        err = parse_lines(rr, ps, rr->c.len - got, pos >= stop);
    }
    return err ? err : ember_perf_parser_finish(ps);
}
