/*
 * utf8.c - the UTF-8 decoder (see utf8.h).
 *
 * A lead byte says how many continuation bytes (0x80-0xbf) follow. Strict
 * decoding narrows the range of the first continuation byte after 0xe0,
 * 0xed, 0xf0 and 0xf4, which is what rules out overlong forms, surrogates
 * and code points above U+10FFFF, and allows no lead 0xc0, 0xc1 or above
 * 0xf4: then a sequence is valid exactly when each byte is in range.
 */
#include "base/utf8.h"

/* How many continuation bytes follow lead byte c (0: not a lead byte). */
static unsigned continuations(unsigned c, bool lax)
{
    if (c >= (lax ? 0xc0u : 0xc2u) && c <= 0xdf)
        return 1;
    if (c >= 0xe0 && c <= 0xef)
        return 2;
    if (c >= 0xf0 && c <= (lax ? 0xf7u : 0xf4u))
        return 3;
    return 0;
}

int ember_utf8_decode(const char *s, size_t n, unsigned *cp, bool lax)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned c = u[0], need = continuations(c, lax), lo = 0x80, hi = 0xbf;
    *cp = c;
    if (c < 0x80)
        return 1;
    if (need == 0)
        return -1;
    if (!lax) {
        lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    }
    unsigned v = c & (0x3fu >> need);
    for (unsigned i = 1; i <= need; i++) {
        if (i >= n || u[i] < lo || u[i] > hi)
            return lax ? -1 : -(int)i;
        v = (v << 6) | (u[i] & 0x3f);
        lo = 0x80, hi = 0xbf; /* only the first continuation byte is narrower */
    }
    *cp = v;
    return (int)need + 1;
}
