/*
 * hash_long.c - the 128-bit hash of a long text (a whole stack's line), by
 * libxxhash's dispatching XXH3 where the library has it: it picks AVX2 or
 * AVX-512 at run time, where the XXH3 that hash.h inlines is built for the
 * baseline CPU (SSE2) and hashes a long text at about half the speed. The
 * hash is the same either way: XXH3 does not depend on the vector width
 * (unit/test_hash checks it against the inlined one).
 *
 * This file does not include hash.h: the dispatch header declares the
 * library's functions, which hash.h's XXH_INLINE_ALL would make static.
 */
#include <stddef.h>
#include <stdint.h>

#ifdef EMBER_XXH_DISPATCH
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h>
#define HASH128 XXH3_128bits_dispatch
#else
#include <xxhash.h>
#define HASH128 XXH3_128bits
#endif

void ember_hash_long128(const void *p, size_t n, uint64_t out[2]); /* in hash.h */

void ember_hash_long128(const void *p, size_t n, uint64_t out[2])
{
    XXH128_hash_t h = HASH128(p, n);
    out[0] = h.low64;
    out[1] = h.high64;
}
