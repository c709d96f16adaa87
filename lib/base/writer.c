/*
 * writer.c - buffered writing (see writer.h).
 */
#include "base/writer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ember_writer_init(struct ember_writer *w, const struct ember_sink *sink)
{
    w->sink = sink;
    w->len = 0;
    w->err = 0;
}

static void drain(struct ember_writer *w)
{
    if (!w->err && w->len)
        w->err = w->sink->write(w->sink->ctx, w->buf, w->len);
    w->len = 0;
}

void ember_writer_put(struct ember_writer *w, const char *s, size_t n)
{
    while (n > 0 && !w->err) {
        if (w->len == sizeof(w->buf))
            drain(w);
        size_t room = sizeof(w->buf) - w->len;
        size_t k = room < n ? room : n;
        memcpy(w->buf + w->len, s, k);
        w->len += k;
        s += k;
        n -= k;
    }
}

void ember_writer_puts(struct ember_writer *w, const char *s)
{
    ember_writer_put(w, s, strlen(s));
}

void ember_writer_printf(struct ember_writer *w, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(small)) {
        ember_writer_put(w, small, (size_t)n);
        return;
    }
    char *big = NULL;
    va_start(ap, fmt);
    if (vasprintf(&big, fmt, ap) >= 0)
        ember_writer_put(w, big, (size_t)n);
    va_end(ap);
    free(big);
}

char *ember_writer_reserve(struct ember_writer *w, size_t n)
{
    if (sizeof(w->buf) - w->len < n)
        drain(w);
    return w->err || n > sizeof(w->buf) ? NULL : w->buf + w->len;
}

void ember_writer_commit(struct ember_writer *w, size_t n)
{
    w->len += n;
}

int ember_writer_flush(struct ember_writer *w)
{
    drain(w);
    return w->err;
}
