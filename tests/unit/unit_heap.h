/*
 * unit_heap.h - a small encoder of heap recordings (wire/heap_format.h)
 * for test_read_heap.c: process files of 4096-byte chunks, written record
 * by record per stream (a stream claims a chunk when its current one is
 * full), each record's sequence number given whole and written as the
 * delta from its stream's last; a MODULE record of this program, so that
 * return addresses inside its functions get their names.
 *
 * Invariant: every helper asserts (cmocka) on a failure.
 */
#ifndef EMBER_UNIT_HEAP_H
#define EMBER_UNIT_HEAP_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "wire/heap_format.h"
#include "wire/protobuf.h"

#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CHUNK = 4096, MAX_STREAMS = 4 };

struct stream {
    long chunk; /* offset of the current chunk, -1: none */
    uint32_t places;
    uint64_t seq, time;
    uint64_t addr; /* the chunk's last ALLOC or FREE address */
};

struct enc {
    uint8_t *buf;
    size_t len;
    size_t proc; /* the current process file's offset */
    uint32_t chunks;
    struct stream st[MAX_STREAMS];
};

static void grow(struct enc *e, size_t n)
{
    e->buf = realloc(e->buf, e->len + n);
    assert_non_null(e->buf);
    memset(e->buf + e->len, 0, n);
    e->len += n;
}

static struct ember_heap_header *header(struct enc *e)
{
    return (struct ember_heap_header *)(e->buf + e->proc);
}

static void proc_begin(struct enc *e, uint32_t pid, uint32_t flags, uint64_t sample_bytes,
                       uint64_t start_mono)
{
    e->proc = e->len;
    grow(e, EMBER_HEAP_HEADER_SIZE);
    struct ember_heap_header *h = header(e);
    h->version = EMBER_HEAP_VERSION;
    h->header_size = EMBER_HEAP_HEADER_SIZE;
    h->pid = pid;
    h->ppid = 1;
    h->chunk_size = CHUNK;
    h->flags = flags;
    h->sample_bytes = sample_bytes;
    h->start_mono_ns = start_mono;
    h->start_real_ns = 1700000000000000000ull;
    snprintf(h->exe, sizeof(h->exe), "/usr/bin/prog");
    e->chunks = 0;
    for (int i = 0; i < MAX_STREAMS; i++)
        e->st[i] = (struct stream){.chunk = -1};
}

static void proc_end(struct enc *e, uint32_t streams)
{
    header(e)->chunks = e->chunks;
    header(e)->streams = streams;
    header(e)->magic = EMBER_HEAP_MAGIC;
}

static struct ember_heap_chunk *chunk_of(struct enc *e, int s)
{
    return (struct ember_heap_chunk *)(e->buf + e->st[s].chunk);
}

/* Stream s claims a new chunk. */
static void new_chunk(struct enc *e, int s)
{
    struct stream *st = &e->st[s];
    st->chunk = (long)e->len;
    grow(e, CHUNK);
    e->chunks++;
    struct ember_heap_chunk *c = chunk_of(e, s);
    c->magic = EMBER_HEAP_CHUNK_MAGIC;
    c->tid = 100 + (uint32_t)s;
    c->stream = (uint32_t)s;
    c->index = st->places++;
    c->first_seq = st->seq;
    c->time_ns = st->time;
    st->addr = 0;
}

static void put(struct enc *e, int s, const uint8_t *b, size_t n)
{
    if (e->st[s].chunk < 0 || chunk_of(e, s)->used + n > CHUNK - EMBER_HEAP_CHUNK_HEADER)
        new_chunk(e, s);
    struct ember_heap_chunk *c = chunk_of(e, s);
    memcpy((uint8_t *)c + EMBER_HEAP_CHUNK_HEADER + c->used, b, n);
    c->used += n;
}

/* A record: tag and varints. */
static size_t encode(uint8_t *b, uint8_t tag, int n, const uint64_t *v)
{
    size_t len = 0;
    b[len++] = tag;
    for (int i = 0; i < n; i++)
        len += ember_protobuf_varint_encode(v[i], b + len);
    return len;
}

static void rec(struct enc *e, int s, uint8_t tag, int n, const uint64_t *v)
{
    uint8_t b[200];
    put(e, s, b, encode(b, tag, n, v));
}

/* An ALLOC or FREE: its last value, the address, coded against the
 * chunk's previous one (from 0 in a new chunk, so coded once more when
 * the record starts one). */
static void rec_addr(struct enc *e, int s, uint8_t tag, int n, uint64_t *v)
{
    uint8_t b[200];
    uint64_t addr = v[n - 1];
    v[n - 1] = ember_heap_zigzag(e->st[s].addr, addr);
    size_t len = encode(b, tag, n, v);
    if (e->st[s].chunk < 0 || chunk_of(e, s)->used + len > CHUNK - EMBER_HEAP_CHUNK_HEADER) {
        new_chunk(e, s);
        v[n - 1] = ember_heap_zigzag(0, addr);
        len = encode(b, tag, n, v);
    }
    put(e, s, b, len);
    e->st[s].addr = addr;
}

static void alloc(struct enc *e, int s, uint64_t seq, uint64_t size, uint64_t stack, uint64_t addr)
{
    uint64_t v[] = {seq - e->st[s].seq, size, stack, addr};
    rec_addr(e, s, EMBER_HEAP_ALLOC, 4, v);
    e->st[s].seq = seq;
}

static void release(struct enc *e, int s, uint64_t seq, uint64_t addr)
{
    uint64_t v[] = {seq - e->st[s].seq, addr};
    rec_addr(e, s, EMBER_HEAP_FREE, 2, v);
    e->st[s].seq = seq;
}

static void stack(struct enc *e, int s, uint64_t id, uint64_t a0, uint64_t a1)
{
    uint64_t v[] = {id, a1 ? 2 : 1, a0, a1};
    rec(e, s, EMBER_HEAP_STACK, a1 ? 4 : 3, v);
}

static void at_time(struct enc *e, int s, uint64_t ns)
{
    rec(e, s, EMBER_HEAP_TIME, 1, &ns);
    e->st[s].time = ns;
}

static void end(struct enc *e, int s, uint64_t how, uint64_t seq)
{
    uint64_t v[] = {how, seq};
    rec(e, s, EMBER_HEAP_END, 2, v);
}

static int exec_segments(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    uint64_t *out = ctx;
    if (info->dlpi_name && info->dlpi_name[0])
        return 0; /* the program is the first, unnamed */
    out[0] = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            out[1] = info->dlpi_addr + ph->p_vaddr;
            out[2] = out[1] + ph->p_memsz;
        }
    }
    return 1;
}

/* A MODULE record of this program, with a build-id (n bytes; 0: none,
 * the path is read as it is). */
static void module_self_id(struct enc *e, int s, const uint8_t *id, uint8_t n);
static void module_self(struct enc *e, int s)
{
    module_self_id(e, s, NULL, 0);
}

static void module_self_id(struct enc *e, int s, const uint8_t *id, uint8_t nid)
{
    uint64_t seg[3] = {0};
    dl_iterate_phdr(exec_segments, seg);
    char path[512];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    assert_true(n > 0);
    path[n] = 0;
    uint8_t b[700];
    size_t len = 0;
    b[len++] = EMBER_HEAP_MODULE;
    len += ember_protobuf_varint_encode(seg[0], b + len);
    b[len++] = nid;
    if (nid)
        memcpy(b + len, id, nid);
    len += nid;
    len += ember_protobuf_varint_encode(1, b + len);
    len += ember_protobuf_varint_encode(seg[1], b + len);
    len += ember_protobuf_varint_encode(seg[2], b + len);
    memcpy(b + len, path, (size_t)n + 1);
    put(e, s, b, len + (size_t)n + 1);
}

#endif
