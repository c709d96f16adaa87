/*
 * split.h - where the names of a stack's text end (library-internal).
 *
 * A folded stack is names joined by a separator. Finding each with memchr
 * cost a call and, on names of varying lengths, about one mispredicted
 * branch per name: a quarter of all mispredictions of `diff --folded`. This
 * finds every separator of 64 bytes at once (a bit mask from four SSE2
 * compares) and writes their offsets eight at a time whatever their count,
 * so that a block costs no branch that depends on the text but the rare
 * one for more than eight names in 64 bytes.
 *
 * Invariant: ends has room for n - from + EMBER_SPLIT_SLACK offsets (each
 * byte could be a separator, and a block writes up to seven past its last).
 */
#ifndef EMBER_MODEL_SPLIT_H
#define EMBER_MODEL_SPLIT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { EMBER_SPLIT_SLACK = 8 };

/* Which of the 64 bytes at p (n of them there, n <= 64) are sep: bit i
 * for byte i. */
static inline uint64_t ember_split_mask(const char *p, size_t n, char sep)
{
    char tail[64];
    if (n < 64) { /* the end of the text: no reading past it */
        memset(tail, sep ^ 1, sizeof(tail));
        memcpy(tail, p, n);
        p = tail;
    }
#ifdef __SSE2__
    const __m128i c = _mm_set1_epi8(sep);
    uint64_t m = 0;
    for (unsigned k = 0; k < 4; k++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + 16 * k));
        m |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, c)) << 16 * k;
    }
    return m;
#else
    uint64_t m = 0;
    for (unsigned i = 0; i < 64; i++)
        m |= (uint64_t)(p[i] == sep) << i;
    return m;
#endif
}

static inline unsigned ember_split_count(uint64_t m)
{
    m = m - (m >> 1 & 0x5555555555555555ULL);
    m = (m & 0x3333333333333333ULL) + (m >> 2 & 0x3333333333333333ULL);
    m = (m + (m >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return (unsigned)((m * 0x0101010101010101ULL) >> 56);
}

/* The offsets of the separators of s[from, n), then n, into ends; their
 * number. */
static inline size_t ember_split(const char *s, size_t from, size_t n, char sep, size_t *ends)
{
    size_t k = 0;
    for (size_t at = from; at < n; at += 64) {
        uint64_t m = ember_split_mask(s + at, n - at < 64 ? n - at : 64, sep);
        size_t got = ember_split_count(m);
        for (size_t w = 0;; w += 8) {
            for (unsigned i = 0; i < 8; i++) { /* ctz of 0 is undefined: bit 63 stands in */
                ends[k + w + i] = at + (size_t)__builtin_ctzll(m | 1ULL << 63);
                m &= m - 1;
            }
            if (w + 8 >= got)
                break;
        }
        k += got;
    }
    ends[k++] = n;
    return k;
}

#endif
