/*
 * utf8.h - the one UTF-8 decoder (library-internal): every writer that
 * checks, replaces or counts UTF-8 asks it.
 *
 * Strict decoding is Unicode's: no overlong forms, no surrogates, nothing
 * above U+10FFFF, and an invalid sequence is as long as its "maximal
 * subpart" (the longest prefix some valid sequence starts with, at least
 * one byte). Lax decoding is flamegraph.pl's (Perl's lax decoder, for the
 * colours): any lead byte 0xc0-0xf7 followed by enough continuation bytes
 * decodes, and anything else is one byte standing for itself.
 */
#ifndef EMBER_BASE_UTF8_H
#define EMBER_BASE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Decodes the sequence at s (n >= 1 bytes, lax or strict): its length
 * with its code point in *cp, or, when invalid, minus the length of its
 * maximal subpart (-1 when lax) with *cp the first byte. */
int ember_utf8_decode(const char *s, size_t n, unsigned *cp, bool lax);

/* The next code point of len bytes of s from *i, decoded lax; *i moves
 * past it (an invalid byte stands for itself). Inline, ASCII at once: the
 * SVG writer counts a label's characters with it, one call each. */
static inline unsigned ember_utf8_next(const char *s, size_t len, size_t *i)
{
    unsigned cp = (unsigned char)s[*i];
    if (cp < 0x80) {
        ++*i;
        return cp;
    }
    int n = ember_utf8_decode(s + *i, len - *i, &cp, true);
    *i += n > 0 ? (size_t)n : 1;
    return cp;
}

#endif
