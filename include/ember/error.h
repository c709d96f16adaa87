/*
 * ember/error.h - how ember's library reports failure.
 *
 * One convention everywhere: a function that can fail returns 0 (or a
 * non-negative count) on success and a negative errno value on failure:
 *   -EINVAL  the input is not what the reader expected
 *   -ENOMEM  memory is exhausted
 *   -EIO     reading or writing failed (errno of the system call is in msg)
 *   -ERANGE  a count or size does not fit
 *   -ENODATA the input held nothing usable (no stacks)
 * Functions that read user data also fill a struct ember_diag saying what
 * failed and where, so that the caller can print "file:line: message".
 * The library never prints and never exits.
 */
#ifndef EMBER_ERROR_H
#define EMBER_ERROR_H

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

#endif
