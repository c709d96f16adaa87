/*
 * text.h - control characters in names and messages (library-internal;
 * ember_text_escape in ember/base.h is the public face).
 *
 * A control character is one of Unicode's category Cc: the bytes below
 * 0x20 and DEL (0x7f), and U+0080 to U+009F written in UTF-8 (0xc2 0x80
 * to 0xc2 0x9f). A name that holds one breaks a line of text, or makes a
 * terminal move, recolour or retitle; text writers spell each of its
 * bytes as "\xNN" (lowercase hex), as `trace dump` and error messages
 * quote bytes. Every other byte, '\' included, is kept: the spelling is
 * not meant to be undone (a folded stack is read back as written), and
 * names with a '\' stay what FlameGraph's scripts make of them.
 */
#ifndef EMBER_BASE_TEXT_H
#define EMBER_BASE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* The length of the control character at s (1 or 2 bytes), or 0. */
static inline size_t ember_text_ctl_len(const char *s, size_t n)
{
    unsigned char c = (unsigned char)s[0];
    if (c < 0x20 || c == 0x7f)
        return 1;
    if (c == 0xc2 && n > 1 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] <= 0x9f)
        return 2;
    return 0;
}

/* Whether [s, s + n) holds a control character. */
bool ember_text_has_ctl(const char *s, size_t n);

/* Each byte of a control character as "\xNN": 4 bytes. */
enum { EMBER_TEXT_ESCAPE = 4 };

/* [s, s + n) with its control characters escaped, into buf (room for
 * EMBER_TEXT_ESCAPE * n bytes); returns the length written. */
size_t ember_text_escape_into(const char *s, size_t n, char *buf);

#endif
