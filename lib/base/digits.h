/*
 * digits.h - decimal numbers written without printf, for the trace views
 * that write tens of millions of lines (dump, dump --format ocaml): each
 * function writes at p and returns the end (put_4, put_8: exactly 4 or 8
 * digits, zero-padded; put_9: exactly 9). The caller has the room.
 */
#ifndef EMBER_BASE_DIGITS_H
#define EMBER_BASE_DIGITS_H

#include <stdint.h>
#include <string.h>

static const char ember_digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

/* x < 10^4 in exactly 4 digits: f holds x / 100 with 32 fraction bits;
 * its integer part is two digits, its fraction times 100 two more. */
static inline void put_4(char *p, uint32_t x)
{
    uint64_t f = (uint64_t)x * ((((uint64_t)1 << 32) / 100) + 1);
    memcpy(p, ember_digit_pairs + 2 * (f >> 32), 2);
    f = (uint64_t)(uint32_t)f * 100;
    memcpy(p + 2, ember_digit_pairs + 2 * (f >> 32), 2);
}

/* v < 10^8 in exactly 8 digits: two halves that do not wait on each other,
 * and no division (v / 10^4 is a multiply and a shift). Both steps are
 * exact for every v < 10^8: checked for all of them. */
static inline void put_8(char *p, uint32_t v)
{
    uint32_t hi = (uint32_t)(((uint64_t)v * 109951163) >> 40);
    put_4(p, hi);
    put_4(p + 4, v - hi * 10000);
}

/* The number of decimal digits of v: log10 from its bit length
 * (x 1233 / 4096 ~ log10(2)), one too few below the next power of 10. */
static inline unsigned digits_u32(uint32_t v)
{
    static const uint32_t pow10[] = {1,      10,      100,      1000,      10000,
                                     100000, 1000000, 10000000, 100000000, 1000000000};
    unsigned n = (unsigned)(32 - __builtin_clz(v | 1)) * 1233 >> 12;
    return n + ((v | 1) >= pow10[n]);
}

/* Written from its end, two digits at a time: no buffer to copy after. */
static inline char *put_u32(char *p, uint32_t v)
{
    char *end = p + digits_u32(v), *q = end;
    while (v >= 100) {
        uint32_t r = v % 100;
        v /= 100;
        q -= 2;
        memcpy(q, ember_digit_pairs + 2 * r, 2);
    }
    if (v >= 10)
        memcpy(q - 2, ember_digit_pairs + 2 * v, 2);
    else
        q[-1] = (char)('0' + v);
    return end;
}

/* 64-bit numbers in chunks of 8 digits: few 64-bit divisions. */
static inline char *put_u64(char *p, uint64_t v)
{
    if (v <= UINT32_MAX)
        return put_u32(p, (uint32_t)v);
    uint64_t hi = v / 100000000;
    uint32_t lo = (uint32_t)(v % 100000000);
    if (hi <= UINT32_MAX) {
        p = put_u32(p, (uint32_t)hi);
    } else {
        p = put_u32(p, (uint32_t)(hi / 100000000));
        put_8(p, (uint32_t)(hi % 100000000));
        p += 8;
    }
    put_8(p, lo);
    return p + 8;
}

static inline char *put_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return put_u64(p, -(uint64_t)v);
    }
    return put_u64(p, (uint64_t)v);
}

/* Exactly nine digits (the nanoseconds of a time). */
static inline char *put_9(char *p, uint32_t v)
{
    p[0] = (char)('0' + v / 100000000);
    put_8(p + 1, v % 100000000);
    return p + 9;
}

#endif
