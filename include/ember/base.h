/*
 * ember/base.h - what every part of ember's library stands on: how it
 * reports failure, where profiles come from (struct ember_input) and where
 * writers put their bytes (struct ember_sink).
 *
 * Errors: one convention everywhere: a function that can fail returns 0 (or
 * a non-negative count) on success and a negative errno value on failure:
 *   -EINVAL  the input is not what the reader expected
 *   -ENOMEM  memory is exhausted
 *   -EIO     reading or writing failed (errno of the system call is in msg)
 *   -ERANGE  a count or size does not fit
 *   -ENODATA the input held nothing usable (no stacks)
 * Functions that read user data also fill a struct ember_diag saying what
 * failed and where, so that the caller can print "file:line: message".
 * The library never prints and never exits.
 *
 * Inputs: a file, standard input, either possibly gzip-compressed (detected
 * by its magic bytes, not its name), read as a stream in chunks that end on
 * line boundaries; the whole input is never held in memory.
 */
#ifndef EMBER_BASE_H
#define EMBER_BASE_H

#include <stddef.h>
#include <stdint.h>

#define EMBER_API __attribute__((visibility("default")))

struct ember_diag {
    char file[256]; /* input name, "" when not about a file; "-" is stdin */
    uint64_t line;  /* 1-based line, 0 when not about a line */
    char msg[512];  /* what was wrong and what was expected */
};

/* A callback for problems that do not stop the work (skipped lines...). */
typedef void (*ember_warn_fn)(void *ctx, const struct ember_diag *d);

EMBER_API void ember_diag_clear(struct ember_diag *d);

/* [s, s + n) fit to print on a terminal, one line: each byte of a control
 * character (bytes below 0x20, DEL, U+0080..U+009F) as "\xNN", the rest
 * kept. Writes whole escapes into buf, cut to cap with its NUL; returns
 * the length of the whole escaped text (as snprintf does). */
EMBER_API size_t ember_text_escape(const char *s, size_t n, char *buf, size_t cap);

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

/* Where writers put their bytes. write returns 0 or a negative error. */
struct ember_sink {
    int (*write)(void *ctx, const char *buf, size_t len);
    void *ctx;
};

#endif
