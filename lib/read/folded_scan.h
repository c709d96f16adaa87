/*
 * folded_scan.h - folded lines scanned, whatever is done with them
 * (library-internal, the part of the readers another floor may use): the
 * folded reader builds a profile with it (folded.c), the folded diff's
 * reading (transform/stack_diff_read.c) fills the model's table without
 * one. Each input ends with the rule every reader's does
 * (ember_format_check_samples), so both say the same of an empty input.
 */
#ifndef EMBER_READ_FOLDED_SCAN_H
#define EMBER_READ_FOLDED_SCAN_H

#include "ember/read.h"
#include "model/folded_line.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* A line parsed: COUNTED has a count, SKIPPED not, CUT is an input's last
 * line without a count or a line end, BLANK is empty, HUGE has a count
 * that does not fit (an error). */
enum ember_folded_kind {
    EMBER_LINE_BLANK,
    EMBER_LINE_COUNTED,
    EMBER_LINE_SKIPPED,
    EMBER_LINE_CUT,
    EMBER_LINE_HUGE
};

struct ember_folded_parsed {
    enum ember_folded_kind kind;
    uint64_t line;
    const char *s; /* the line, for messages */
    size_t n;
    struct ember_folded_line l;
    size_t split_at; /* where l's split results start in its batch's */
};

/* The line [s, s + n), without its '\n'; unterminated: it had none (the
 * input's last). Sets all but p->line and p->split_at (folded.c). */
void ember_folded_parse_line(const char *s, size_t n, bool unterminated,
                             struct ember_folded_parsed *p);

/* The one warning of an input's n lines without a count (none when n is
 * 0), at the first, line, whose quoted text is text: the scanner's and
 * the ranges' (folded_threads.c). */
void ember_folded_warn_skipped(const struct ember_read_opts *o, const struct ember_input *in,
                               uint64_t n, uint64_t line, const char *text);

extern const struct ember_format ember_format_folded;

/* ember_format_read's rule once fmt has read file: no sample, or samples
 * that all weigh nothing (weightless), is an error (-ENODATA). */
int ember_format_check_samples(const struct ember_format *fmt, const char *file,
                               const struct ember_read_stats *st, bool weightless,
                               struct ember_diag *d);

#endif
