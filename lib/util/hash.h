/*
 * hash.h - the hash functions of ember's tables.
 *
 * Strings hash with XXH3 (inlined: most keys are short names, where a call
 * costs as much as the hash); integer keys with a multiplicative mix.
 */
#ifndef EMBER_UTIL_HASH_H
#define EMBER_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static inline uint64_t ember_hash_bytes(const void *p, size_t n, uint64_t seed)
{
    return XXH3_64bits_withSeed(p, n, seed);
}

static inline uint64_t ember_hash_u64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

#endif
