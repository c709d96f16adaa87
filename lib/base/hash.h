/*
 * hash.h - the hash functions of ember's tables.
 *
 * Strings hash with XXH3 (inlined: most keys are short names, where a call
 * costs as much as the hash), long texts with libxxhash's vectorized XXH3
 * (hash_long.c); integer keys with a multiplicative mix.
 */
#ifndef EMBER_BASE_HASH_H
#define EMBER_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static inline uint64_t ember_hash_bytes(const void *p, size_t n, uint64_t seed)
{
    return XXH3_64bits_withSeed(p, n, seed);
}

void ember_hash_long128(const void *p, size_t n, uint64_t out[2]);

/* XXH3's 128 bits of [p, p + n), as {low, high}. */
static inline void ember_hash_text128(const void *p, size_t n, uint64_t out[2])
{
    if (n > XXH3_MIDSIZE_MAX) { /* where XXH3 goes to its vector loop */
        ember_hash_long128(p, n, out);
        return;
    }
    XXH128_hash_t h = XXH3_128bits(p, n);
    out[0] = h.low64;
    out[1] = h.high64;
}

static inline uint64_t ember_hash_u64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

#endif
