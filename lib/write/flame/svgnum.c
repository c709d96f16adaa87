/*
 * svgnum.c - the numbers of a flame graph, as printf writes them, without
 * printf (see flame_internal.h).
 *
 * A graph writes about ten numbers per frame; printf's floating-point path
 * (arbitrary precision arithmetic, locale, format parsing) was the larger
 * part of drawing a graph of many frames. A double is m * 2^e exactly, so
 * v * 10^prec rounded to an integer, halves to even as printf rounds, is
 * exact integer arithmetic; for |v| < 10^13 at up to two decimals that
 * integer also stays below 2^53, so dividing it back by 10^prec gives what
 * strtod reads. Anything else goes to printf.
 */
#include "write/flame/flame_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAST_LIMIT 1e13

static const uint64_t pow10u[] = {1, 10, 100};

/* Writes u's decimal digits at buf; returns how many. */
static size_t put_digits(char *buf, uint64_t u)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    return n;
}

/* |v| * 10^prec rounded to an integer, halves to even: exact. */
static uint64_t scaled_round(double v, unsigned prec)
{
    int e;
    double fr = frexp(fabs(v), &e); /* |v| = fr * 2^e, 0.5 <= fr < 1 */
    uint64_t m = (uint64_t)ldexp(fr, 53);
    e -= 53; /* |v| = m * 2^e exactly */
    unsigned __int128 x = (unsigned __int128)m * pow10u[prec];
    if (e >= 0)
        return (uint64_t)(x << e);
    unsigned s = (unsigned)-e;
    if (s >= 127)
        return 0; /* below a half: |v| * 100 < 2^60, 2^-s * 2^60 tiny */
    unsigned __int128 q = x >> s, r = x - (q << s), half = (unsigned __int128)1 << (s - 1);
    if (r > half || (r == half && (q & 1)))
        q++;
    return (uint64_t)q;
}

size_t ember_svg_fixed(char *buf, double v, unsigned prec, double *printed)
{
    if (!(fabs(v) < FAST_LIMIT) || prec > 2) {
        /* cut at 64 bytes, as the buffers it replaces cut it */
        int n = snprintf(buf, 64, "%.*f", (int)prec, v);
        if (printed)
            *printed = strtod(buf, NULL);
        return n < 0 ? 0 : n > 63 ? 63 : (size_t)n;
    }
    uint64_t q = scaled_round(v, prec);
    size_t o = 0;
    if (signbit(v))
        buf[o++] = '-';
    o += put_digits(buf + o, q / pow10u[prec]);
    if (prec) {
        uint64_t f = q % pow10u[prec];
        buf[o++] = '.';
        for (unsigned d = prec; d-- > 0;) {
            buf[o + d] = (char)('0' + f % 10);
            f /= 10;
        }
        o += prec;
    }
    buf[o] = '\0';
    if (printed) /* q / 10^prec correctly rounded: what strtod reads back */
        *printed = (signbit(v) ? -1.0 : 1.0) * ((double)q / (double)pow10u[prec]);
    return o;
}

size_t ember_svg_g15(char *buf, double v)
{
    /* integers and halves below 10^13 have at most 15 significant digits:
     * %.15g writes them as %.1f does, without a trailing ".0" */
    double twice = v * 2;
    if (fabs(v) < FAST_LIMIT && twice == floor(twice) && v != 0) {
        size_t n = ember_svg_fixed(buf, v, 1, NULL);
        if (buf[n - 1] == '0')
            buf[n -= 2] = '\0';
        return n;
    }
    int n = snprintf(buf, 64, "%.15g", v);
    return n < 0 ? 0 : n > 63 ? 63 : (size_t)n;
}
