/*
 * ember_rings.h - what the files of the backend for ember's own trace
 * files share (library-internal): the backend's state, the cursor's, and
 * the functions one part calls in another. How the files are read, and
 * the invariants, are described in ember_rings.c (opening them) and
 * ember_rings_cursor.c (reading packets, and recording them).
 */
#ifndef EMBER_TRACEFILE_EMBER_RINGS_H
#define EMBER_TRACEFILE_EMBER_RINGS_H

#include "tracefile/ring_decode.h"
#include "wire/ring_format.h"
#include "tracefile/source.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The data of a packet log is a sequence of {u32 ring, u32 size} + packet. */
struct packet_ref {
    uint64_t off;
    uint32_t size; /* in the file: less than the record's when cut */
    bool cut;
};

struct ring {
    uint64_t head;           /* the stream's end, as last read */
    uint64_t dropped;        /* events the writer dropped (drain mode) */
    uint64_t dropped_told;   /* following: of those, already in lost */
    struct packet_ref *refs; /* logs: where each packet is */
    size_t nrefs, rcap;
    uint64_t missing, missing_first; /* logs: packets the head says follow the last */
};

struct backend {
    bool log, drain;
    struct ember_ring_header h; /* a checked copy: the geometry */
    char *map;                  /* following: the header and tables */
    size_t map_size;
    struct ember_ring_header *live; /* in map: its atomics */
    char *sites_raw;
    struct ember_sites sites;
    struct ember_ns_scale scale;
    struct ring *rings;
    unsigned nrings;
};

struct cursor {
    uint64_t pos;     /* ring files: the stream position read up to; logs: the next packet */
    uint64_t s;       /* the current packet's number (logs: its index) */
    char *buf;        /* its copy */
    size_t size, off; /* its extent, the next event in it */
    bool closed;      /* ring files: the writer has finished it */
    bool cut;         /* the file ends in it: nothing more can come of it */
    uint64_t seq;     /* the next event's number */
    uint64_t pseq;    /* logs: the current packet's sequence number (checked to grow) */
    bool cut_gap;     /* packets were cut since the last one read */
};

static inline struct backend *be(const struct ember_trace *t)
{
    return t->be;
}

/* Following: ring i's descriptor in the mapped tables. */
static inline struct ember_ring_desc *live_desc(const struct backend *b, unsigned i)
{
    return (struct ember_ring_desc *)(void *)(b->map + b->h.rings_offset +
                                              (size_t)i * EMBER_RING_DESC_SIZE);
}

/* ember_rings.c: ring i's descriptor (in place when following, else read
 * from the file); the rings and sites as they are now (following). */
int ember_rings_read_desc(struct ember_trace *t, unsigned i, struct ember_ring_desc *dsc);
int ember_rings_refresh(struct ember_trace *t);

/* ember_rings_cursor.c: struct ember_source_ops's cursor, pass, native
 * packets and recorder, for ember_rings_ops. */
int ember_rings_cursor_init(struct ember_trace *t, struct ember_cursor *c);
int ember_rings_cursor_next(struct ember_trace *t, struct ember_cursor *c);
void ember_rings_cursor_free(struct ember_trace *t, struct ember_cursor *c);
void ember_rings_pass_begin(struct ember_trace *t);
void ember_rings_pass_end(struct ember_trace *t);
bool ember_rings_writer_alive(const struct ember_trace *t);
int ember_rings_each_packet(struct ember_trace *t, ember_trace_packet_fn fn, void *ctx);
int ember_rings_recorder_new(struct ember_trace_recorder **out, struct ember_trace *t, int fd,
                             int scratch);

#endif
