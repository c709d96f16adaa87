/*
 * fuzz_common.h - the callbacks every fuzz target needs that throw their
 * argument away: output written to nowhere, warnings ignored.
 */
#ifndef EMBER_FUZZ_COMMON_H
#define EMBER_FUZZ_COMMON_H

#include "ember/base.h"

#include <stddef.h>

static inline int fuzz_discard(void *ctx, const char *buf, size_t len)
{
    (void)ctx;
    (void)buf;
    (void)len;
    return 0;
}

static inline void fuzz_ignore_warning(void *ctx, const struct ember_diag *d)
{
    (void)ctx;
    (void)d;
}

#endif
