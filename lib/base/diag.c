/*
 * diag.c - diagnostics: the one way the library says what went wrong.
 */
#include "base/diag.h"
#include "base/utf8.h"

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
        unsigned cp;
        int len = ember_utf8_decode(s + i, n - i, &cp, false);
        if (len == 1 && (u[i] < 0x20 || u[i] == 0x7f))
            len = 0;
        if (len <= 0) {
            o += (size_t)snprintf(out + o, outsz - o, "\\x%02x", u[i]);
            i++;
        } else {
            memcpy(out + o, u + i, (size_t)len);
            o += (size_t)len;
            i += (size_t)len;
        }
    }
    out[o] = '\0';
}
