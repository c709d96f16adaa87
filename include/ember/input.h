/*
 * ember/input.h - where profiles come from: a file, standard input, either
 * possibly gzip-compressed (detected by its magic bytes, not its name).
 *
 * Inputs are read as a stream in chunks that end on line boundaries; the
 * whole input is never held in memory.
 */
#ifndef EMBER_INPUT_H
#define EMBER_INPUT_H

#include "ember/error.h"

#include <stddef.h>
#include <stdint.h>

struct ember_input;

/* path NULL or "-" reads standard input. */
EMBER_API int ember_input_open(struct ember_input **in, const char *path, struct ember_diag *d);
/* Reads fd from where it is (fd stays open: the caller's), named name in
 * messages: a file that has no name of its own to give, such as an
 * unnamed (O_TMPFILE) one. */
EMBER_API int ember_input_open_fd(struct ember_input **in, int fd, const char *name,
                                  struct ember_diag *d);
/* Reads len bytes at data (which must outlive the input), named name. */
EMBER_API int ember_input_open_memory(struct ember_input **in, const void *data, size_t len,
                                      const char *name, struct ember_diag *d);
EMBER_API void ember_input_close(struct ember_input *in);
/* The name used in messages: the path, or "<stdin>". */
EMBER_API const char *ember_input_name(const struct ember_input *in);
/* The first bytes of the (decompressed) content, without consuming them:
 * at least what a format probe needs, unless the input is shorter. */
EMBER_API int ember_input_peek(struct ember_input *in, const char **data, size_t *len,
                               struct ember_diag *d);
/* Bytes consumed from the underlying file so far, and its size (-1 when
 * unknown, as for a pipe): for progress reports. */
EMBER_API uint64_t ember_input_consumed(const struct ember_input *in);
EMBER_API int64_t ember_input_size(const struct ember_input *in);

#endif
