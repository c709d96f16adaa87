/*
 * read_impl.h - the formats' table entries, and helpers they share
 * (library-internal).
 */
#ifndef EMBER_READ_READ_IMPL_H
#define EMBER_READ_READ_IMPL_H

#include "ember/read.h"
#include "model/folded_line.h"
#include "read/folded_scan.h"

/* Parses "12", "2.5" or "3." (FlameGraph's \d+(?:\.\d*)?) exactly spanning
 * [s, s + n). */
bool ember_parse_decimal(const char *s, size_t n, struct ember_decimal *v);

/* Splits "STACK<ws>COUNT" (the count is the whole last word): 1, 0 if the
 * line does not end in a count, -ERANGE if its count does not fit 63 bits
 * (*stack_len is set, *v is not). */
int ember_folded_split_count(const char *s, size_t n, size_t *stack_len, struct ember_decimal *v);

/* Folded input on o->threads threads in byte ranges of `range` bytes
 * (FOLDED_RANGE, less in tests), when it is a file (or memory) and p is as
 * ember_profile_new made it (folded_threads.c): 1 where one thread must
 * read it instead (p then untouched). */
int ember_folded_read_ranges(struct ember_profile *p, struct ember_input *in,
                             const struct ember_read_opts *o, struct ember_read_stats *st,
                             struct ember_diag *d, uint64_t range);
#define FOLDED_RANGE ((uint64_t)1 << 20)

/* What the folded probe counts in the first bytes of an input: whole
 * lines (not blank nor '#' comments) that are "stack COUNT" and those
 * that are not, the
 * first of these (its number and text), and what follows the last
 * newline. The probe takes the input for folded stacks when good > 0 and
 * good >= bad; the detection's error says why when it does not. */
struct ember_folded_census {
    uint64_t good, bad;
    uint64_t first_bad; /* 1-based; 0: none */
    const char *bad_text, *rest;
    size_t bad_len, rest_len;
};
void ember_folded_census(const char *data, size_t len, struct ember_folded_census *c);

/* The error of an input cut short, in one wording for every reader:
 * "truncated input: expected EXPECTED (the input ends inside INSIDE)",
 * at file:line (line 0: none). Returns -EINVAL. */
int ember_format_truncated(struct ember_diag *d, const char *file, uint64_t line,
                           const char *inside, const char *expected, ...)
    __attribute__((format(printf, 5, 6)));

/* Tells o's warn callback (when there is one) what fmt says, of file: the
 * one way readers warn. */
void ember_read_warn(const struct ember_read_opts *o, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
