/*
 * lines.h - feeding a line-oriented reader one line at a time
 * (library-internal).
 *
 * The input is read in chunks of whole lines (base/chunk.h); each line is
 * handed over without its '\n' and without a trailing '\r', with its
 * 1-based number. Progress is reported after each chunk. Memory is one
 * chunk, whatever the input's size.
 */
#ifndef EMBER_READ_LINES_H
#define EMBER_READ_LINES_H

#include "ember/read.h"

#include <stdbool.h>
#include <stdint.h>

/* Returns 0 to go on, or a negative error that stops the reading. */
typedef int (*ember_line_fn)(void *ctx, const char *s, size_t n, uint64_t line);

/* Where the reading is: the number of the line being handed over (after
 * the reading: of the last line), and whether that line has no '\n', which
 * only the input's last line can lack: readers of formats whose producer
 * ends every line take it for an input cut inside a line. Set before each
 * call of fn, so that fn may look. */
struct ember_lines_at {
    uint64_t line;
    bool unterminated;
};

/* Calls fn for every line of in; returns 0, fn's error, or a read error
 * (with d filled). */
int ember_read_lines(struct ember_input *in, const struct ember_read_opts *o, struct ember_diag *d,
                     ember_line_fn fn, void *ctx, struct ember_lines_at *at);

#endif
