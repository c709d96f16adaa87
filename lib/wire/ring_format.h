/*
 * ring_format.h - the ring file: the contract between the tracing library that
 * writes it and the readers (`ember trace`). Shared by both; nothing here
 * allocates or does I/O.
 *
 * A file, memory-mapped MAP_SHARED by the traced process:
 *
 *   [0, 4096)            header (struct ember_ring_header); its magic is
 *                        written last, so a reader that sees it sees a
 *                        complete header
 *   [strings, +size)     the site table: one record per call site (name,
 *                        kind, fields), appended under a lock, never changed
 *   [rings, +n*192)      one descriptor per ring: the thread and the
 *                        ring's published position ("head")
 *   [data, ...)          the rings: ring i is packets_per_ring packets of
 *                        packet_size bytes at data + i * ring_size
 *
 * Rings are claimed by threads one each; the file is sparse until then.
 * A ring is an endless stream of packets wrapping over its slots: packet s
 * lives in slot s % packets_per_ring and covers stream bytes
 * [s * packet_size, (s + 1) * packet_size). head is the stream position
 * just after the last complete event, stored with release semantics after
 * the event's bytes: a reader that loads head (acquire) may read every
 * byte before it. In flight-recorder mode older packets are overwritten;
 * a reader copies packets, then reloads head and discards any packet whose
 * slot the writer may have reached since.
 *
 * Each packet is a CTF 1.8 packet (so exporting CTF is copying packets):
 *   0   u32 magic 0xC1FC1FC1, u8 uuid[16], u32 stream_id (0)
 *   24  u64 timestamp_begin, timestamp_end, content_size (bits),
 *       packet_size (bits), packet_seq_num, events_discarded,
 *       event_seq_begin (events the ring held before this packet),
 *       u32 tid, u32 reserved
 *   88  events, each 8-byte aligned: u32 site id, u32 size (bytes, all
 *       included), u64 timestamp, then the site's fields (i64, f64, or a
 *       string: NUL-terminated, zero-padded to 8 bytes)
 * timestamp_end and content_size are written when the packet closes; the
 * open packet's extent is given by head.
 */
#ifndef EMBER_WIRE_RING_FORMAT_H
#define EMBER_WIRE_RING_FORMAT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define EMBER_RING_MAGIC   0x31525445424d45ULL /* "EMBETR1" */
#define EMBER_RING_VERSION 1
#define EMBER_CTF_MAGIC    0xC1FC1FC1u

enum {
    EMBER_RING_HEADER_SIZE = 4096,
    EMBER_RING_DESC_SIZE = 192,
    EMBER_PACKET_HEADER = 88, /* first event */
    EMBER_EVENT_HEADER = 16,
    EMBER_MAX_FIELDS = 8,
    EMBER_MAX_STR = 64, /* bytes of a string field kept, NUL excluded */
    EMBER_NAME_MAX = 255,
};

/* flags; EMBER_RING_LOG marks a packet log (ember record, tracefile/ring_log.c) rather
 * than a ring file */
enum { EMBER_RING_TSC = 1, EMBER_RING_DRAIN = 2, EMBER_RING_LOG = 0x100 };

struct ember_ring_header {
    uint64_t magic; /* written last */
    uint32_t version;
    uint32_t header_size;
    uint32_t pid, ppid;
    uint32_t ring_count;
    uint32_t packets_per_ring;
    uint32_t packet_size;
    uint32_t flags;
    uint64_t ticks_per_sec;  /* timestamps are ticks: TSC, or ns (1e9) */
    uint64_t base_ticks;     /* a timestamp taken together with ... */
    uint64_t base_mono_ns;   /* ... CLOCK_MONOTONIC and ... */
    uint64_t base_real_ns;   /* ... CLOCK_REALTIME, for absolute times */
    uint64_t strings_offset; /* the site table */
    uint64_t strings_size;
    uint64_t rings_offset;  /* ring descriptors */
    uint64_t data_offset;   /* ring 0 */
    uint32_t rings_claimed; /* atomic: rings handed to threads */
    uint32_t strings_used;  /* bytes of the site table in use (release) */
    uint64_t consumer;      /* drain mode: nonzero while a consumer is attached */
    uint8_t uuid[16];
    char exe[256];
};

struct ember_ring_desc {
    uint32_t tid;
    uint32_t state; /* 0 free, 1 in use, 2 the thread exited */
    char name[56];
    uint64_t head; /* published stream position (own cache line) */
    uint64_t pad1[7];
    uint64_t tail;    /* drain mode: the consumer has read up to here */
    uint64_t dropped; /* drain mode: events the writer dropped, ring full */
    uint64_t pad2[6];
};

/* The header's geometry is sane, whatever the file's size: what readers
 * check before they trust an offset (the version is checked apart, for
 * its own message). Offsets are 8-byte aligned (a follower reads the
 * descriptors in place, atomically) and below 2^62, sizes bounded, so
 * that no sum below overflows. */
static inline bool ember_ring_geometry_ok(const struct ember_ring_header *h)
{
    uint64_t P = h->packet_size, N = h->packets_per_ring, R = h->ring_count;
    return P >= 4096 && P <= (64u << 20) && P % 8 == 0 && N >= 2 && N <= (1u << 20) && R > 0 &&
           R <= 65536 && P * N <= (1ull << 36) && h->ticks_per_sec && !(h->ticks_per_sec >> 62) &&
           !((h->strings_offset | h->rings_offset | h->data_offset) % 8) &&
           !((h->strings_offset | h->rings_offset | h->data_offset) >> 62) &&
           h->strings_size <= UINT32_MAX && h->strings_used <= h->strings_size;
}

/* Where the tables a reader needs before any packet end: the header, the
 * used part of the site table, the descriptors of the first nrings rings.
 * A file shorter than that cannot be read at all. */
static inline uint64_t ember_ring_tables_end(const struct ember_ring_header *h, uint64_t nrings)
{
    uint64_t sites = h->strings_offset + h->strings_used;
    uint64_t rings = h->rings_offset + nrings * EMBER_RING_DESC_SIZE;
    uint64_t end = sites > rings ? sites : rings;
    return end > EMBER_RING_HEADER_SIZE ? end : EMBER_RING_HEADER_SIZE;
}

/* The size of a complete ring file (every ring in full); a packet log
 * (EMBER_RING_LOG) holds packets from data_offset to its end. A file
 * shorter than this was cut short: its packets before the cut can still
 * be read. */
static inline uint64_t ember_ring_file_end(const struct ember_ring_header *h)
{
    return h->data_offset +
           (uint64_t)h->ring_count * h->packets_per_ring * (uint64_t)h->packet_size;
}

/* How many of the n bytes at off a file of size bytes holds. */
static inline uint64_t ember_ring_in_file(uint64_t off, uint64_t n, uint64_t size)
{
    return off >= size ? 0 : n < size - off ? n : size - off;
}

/* The bytes of a cut packet that hold whole events, from the packet's
 * start: the events are walked by their sizes up to the cut. An event
 * with an impossible size stops the walk there and keeps the rest, for
 * the decoder to report as corrupt. */
static inline uint64_t ember_ring_whole_events(const char *packet, uint64_t have)
{
    uint64_t off = EMBER_PACKET_HEADER;
    while (off + EMBER_EVENT_HEADER <= have) {
        uint32_t size;
        memcpy(&size, packet + off + 4, 4);
        if (size < EMBER_EVENT_HEADER || size % 8)
            return have;
        if (size > have - off)
            break;
        off += size;
    }
    return off;
}

/* A site record in the table, 8-byte aligned: id = offset / 8 + 1.
 * Followed by name_len bytes of name, then nfields field records, each
 * u8 type, u8 name_len, name bytes, padded so the next record is aligned. */
struct ember_site_record {
    uint32_t size; /* of the whole record, a multiple of 8 */
    uint8_t kind;
    uint8_t nfields;
    uint16_t name_len;
};

struct ember_packet_context {
    uint64_t timestamp_begin;
    uint64_t timestamp_end;
    uint64_t content_size; /* bits */
    uint64_t packet_size;  /* bits */
    uint64_t packet_seq_num;
    uint64_t events_discarded;
    uint64_t event_seq_begin;
    uint32_t tid;
    uint32_t reserved;
};

struct ember_packet_header {
    uint32_t magic;
    uint8_t uuid[16];
    uint32_t stream_id;
    struct ember_packet_context ctx;
};

_Static_assert(sizeof(struct ember_ring_header) <= EMBER_RING_HEADER_SIZE, "header fits");
_Static_assert(sizeof(struct ember_ring_desc) == EMBER_RING_DESC_SIZE, "descriptor size");
_Static_assert(sizeof(struct ember_packet_header) == EMBER_PACKET_HEADER, "packet header");

#endif
