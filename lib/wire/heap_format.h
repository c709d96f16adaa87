/*
 * heap_format.h - the heap recording: the contract between the allocation
 * recorder preloaded into a program (lib/heap/, `ember record --heap`) and
 * its reader (lib/read/heap*.c). Shared by both; nothing here allocates or
 * does I/O.
 *
 * One file per process image (a fork's child and an exec'd program start
 * their own), mapped MAP_SHARED by the process that writes it:
 *
 *   [0, 4096)                     header (struct ember_heap_header); its
 *                                 magic is written last, so a reader that
 *                                 sees it sees a complete header
 *   [4096 + k * chunk_size, ...)  chunk k: a struct ember_heap_chunk, then
 *                                 records
 *
 * Chunks are claimed by threads one at a time (an atomic counter in the
 * header); a thread writes its records into its chunk and claims another
 * when it is full. A thread's chunks form its stream: chunk headers carry
 * the stream and the chunk's place in it.
 *
 * Crash safety: a record's bytes are written before the chunk's `used` is
 * advanced past it (a release store); a process killed at any moment
 * (SIGKILL included) leaves every record below each chunk's `used`
 * readable, because the page cache keeps a MAP_SHARED file's pages. The
 * END record says the process ended normally (exit, or exec of another
 * program); without it the reader says the recording was cut.
 *
 * Order: every allocation and free takes a sequence number from one
 * counter in the header (an atomic add), after the allocator returned for
 * an allocation and before the memory is given back for a free; so a block
 * freed by one thread and handed out again to another is freed before it
 * is allocated again in sequence order, whichever thread records first.
 * realloc takes two: one for the old block's free before the call, one
 * for the new block after it (a failed realloc writes neither). A reader
 * merges the streams by sequence number. Records carry their sequence
 * number as a delta from the previous one in the same stream (streams are
 * in increasing order).
 *
 * Records: a tag byte, then unsigned LEB128 varints (wire/protobuf.c's
 * codec), except where said:
 *   ALLOC   seq_delta, size, stack id, address
 *   FREE    seq_delta, address (one no ALLOC gave is a block from before
 *           recording began, or a fork's parent's: readers ignore it);
 *           an ALLOC's or FREE's address is zigzag-coded (ember_heap_zigzag)
 *           as its difference from the previous ALLOC's or FREE's address in
 *           the same chunk, from 0 at the chunk's start: blocks lie near
 *           each other, and a chunk reads alone
 *   STACK   id, n, n return addresses (innermost first; the first is the
 *           allocating call's own return address); ids count from 1 in
 *           the order stacks are first seen, process-wide; a stack is
 *           written once, by the thread that saw it first, before that
 *           thread's record using it (other threads' records may name it
 *           before the reader reaches its STACK: readers collect stacks
 *           first, or look ahead)
 *   MODULE  load bias, build-id length (u8) and bytes, then the number of
 *           executable segments and each one's start and end (absolute
 *           addresses), then the path (NUL-terminated); written when a
 *           stack holds an address outside every module written so far
 *   TIME    ns since the header's start_mono_ns (CLOCK_MONOTONIC_COARSE):
 *           the time of this stream's following records; written when the
 *           coarse clock has moved since the stream's last record
 *   END     how the process ended: 0 exit, 1 exec; its sequence number
 *           counter at the end (a varint). A failed exec writes END (exec)
 *           and goes on: records and another END may follow; the last
 *           END says how the image ended
 *   PAD     nothing: the rest of the chunk is unused
 *
 * A recording of several processes (`ember record --heap -o X.heap`) is
 * their files back to back, each one 4096 + chunks * chunk_size bytes (its
 * header's final counts; a file cut shorter than that is padded with
 * zeros, which read as unclaimed chunks).
 */
#ifndef EMBER_WIRE_HEAP_FORMAT_H
#define EMBER_WIRE_HEAP_FORMAT_H

#include <stdint.h>

#define EMBER_HEAP_MAGIC       0x3150414548424d45ULL /* "EMBHEAP1" */
#define EMBER_HEAP_VERSION     1
#define EMBER_HEAP_CHUNK_MAGIC 0x4b4e4843u /* "CHNK" */

enum {
    EMBER_HEAP_HEADER_SIZE = 4096,
    EMBER_HEAP_CHUNK_HEADER = 64,
    EMBER_HEAP_CHUNK_SIZE = 1 << 20, /* the default; the header says */
    EMBER_HEAP_MAX_FRAMES = 128,     /* return addresses kept per stack */
};

enum ember_heap_tag {
    EMBER_HEAP_PAD = 0,
    EMBER_HEAP_ALLOC = 1,
    EMBER_HEAP_FREE = 2,
    EMBER_HEAP_STACK = 3,
    EMBER_HEAP_MODULE = 4,
    EMBER_HEAP_TIME = 5,
    EMBER_HEAP_END = 6,
};

enum { EMBER_HEAP_END_EXIT = 0, EMBER_HEAP_END_EXEC = 1 };

/* flags */
enum {
    EMBER_HEAP_SAMPLED = 1, /* Poisson by bytes, mean sample_bytes */
    EMBER_HEAP_FP = 2,      /* stacks by frame pointers (else CFI, libunwind) */
};

struct ember_heap_header {
    uint64_t magic; /* written last */
    uint32_t version;
    uint32_t header_size;
    uint32_t pid, ppid;
    uint32_t chunk_size; /* bytes, a multiple of 4096 */
    uint32_t flags;
    uint64_t sample_bytes;  /* sampled: the mean distance between samples; 0: every allocation */
    uint64_t seed;          /* sampled: the generator's seed */
    uint64_t start_mono_ns; /* CLOCK_MONOTONIC when recording began */
    uint64_t start_real_ns; /* CLOCK_REALTIME at the same moment */
    uint32_t chunks;        /* atomic: chunks claimed */
    uint32_t streams;       /* atomic: streams (threads) started */
    uint64_t seq;           /* atomic: the sequence counter */
    char exe[256];          /* the program (readlink /proc/self/exe), cut to fit */
};

struct ember_heap_chunk {
    uint32_t magic; /* EMBER_HEAP_CHUNK_MAGIC, written when claimed */
    uint32_t tid;
    uint32_t stream;    /* which thread's stream, from the header's streams */
    uint32_t index;     /* this chunk's place in its stream: 0, 1, 2... */
    uint64_t used;      /* bytes of records after this header (release store) */
    uint64_t first_seq; /* the sequence number the first record's delta is from */
    uint64_t time_ns;   /* the stream's time at the chunk's start (as TIME) */
    uint64_t reserved[3];
};

/* A signed difference as an unsigned varint's value: 0, -1, 1, -2... as
 * 0, 1, 2, 3... (protobuf's sint64). */
static inline uint64_t ember_heap_zigzag(uint64_t from, uint64_t to)
{
    uint64_t d = to - from;
    return (d << 1) ^ (0 - (d >> 63));
}

/* The address a zigzag-coded difference z from `from` names. */
static inline uint64_t ember_heap_unzigzag(uint64_t from, uint64_t z)
{
    return from + ((z >> 1) ^ (0 - (z & 1)));
}

_Static_assert(sizeof(struct ember_heap_header) <= EMBER_HEAP_HEADER_SIZE, "header fits");
_Static_assert(sizeof(struct ember_heap_chunk) == EMBER_HEAP_CHUNK_HEADER, "chunk header");

#endif
