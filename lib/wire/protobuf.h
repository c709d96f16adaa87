/*
 * protobuf.h - protobuf's wire format (library-internal): the wire types
 * and the one varint codec, read by pprof_wire.c and the heap reader, written
 * by the Perfetto writers (perfetto_proto.h) and the allocation recorder.
 *
 * A field is a key (field number << 3 | wire type) and a payload; a varint
 * holds 7 bits a byte, low bits first, the top bit set on all bytes but
 * the last, and is at most 10 bytes long.
 */
#ifndef EMBER_WIRE_PROTOBUF_H
#define EMBER_WIRE_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

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

/* v as a varint into out (EMBER_PROTOBUF_VARINT_MAX bytes): its length.
 * Inline: the allocation recorder (lib/heap), which links nothing of
 * ember's library, writes its records with it. */
static inline size_t ember_protobuf_varint_encode(uint64_t v, uint8_t *out)
{
    size_t n = 0;
    do {
        out[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

/* The varint at *p (before end) into *v, *p moved past it: OK, or SHORT
 * when the data ends inside it, or LONG past 10 bytes. */
enum ember_protobuf_status ember_protobuf_varint_decode(const uint8_t **p, const uint8_t *end,
                                                        uint64_t *v);

#endif
