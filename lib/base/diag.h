/*
 * diag.h - filling struct ember_diag (see include/ember/base.h).
 */
#ifndef EMBER_BASE_DIAG_H
#define EMBER_BASE_DIAG_H

#include "ember/base.h"

#include <stdarg.h>
#include <stddef.h>

/* Fills d (when not NULL) and returns err, so that callers can write
 * "return ember_diag_set(d, -EINVAL, file, line, "...", ...);". */
int ember_diag_set(struct ember_diag *d, int err, const char *file, uint64_t line, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));
/* The same, for callers that take a format of their own. */
int ember_diag_vset(struct ember_diag *d, int err, const char *file, uint64_t line, const char *fmt,
                    va_list ap) __attribute__((format(printf, 5, 0)));

/* Writes at most max bytes of s into out (size outsz) so that a line of
 * garbage can be quoted in a message: control bytes and invalid UTF-8 become
 * \xNN, and a cut is marked with "...". */
void ember_quote(char *out, size_t outsz, const char *s, size_t n, size_t max);

#endif
