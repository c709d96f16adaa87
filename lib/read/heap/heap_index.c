/*
 * heap_index.c - one process file of a heap recording read from the input
 * and indexed (heap_impl.h): the header checked, the claimed chunks
 * listed by stream in stream order, and one pass over every record that
 * keeps the stacks (by id) and the modules, and notes the END. From a
 * file that can be read at any place only the headers are read here (the
 * records are read past) and the pass reads the records in windows; from
 * a pipe or gzip each chunk's used bytes are kept in memory.
 *
 * Invariants: after heap_proc_read, every chunk has the chunk magic or
 * none (unclaimed, no records kept), a `used` inside the chunk and a stream below the header's
 * count; a stream's chunks have distinct places; stack ids are defined once.
 */
#include "read/heap/heap_impl.h"
#include "read/read_impl.h"
#include "wire/protobuf.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* MAX_IDLE_STREAMS: threads that started a stream and were stopped
 * before claiming its first chunk, at most. MAX_MEAN: the largest mean of
 * a sampled recording, where 1 - exp(-1/N) is still no 0. */
enum { MAX_CHUNK_SIZE = 1 << 30, READ_STEP = 16 << 20, MAX_IDLE_STREAMS = 4096 };
#define MAX_MEAN (1ull << 40)

static int check_header(struct heap_proc *p, struct ember_diag *d)
{
    const struct ember_heap_header *h = &p->h;
    if (h->magic != EMBER_HEAP_MAGIC)
        return heap_corrupt(p, d, 0, "expected a process file's magic \"EMBHEAP1\"");
    if (h->version != EMBER_HEAP_VERSION || h->header_size != EMBER_HEAP_HEADER_SIZE)
        return heap_corrupt(p, d, offsetof(struct ember_heap_header, version),
                            "version %u with a header of %u bytes (expected version %d, %d "
                            "bytes)",
                            h->version, h->header_size, EMBER_HEAP_VERSION, EMBER_HEAP_HEADER_SIZE);
    if (h->chunk_size < 4096 || h->chunk_size % 4096 || h->chunk_size > MAX_CHUNK_SIZE)
        return heap_corrupt(p, d, offsetof(struct ember_heap_header, chunk_size),
                            "chunks of %u bytes (expected a multiple of 4096 up to 1 GiB)",
                            h->chunk_size);
    if ((h->flags & EMBER_HEAP_SAMPLED) && (h->sample_bytes == 0 || h->sample_bytes > MAX_MEAN))
        return heap_corrupt(p, d, offsetof(struct ember_heap_header, sample_bytes),
                            "a sampled recording of mean %llu bytes (expected 1 to 2^40)",
                            (unsigned long long)h->sample_bytes);
    return 0;
}

static int cut(struct heap_proc *p, uint64_t have, struct ember_diag *d)
{
    return ember_format_truncated(
        d, p->input, 0, "a heap recording's process file",
        "the %llu bytes of process %u's file (4096 + %u chunks of %u bytes) from byte %llu of "
        "the input; it has %llu",
        (unsigned long long)(EMBER_HEAP_HEADER_SIZE + (uint64_t)p->h.chunks * p->h.chunk_size),
        p->h.pid, p->h.chunks, p->h.chunk_size, (unsigned long long)p->base,
        (unsigned long long)have);
}

/* Chunk k's header, checked, and (read from a pipe or gzip) its used
 * bytes kept; the rest read past. *have counts the file's bytes read. */
static int read_chunk(struct heap_proc *p, struct heap_src *s, uint32_t k, uint64_t *have,
                      struct ember_diag *d)
{
    size_t got, room = p->h.chunk_size - EMBER_HEAP_CHUNK_HEADER;
    if (EMBER_VEC_RESERVE(p->chunk_at, p->chunk_cap, (size_t)k + 1) < 0 ||
        EMBER_VEC_RESERVE(p->hdrs, p->hdr_cap, (size_t)k + 1) < 0)
        return -ENOMEM;
    p->chunk_at[k] = p->src ? EMBER_HEAP_HEADER_SIZE + (uint64_t)k * p->h.chunk_size : p->len;
    p->nchunks = k + 1;
    int err = heap_src_read(s, (uint8_t *)&p->hdrs[k], EMBER_HEAP_CHUNK_HEADER, &got, d);
    *have += got;
    if (err || got < EMBER_HEAP_CHUNK_HEADER)
        return err ? err : cut(p, *have, d);
    struct ember_heap_chunk c = p->hdrs[k];
    if (c.magic != 0 && c.magic != EMBER_HEAP_CHUNK_MAGIC)
        return heap_corrupt(p, d, p->chunk_at[k],
                            "chunk magic 0x%08x (expected 0x%08x \"CHNK\", or 0 for an "
                            "unclaimed chunk)",
                            c.magic, EMBER_HEAP_CHUNK_MAGIC);
    if (c.used > room)
        return heap_corrupt(p, d, p->chunk_at[k] + offsetof(struct ember_heap_chunk, used),
                            "%llu bytes used (expected at most %zu)", (unsigned long long)c.used,
                            room);
    /* an unclaimed chunk has no records; a window reads a file's later */
    size_t keep = c.magic && !p->src ? (size_t)c.used : 0;
    if (!p->src) {
        p->len += EMBER_HEAP_CHUNK_HEADER; /* the header's place, kept in hdrs */
        if (EMBER_VEC_RESERVE(p->data, p->cap, p->len + keep) < 0)
            return -ENOMEM;
        err = heap_src_read(s, p->data + p->len, keep, &got, d);
        p->len += got;
        *have += got;
        if (err || got < keep)
            return err ? err : cut(p, *have, d);
    }
    err = heap_src_read(s, NULL, room - keep, &got, d);
    *have += got;
    if (err || got < room - keep)
        return err ? err : cut(p, *have, d);
    return 0;
}

/* The chunks after the header, as many as it says. */
static int read_body(struct heap_proc *p, struct heap_src *s, struct ember_diag *d)
{
    uint64_t have = EMBER_HEAP_HEADER_SIZE;
    p->len = EMBER_HEAP_HEADER_SIZE;
    for (uint32_t k = 0; k < p->h.chunks; k++) {
        int err = read_chunk(p, s, k, &have, d);
        if (err)
            return err;
    }
    if (p->src) {
        p->len = (size_t)have;
    } else {
        p->view = p->data; /* a file held in memory is its own view */
        p->view_len = p->len;
    }
    return 0;
}

static int add_chunk(struct heap_proc *p, uint32_t k, struct ember_diag *d)
{
    const struct ember_heap_chunk *c = heap_chunk(p, k);
    size_t at = p->chunk_at[k];
    if (c->magic == 0)
        return 0; /* unclaimed */
    if (c->stream >= p->h.streams)
        return heap_corrupt(p, d, at + 8, "stream %u (expected one of the header's %u)", c->stream,
                            p->h.streams);
    struct heap_stream *st = &p->streams[c->stream];
    if (EMBER_VEC_RESERVE(st->chunks, st->cap, st->n + 1) < 0)
        return -ENOMEM;
    st->chunks[st->n++] = k;
    return 0;
}

/* Sorts a stream's chunks by place: by insertion, because a thread claims
 * its chunks in order and the file holds them so (nearly sorted input). */
static void sort_places(const struct heap_proc *p, struct heap_stream *st)
{
    for (size_t i = 1; i < st->n; i++) {
        uint32_t k = st->chunks[i], place = heap_chunk(p, k)->index;
        size_t j = i;
        for (; j > 0 && heap_chunk(p, st->chunks[j - 1])->index > place; j--)
            st->chunks[j] = st->chunks[j - 1];
        st->chunks[j] = k;
    }
}

/* Each stream's chunks in stream order; two at one place are corrupt. */
static int order_streams(struct heap_proc *p, struct ember_diag *d)
{
    for (uint32_t s = 0; s < p->nstreams; s++) {
        struct heap_stream *st = &p->streams[s];
        sort_places(p, st);
        for (size_t i = 1; i < st->n; i++)
            if (heap_chunk(p, st->chunks[i])->index == heap_chunk(p, st->chunks[i - 1])->index)
                return heap_corrupt(
                    p, d, p->chunk_at[st->chunks[i]] + offsetof(struct ember_heap_chunk, index),
                    "stream %u has two chunks at place %u (expected one)", s,
                    heap_chunk(p, st->chunks[i])->index);
    }
    return 0;
}

/* v: the view that holds r's body (heap_win). */
static int keep_stack(struct heap_proc *p, const struct heap_proc *v, const struct heap_rec *r,
                      struct ember_diag *d)
{
    if (r->stack > p->len)
        return heap_corrupt(p, d, r->at, "stack id %llu (expected at most one per byte)",
                            (unsigned long long)r->stack);
    if (r->stack >= p->nstacks) {
        size_t want = (size_t)r->stack + 1, cap = p->stack_cap;
        if (EMBER_VEC_RESERVE(p->stack_at, cap, want) < 0 ||
            EMBER_VEC_RESERVE(p->stack_n, p->stack_cap, want) < 0)
            return -ENOMEM;
        memset(p->stack_n + p->nstacks, 0xff, (want - p->nstacks) * sizeof(*p->stack_n));
        p->nstacks = want;
    }
    if (p->stack_n[r->stack] != UINT32_MAX)
        return heap_corrupt(p, d, r->at, "stack %llu defined twice (expected once)",
                            (unsigned long long)r->stack);
    if (EMBER_VEC_RESERVE(p->addrs, p->addr_cap, p->naddrs + r->size) < 0)
        return -ENOMEM;
    const uint8_t *q = heap_byte(v, r->addr), *held = v->view + v->view_len;
    for (uint64_t i = 0; i < r->size; i++)
        ember_protobuf_varint_decode(&q, held, &p->addrs[p->naddrs + i]);
    p->stack_at[r->stack] = p->naddrs;
    p->stack_n[r->stack] = (uint32_t)r->size;
    p->naddrs += r->size;
    return 0;
}

static int keep_record(struct heap_proc *p, const struct heap_proc *v, const struct heap_rec *r,
                       size_t end, struct ember_diag *d)
{
    if (r->tag == EMBER_HEAP_STACK)
        return keep_stack(p, v, r, d);
    if (r->tag == EMBER_HEAP_END) {
        p->ended = true;
        p->end_how = r->end_how;
    }
    if (r->tag != EMBER_HEAP_MODULE)
        return 0;
    if (EMBER_VEC_RESERVE(p->mods, p->mod_cap, p->nmods + 1) < 0)
        return -ENOMEM;
    size_t pos = r->addr;
    int err = heap_module_read(v, &pos, end, &p->mods[p->nmods], d);
    p->nmods += err == 0;
    return err;
}

static int scan(struct heap_proc *p, struct ember_diag *d)
{
    struct heap_win w;
    heap_win_init(&w, p);
    int err = 0;
    for (uint32_t s = 0; s < p->nstreams && !err; s++)
        for (size_t i = 0; i < p->streams[s].n && !err; i++) {
            size_t pos, end;
            struct heap_rec r;
            heap_chunk_span(p, p->streams[s].chunks[i], &pos, &end);
            while ((err = heap_win_next(&w, &pos, end, &r, d)) > 0)
                if ((err = keep_record(p, &w.v, &r, end, d)) < 0)
                    break;
        }
    heap_win_release(&w);
    return err < 0 ? err : 0;
}

int heap_proc_read(struct heap_proc *p, struct heap_src *s, struct ember_diag *d)
{
    const char *input = p->input;
    heap_proc_release(p);
    p->input = input;
    p->base = heap_src_offset(s);
    p->src = heap_src_seekable(s) ? s : NULL;
    size_t got;
    if (EMBER_VEC_RESERVE(p->data, p->cap, EMBER_HEAP_HEADER_SIZE) < 0)
        return -ENOMEM;
    int err = heap_src_read(s, p->data, EMBER_HEAP_HEADER_SIZE, &got, d);
    if (err || got == 0)
        return err;
    uint64_t magic = 0;
    memcpy(&magic, p->data, got < sizeof(magic) ? got : sizeof(magic));
    if (magic != EMBER_HEAP_MAGIC)
        return heap_corrupt(p, d, 0,
                            "expected a process file's header (magic \"EMBHEAP1\", 4096 "
                            "bytes)");
    if (got < EMBER_HEAP_HEADER_SIZE)
        return ember_format_truncated(d, p->input, 0, "a heap recording's process header",
                                      "its 4096 bytes from byte %llu of the input",
                                      (unsigned long long)p->base);
    memcpy(&p->h, p->data, sizeof(p->h));
    if ((err = check_header(p, d)) || (err = read_body(p, s, d)))
        return err;
    p->nchunks = p->h.chunks;
    p->nstreams = p->h.streams;
    if (p->nstreams > p->nchunks + MAX_IDLE_STREAMS)
        return heap_corrupt(p, d, offsetof(struct ember_heap_header, streams),
                            "%u streams in %u chunks (expected at most one per chunk)", p->nstreams,
                            p->nchunks);
    if (p->nstreams && !(p->streams = calloc(p->nstreams, sizeof(*p->streams))))
        return -ENOMEM;
    for (uint32_t k = 0; k < p->nchunks; k++)
        if ((err = add_chunk(p, k, d)))
            return err;
    if ((err = order_streams(p, d)) || (err = scan(p, d)))
        return err;
    return 1;
}
