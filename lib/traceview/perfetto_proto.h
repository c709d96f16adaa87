/*
 * perfetto_proto.h - writing Perfetto's protobuf trace (library-internal,
 * for perfetto.c and timeline_perfetto.c): a message is built in a growing
 * buffer with a few field helpers over protobuf.h's codec; the field
 * numbers are those of perfetto's protos/perfetto/trace/. A failed
 * allocation is remembered in the message (err) and every later call on
 * it does nothing.
 */
#ifndef EMBER_TRACEVIEW_PERFETTO_PROTO_H
#define EMBER_TRACEVIEW_PERFETTO_PROTO_H

#include "wire/protobuf.h"
#include "base/vec.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

enum {
    TRACE_PACKET = 1,
    TP_TIMESTAMP = 8,
    TP_SEQUENCE_ID = 10,
    TP_TRACK_EVENT = 11,
    TP_SEQUENCE_FLAGS = 13,
    TP_TRACK_DESCRIPTOR = 60,
    TD_UUID = 1,
    TD_NAME = 2,
    TD_PROCESS = 3,
    TD_THREAD = 4,
    TD_PARENT = 5,
    TD_COUNTER = 8,
    CD_UNIT = 3, /* CounterDescriptor.unit: UNIT_COUNT 2, UNIT_SIZE_BYTES 3 */
    PD_PID = 1,
    PD_NAME = 6,
    THD_PID = 1,
    THD_TID = 2,
    THD_NAME = 5,
    TE_ANNOTATION = 4,
    TE_TYPE = 9,
    TE_TRACK = 11,
    TE_NAME = 23,
    TE_COUNTER = 30,
    TE_DOUBLE_COUNTER = 44,
    DA_INT = 4,
    DA_DOUBLE = 5,
    DA_STRING = 6,
    DA_NAME = 10,
    SEQ = 1, /* our one packet sequence */
};

#endif
