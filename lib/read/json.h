/*
 * json.h - what the JSON readers (chrome.c, speedscope.c) share
 * (library-internal): yajl's callback parser fed an input chunk by chunk,
 * line numbers for messages, exact numbers. The profiles they build per
 * thread or per profile go into the result by ember_profile_merge_renamed.
 *
 * Invariants: the input is read in chunks cut anywhere (a minified file is
 * one line), so memory never depends on the input's length; a callback that
 * finds a problem calls ember_json_fail(), which fills the diagnostic with
 * the line of the token being parsed and makes the callback return 0 (yajl
 * then stops); numbers are kept exactly as fixed-point 128-bit integers.
 *
 * Truncation: a JSON document ends by closing its outermost value, so an
 * input cut anywhere before that is told (truncated is set, with depth and
 * the kinds of the open containers as they were). Each reader decides what
 * a cut means for its format, and says so with ember_json_truncated.
 */
#ifndef EMBER_READ_JSON_H
#define EMBER_READ_JSON_H

#include "ember/read.h"
#include "base/chunk.h"

#include <stdbool.h>
#include <yajl/yajl_parse.h>

/* A JSON number scaled by 10^EMBER_JSON_DIGITS (so 1.5 is 1500000000). */
#define EMBER_JSON_DIGITS 9
typedef __int128 ember_fixed;

struct ember_json {
    yajl_handle h;
    struct ember_input *in;
    struct ember_chunk c;
    const char *file;
    struct ember_diag *d;
    const struct ember_read_opts *o;
    int err;            /* the error a callback reported (0: none) */
    bool truncated;     /* the input ended inside a value */
    unsigned depth;     /* of arrays and objects, kept by the reader's callbacks */
    uint64_t maps;      /* bit i: the container at depth i is an object (i < 64) */
    uint64_t last_line; /* the input's last line, once it has been read */
};

/* Parses the whole input with the callbacks (whose context is ctx); returns
 * 0 or the first error (with j->d filled). The callbacks must keep j->depth:
 * ember_json_begin/ember_json_end from their start/end callbacks. An input
 * cut short is not an error here: j->truncated says it was. */
int ember_json_parse(struct ember_json *j, const yajl_callbacks *cb, void *ctx);
static inline void ember_json_begin(struct ember_json *j, bool map)
{
    if (j->depth < 64)
        j->maps = map ? j->maps | 1ull << j->depth : j->maps & ~(1ull << j->depth);
    j->depth++;
}
static inline void ember_json_end(struct ember_json *j)
{
    j->depth--;
}

/* The error of an input cut short (after ember_json_parse set truncated):
 * "truncated input: expected the rest of the JSON, closed by \"]}\" (the
 * input ends inside INSIDE)", at the input's last line. Returns -EINVAL. */
int ember_json_truncated(struct ember_json *j, const char *inside);

/* The line of the token being parsed (1-based). */
uint64_t ember_json_line(const struct ember_json *j);
/* Fills the diagnostic (-EINVAL, at the current line) and returns 0, the
 * value a yajl callback returns to stop the parse. */
int ember_json_fail(struct ember_json *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same for an error code from elsewhere (-ENOMEM, -ERANGE...). */
int ember_json_error(struct ember_json *j, int err);
/* A non-fatal problem, at the current line: counted and passed to o->warn. */
void ember_json_warn(struct ember_json *j, struct ember_read_stats *st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A JSON number ("-12.5e3") as a fixed-point value; false if it is out of
 * range (beyond 10^20) or not a number. Digits past the ninth decimal are
 * rounded. */
bool ember_json_fixed(const char *s, size_t n, ember_fixed *v);
/* v as an exact decimal with as few digits as it needs (at most the ones
 * that fit an int64); -ERANGE if even its integer part does not fit. */
int ember_json_decimal(ember_fixed v, struct ember_decimal *out);

/* Makes a name read from JSON a frame name, in place: line ends, NUL and
 * EMBER_JSON_PLACEHOLDER become spaces (other bytes stay; a ';' is kept,
 * and folded views spell it ':'). */
void ember_json_frame_name(char *s, size_t n);

/* The readers build their stacks in one scratch profile, each thread or
 * profile under a placeholder frame: this byte, then its number. No frame
 * name read from the input starts with it (see ember_json_frame_name). */
#define EMBER_JSON_PLACEHOLDER '\x1f'

#endif
