/*
 * read_impl.h - the formats' table entries, and helpers they share
 * (library-internal).
 */
#ifndef EMBER_READ_READ_IMPL_H
#define EMBER_READ_READ_IMPL_H

#include "ember/read.h"
#include "model/folded_line.h"

/* Parses "12", "2.5" or "3." (FlameGraph's \d+(?:\.\d*)?) exactly spanning
 * [s, s + n). */
bool ember_parse_decimal(const char *s, size_t n, struct ember_decimal *v);

/* Splits "STACK<ws>COUNT" (the count is the whole last word): 1, 0 if the
 * line does not end in a count, -ERANGE if its count does not fit 63 bits
 * (*stack_len is set, *v is not). */
int ember_folded_split_count(const char *s, size_t n, size_t *stack_len, struct ember_decimal *v);

/* hint sees each line one line before line does (NULL: no hint), to start
 * fetching what line will need. Both run on the caller's thread. */
struct ember_folded_calls {
    void (*hint)(void *ctx, const struct ember_folded_line *l);
    int (*line)(void *ctx, const struct ember_folded_line *l);
    /* after an input's last line (NULL: nothing): an error stops the scan */
    int (*end)(void *ctx, struct ember_input *in, const struct ember_read_stats *st,
               struct ember_diag *d);
    /* On the reading thread, for lines it reads while the caller's thread
     * is behind (NULL: never): where the stack's names end and their
     * hashes, into ends and hashes, which have room for
     * EMBER_FOLDED_SPLIT_ROOM(l->len); their number (0: not done). It may
     * read ctx's settings, nothing that changes. */
    size_t (*split)(const void *ctx, const struct ember_folded_line *l, size_t *ends,
                    uint64_t *hashes);
};
#define EMBER_FOLDED_SPLIT_ROOM(len) ((len) + 8)

/* Reads folded input line by line, as the folded reader does (lines
 * without a count warned about and skipped, a cut last line an error),
 * calling fn->line for each line with a count; fn's -ERANGE becomes "counts
 * overflow a 64-bit total" at the line. st->samples counts the lines. It
 * reads as ember_folded_scan_all does. */
int ember_folded_scan(struct ember_input *in, const struct ember_read_opts *o,
                      struct ember_read_stats *st, struct ember_diag *d,
                      const struct ember_folded_calls *fn, void *ctx);

/* Several inputs one after the other, each with its own stats and ctx for
 * fn. With o->threads > 1 they are read and parsed on a thread of their
 * own (which alone calls o->progress and fn->split) while the caller's
 * thread delivers the lines (folded_scan.c). An error stops the scan, in
 * d (naming its input). */
struct ember_folded_source {
    struct ember_input *in;
    struct ember_read_stats *st;
    void *ctx;
};
int ember_folded_scan_all(const struct ember_folded_source *src, size_t n,
                          const struct ember_read_opts *o, const struct ember_folded_calls *fn,
                          struct ember_diag *d);

extern const struct ember_format ember_format_folded;

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

/* ember_format_read's rule once fmt has read file: no sample, or samples
 * that all weigh nothing (weightless), is an error (-ENODATA). */
int ember_format_check_samples(const struct ember_format *fmt, const char *file,
                               const struct ember_read_stats *st, bool weightless,
                               struct ember_diag *d);

/* The error of an input cut short, in one wording for every reader:
 * "truncated input: expected EXPECTED (the input ends inside INSIDE)",
 * at file:line (line 0: none). Returns -EINVAL. */
int ember_format_truncated(struct ember_diag *d, const char *file, uint64_t line,
                           const char *inside, const char *expected, ...)
    __attribute__((format(printf, 5, 6)));

#endif
