/*
 * diag.c - diagnostics: the one way the library says what went wrong.
 */
#include "base/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ember_diag_clear(struct ember_diag *d)
{
    if (!d)
        return;
    d->file[0] = '\0';
    d->line = 0;
    d->msg[0] = '\0';
}

int ember_diag_vset(struct ember_diag *d, int err, const char *file, uint64_t line, const char *fmt,
                    va_list ap)
{
    if (!d)
        return err;
    snprintf(d->file, sizeof(d->file), "%s", file ? file : "");
    d->line = line;
    vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
    return err;
}

int ember_diag_set(struct ember_diag *d, int err, const char *file, uint64_t line, const char *fmt,
                   ...)
{
    va_list ap;
    va_start(ap, fmt);
    ember_diag_vset(d, err, file, line, fmt, ap);
    va_end(ap);
    return err;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t len;
    unsigned min;
    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xe0) == 0xc0)
        len = 2, min = 0x80;
    else if ((s[0] & 0xf0) == 0xe0)
        len = 3, min = 0x800;
    else if ((s[0] & 0xf8) == 0xf0)
        len = 4, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    unsigned cp = s[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

void ember_quote(char *out, size_t outsz, const char *s, size_t n, size_t max)
{
    size_t o = 0;
    const unsigned char *u = (const unsigned char *)s;
    if (outsz < 8) {
        if (outsz)
            out[0] = '\0';
        return;
    }
    for (size_t i = 0; i < n;) {
        if (i >= max || o + 8 >= outsz) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        size_t len = utf8_len(u + i, n - i);
        if (len == 1 && (u[i] < 0x20 || u[i] == 0x7f))
            len = 0;
        if (len == 0) {
            o += (size_t)snprintf(out + o, outsz - o, "\\x%02x", u[i]);
            i++;
        } else {
            memcpy(out + o, u + i, len);
            o += len;
            i += len;
        }
    }
    out[o] = '\0';
}
