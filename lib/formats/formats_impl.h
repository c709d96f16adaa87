/*
 * formats_impl.h - the formats' table entries, and helpers they share
 * (library-internal).
 */
#ifndef EMBER_FORMATS_IMPL_H
#define EMBER_FORMATS_IMPL_H

#include "ember/formats.h"

/* Parses "12", "2.5" or "3." (FlameGraph's \d+(?:\.\d*)?) exactly spanning
 * [s, s + n). */
bool ember_parse_decimal(const char *s, size_t n, struct ember_decimal *v);

/* The error of an input cut short, in one wording for every reader:
 * "truncated input: expected EXPECTED (the input ends inside INSIDE)",
 * at file:line (line 0: none). Returns -EINVAL. */
int ember_format_truncated(struct ember_diag *d, const char *file, uint64_t line,
                           const char *inside, const char *expected, ...)
    __attribute__((format(printf, 5, 6)));

#endif
