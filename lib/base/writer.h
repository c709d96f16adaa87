/*
 * writer.h - buffered writing to an ember_sink (library-internal).
 *
 * Errors are sticky: after the first failed write every call is a no-op and
 * ember_writer_flush() returns that error, so callers can write freely and
 * check once.
 */
#ifndef EMBER_BASE_WRITER_H
#define EMBER_BASE_WRITER_H

#include "ember/base.h"

struct ember_writer {
    const struct ember_sink *sink;
    size_t len;
    int err;
    char buf[1 << 16];
};

void ember_writer_init(struct ember_writer *w, const struct ember_sink *sink);
void ember_writer_put(struct ember_writer *w, const char *s, size_t n);
void ember_writer_puts(struct ember_writer *w, const char *s);
void ember_writer_printf(struct ember_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Room for n (<= 64 KiB) bytes written in place: returns where, or NULL
 * after an error; then ember_writer_commit(w, bytes actually written). */
char *ember_writer_reserve(struct ember_writer *w, size_t n);
void ember_writer_commit(struct ember_writer *w, size_t n);
/* Writes what is buffered; returns 0 or the first error. */
int ember_writer_flush(struct ember_writer *w);

#endif
