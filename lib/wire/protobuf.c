/*
 * protobuf.c - the varint codec (see protobuf.h). Decoding stops at the
 * tenth byte: a longer varint is an error, not a wider number.
 */
#include "wire/protobuf.h"

enum ember_protobuf_status ember_protobuf_varint_decode(const uint8_t **p, const uint8_t *end,
                                                        uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 7 * EMBER_PROTOBUF_VARINT_MAX; shift += 7) {
        if (*p == end)
            return EMBER_PROTOBUF_SHORT;
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return EMBER_PROTOBUF_OK;
        }
    }
    return EMBER_PROTOBUF_LONG;
}
