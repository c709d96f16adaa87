/*
 * protobuf.h - protobuf's wire format (library-internal): the one varint
 * codec, read by pprof_wire.c and written by the Perfetto writers
 * (perfetto.c, timeline_perfetto.c), whose messages are built in a growing
 * buffer with a few field helpers. A failed allocation is remembered in
 * the message (err) and every later call on it does nothing.
 *
 * A field is a key (field number << 3 | wire type) and a payload; a varint
 * holds 7 bits a byte, low bits first, the top bit set on all bytes but
 * the last, and is at most 10 bytes long.
 */
#ifndef EMBER_EXPORT_PROTOBUF_H
#define EMBER_EXPORT_PROTOBUF_H

#include "util/vec.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The wire types. */
enum {
    EMBER_PROTOBUF_VARINT = 0,
    EMBER_PROTOBUF_I64 = 1,
    EMBER_PROTOBUF_LEN = 2,
    EMBER_PROTOBUF_I32 = 5
};

enum { EMBER_PROTOBUF_VARINT_MAX = 10 };

/* What reading a varint found. */
enum ember_protobuf_status { EMBER_PROTOBUF_OK, EMBER_PROTOBUF_SHORT, EMBER_PROTOBUF_LONG };

/* v as a varint into out (EMBER_PROTOBUF_VARINT_MAX bytes): its length. */
size_t ember_protobuf_varint_encode(uint64_t v, uint8_t *out);

/* The varint at *p (before end) into *v, *p moved past it: OK, or SHORT
 * when the data ends inside it, or LONG past 10 bytes. */
enum ember_protobuf_status ember_protobuf_varint_decode(const uint8_t **p, const uint8_t *end,
                                                        uint64_t *v);

/* A protobuf message being built. */
struct msg {
    uint8_t *b;
    size_t n, cap;
    int err;
};

static inline void put(struct msg *m, const void *p, size_t n)
{
    if (m->err || EMBER_VEC_RESERVE(m->b, m->cap, m->n + n) < 0) {
        m->err = -ENOMEM;
        return;
    }
    memcpy(m->b + m->n, p, n);
    m->n += n;
}

static inline void varint(struct msg *m, uint64_t v)
{
    uint8_t b[EMBER_PROTOBUF_VARINT_MAX];
    put(m, b, ember_protobuf_varint_encode(v, b));
}

static inline void field_varint(struct msg *m, unsigned field, uint64_t v)
{
    varint(m, (uint64_t)field << 3 | EMBER_PROTOBUF_VARINT);
    varint(m, v);
}

static inline void field_bytes(struct msg *m, unsigned field, const void *p, size_t n)
{
    varint(m, (uint64_t)field << 3 | EMBER_PROTOBUF_LEN);
    varint(m, n);
    put(m, p, n);
}

static inline void field_string(struct msg *m, unsigned field, const char *s)
{
    field_bytes(m, field, s, strlen(s));
}

/* Bytes as a protobuf string, which must be UTF-8: ASCII as it is, the
 * rest (and control bytes) as \\xNN. */
static inline void field_text(struct msg *m, unsigned field, const char *s, size_t len)
{
    char *text = malloc(4 * len + 1);
    size_t n = 0;
    if (!text) {
        m->err = -ENOMEM;
        return;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            text[n++] = (char)c;
        else
            n += (size_t)snprintf(text + n, 5, "\\x%02x", c);
    }
    field_bytes(m, field, text, n);
    free(text);
}

static inline void field_double(struct msg *m, unsigned field, double d)
{
    varint(m, (uint64_t)field << 3 | EMBER_PROTOBUF_I64);
    put(m, &d, 8); /* little-endian, as the format */
}

static inline void field_msg(struct msg *m, unsigned field, struct msg *sub)
{
    if (sub->err)
        m->err = sub->err;
    field_bytes(m, field, sub->b, sub->n);
    sub->n = 0;
}

#endif
