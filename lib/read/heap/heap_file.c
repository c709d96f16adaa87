/*
 * heap_file.c - a heap recording's process files (wire/heap_format.h):
 * read one at a time from the input, whole, then indexed: its claimed
 * chunks by stream, its stacks by id and its modules, in one pass over
 * every record (stacks are collected first because another thread's
 * record may name a stack before the reader reaches its STACK).
 *
 * A regular file (or memory) is read where needed: the headers in order,
 * a chunk's records in windows of 64 KiB (struct heap_win) read at their
 * offset, so memory grows with the streams, stacks, modules and live
 * blocks, never with the events; offsets are the file's. An input that
 * can only be read front to back (a pipe, gzip) has a process's records
 * held in memory while it is read: its header, and each chunk's header and
 * used bytes (the unused rest of a chunk is read past, never kept), so
 * memory grows with the largest process's records; offsets are into those
 * kept bytes, and errors translate them into the input's. A file shorter than its header's chunk
 * count says is a truncated input (the recorder pads a cut file to its full size). Invariants: a
 * record is decoded only from bytes below its chunk's `used`; every varint is bounded by those
 * bytes; each error names the input, the process, the chunk and the byte offset in the input.
 */
#include "read/heap/heap_impl.h"
#include "read/read_impl.h"
#include "wire/protobuf.h"
#include "base/chunk.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* WINDOW: the bytes a window reads at once. MAX_RECORD: the most bytes a
 * record other than MODULE can take (a STACK of the most frames, each
 * varint 10 bytes); a MODULE is read whole, up to its chunk's end. */
enum { READ_PIECE = 1 << 20, WINDOW = 64 << 10, MAX_RECORD = 1 + 20 + 10 * EMBER_HEAP_MAX_FRAMES };

struct heap_src {
    struct ember_input *in;
    struct ember_chunk c;
    size_t pos; /* bytes of c consumed */
    bool eof;
    bool seek;    /* read by offset (heap_src_seekable) */
    uint64_t off; /* bytes of the input consumed */
};

int heap_src_new(struct heap_src **s, struct ember_input *in)
{
    *s = calloc(1, sizeof(**s));
    if (!*s)
        return -ENOMEM;
    (*s)->in = in;
    (*s)->seek = ember_input_seekable(in);
    return 0;
}

void heap_src_free(struct heap_src *s)
{
    if (s)
        ember_chunk_release(&s->c);
    free(s);
}

static int fill(struct heap_src *s, struct ember_diag *d)
{
    if (s->pos < s->c.len || s->eof)
        return 0;
    int r = ember_input_read_chunk_upto(s->in, &s->c, EMBER_CUT_BYTES, READ_PIECE, d);
    if (r < 0)
        return r;
    s->pos = 0;
    if (r == 0 || s->c.len == 0) {
        s->eof = true;
        s->c.len = 0;
    }
    return 0;
}

bool heap_src_seekable(const struct heap_src *s)
{
    return s->seek;
}

int heap_src_pread(struct heap_src *s, uint8_t *dst, size_t n, uint64_t off, size_t *got,
                   struct ember_diag *d)
{
    return ember_input_pread(s->in, dst, n, off, got, d);
}

int heap_src_more(struct heap_src *s, bool *more, struct ember_diag *d)
{
    if (s->seek) {
        *more = (uint64_t)ember_input_size(s->in) > s->off;
        return 0;
    }
    int err = fill(s, d);
    *more = !s->eof;
    return err;
}

uint64_t heap_src_offset(const struct heap_src *s)
{
    return s->off;
}

int heap_src_read(struct heap_src *s, uint8_t *dst, size_t n, size_t *got, struct ember_diag *d)
{
    *got = 0;
    if (s->seek) {
        uint64_t size = (uint64_t)ember_input_size(s->in);
        size_t left = size > s->off ? (size_t)(size - s->off) : 0;
        int err = dst ? heap_src_pread(s, dst, n, s->off, got, d) : 0;
        if (!dst)
            *got = left < n ? left : n;
        s->off += *got;
        return err;
    }
    while (*got < n) {
        int err = fill(s, d);
        if (err)
            return err;
        if (s->eof)
            return 0;
        size_t k = s->c.len - s->pos < n - *got ? s->c.len - s->pos : n - *got;
        if (dst)
            memcpy(dst + *got, s->c.data + s->pos, k);
        s->pos += k;
        s->off += k;
        *got += k;
    }
    return 0;
}

/* The chunk whose bytes in data hold offset at (past the header). */
static uint32_t chunk_holding(const struct heap_proc *p, size_t at)
{
    uint32_t lo = 0, hi = p->nchunks - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (p->chunk_at[mid] <= at)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int heap_corrupt(const struct heap_proc *p, struct ember_diag *d, size_t at, const char *fmt, ...)
{
    char what[300], where[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    int n = p->h.magic == EMBER_HEAP_MAGIC
                ? snprintf(where, sizeof(where), "process %u, ", p->h.pid)
                : 0;
    uint64_t file_at = at;
    if (at < EMBER_HEAP_HEADER_SIZE || p->nchunks == 0) {
        snprintf(where + n, sizeof(where) - (size_t)n, "the header");
    } else {
        uint32_t k = chunk_holding(p, at);
        file_at = EMBER_HEAP_HEADER_SIZE + (uint64_t)k * p->h.chunk_size + (at - p->chunk_at[k]);
        snprintf(where + n, sizeof(where) - (size_t)n, "chunk %u", k);
    }
    return ember_diag_set(d, -EINVAL, p->input, 0,
                          "corrupt heap recording: %s, byte %llu of the input: %s", where,
                          (unsigned long long)(p->base + file_at), what);
}

void heap_proc_release(struct heap_proc *p)
{
    for (uint32_t i = 0; p->streams && i < p->nstreams; i++)
        free(p->streams[i].chunks);
    for (size_t i = 0; i < p->nmods; i++) {
        free(p->mods[i].segs);
        free(p->mods[i].path);
    }
    free(p->streams);
    free(p->chunk_at);
    free(p->hdrs);
    free(p->data);
    free(p->stack_at);
    free(p->stack_n);
    free(p->addrs);
    free(p->mods);
    memset(p, 0, sizeof(*p));
}

const struct ember_heap_chunk *heap_chunk(const struct heap_proc *p, uint32_t k)
{
    return &p->hdrs[k];
}

void heap_chunk_span(const struct heap_proc *p, uint32_t k, size_t *begin, size_t *end)
{
    *begin = p->chunk_at[k] + EMBER_HEAP_CHUNK_HEADER;
    *end = *begin + heap_chunk(p, k)->used;
}

/* ---- windows --------------------------------------------------------------- */

void heap_win_init(struct heap_win *w, const struct heap_proc *p)
{
    *w = (struct heap_win){.v = *p};
}

void heap_win_release(struct heap_win *w)
{
    free(w->buf);
    w->buf = NULL;
    w->cap = 0;
}

/* The window over [pos, want) at least (want <= the chunk's end), read
 * from pos: WINDOW bytes, or more for a larger record, never past end. */
static int win_hold(struct heap_win *w, size_t pos, size_t want, size_t end, struct ember_diag *d)
{
    struct heap_proc *v = &w->v;
    if (!v->src || (v->view && pos >= v->view_off && want <= v->view_off + v->view_len))
        return 0;
    size_t n = want - pos > WINDOW ? want - pos : WINDOW, got;
    n = n < end - pos ? n : end - pos;
    if (n > w->cap) {
        uint8_t *b = realloc(w->buf, n);
        if (!b)
            return -ENOMEM;
        w->buf = b;
        w->cap = n;
    }
    int err = heap_src_pread(v->src, w->buf, n, v->base + pos, &got, d);
    if (err)
        return err;
    if (got < n)
        return ember_format_truncated(d, v->input, 0, "a heap recording's process file",
                                      "%zu bytes of records at byte %llu of the input; it has %zu",
                                      n, (unsigned long long)(v->base + pos), got);
    v->view = w->buf;
    v->view_off = pos;
    v->view_len = n;
    return 0;
}

int heap_win_next(struct heap_win *w, size_t *pos, size_t end, struct heap_rec *r,
                  struct ember_diag *d)
{
    if (*pos >= end)
        return 0;
    size_t want = end - *pos > MAX_RECORD ? *pos + MAX_RECORD : end;
    int err = win_hold(w, *pos, want, end, d);
    if (!err && *heap_byte(&w->v, *pos) == EMBER_HEAP_MODULE)
        err = win_hold(w, *pos, end, end, d);
    return err ? err : heap_record_next(&w->v, pos, end, r, d);
}

/* ---- records -------------------------------------------------------------- */

static int varint(const struct heap_proc *p, size_t *pos, size_t end, uint64_t *v, const char *what,
                  struct ember_diag *d)
{
    const uint8_t *q = heap_byte(p, *pos);
    size_t held = p->view_off + p->view_len; /* a window holds the record */
    switch (ember_protobuf_varint_decode(&q, heap_byte(p, end < held ? end : held), v)) {
    case EMBER_PROTOBUF_OK:
        *pos = p->view_off + (size_t)(q - p->view);
        return 0;
    case EMBER_PROTOBUF_SHORT:
        return heap_corrupt(p, d, *pos,
                            "the varint of %s runs past the chunk's used bytes (expected it "
                            "to end before byte %llu)",
                            what, (unsigned long long)(p->base + end));
    default:
        return heap_corrupt(p, d, *pos, "the varint of %s is longer than 10 bytes", what);
    }
}

int heap_module_read(const struct heap_proc *p, size_t *pos, size_t end, struct heap_module *m,
                     struct ember_diag *d)
{
    struct heap_module tmp = {0};
    uint64_t nsegs, a, b;
    int err = varint(p, pos, end, &tmp.bias, "a module's bias", d);
    if (err)
        return err;
    if (*pos >= end || end - *pos - 1 < *heap_byte(p, *pos))
        return heap_corrupt(p, d, *pos, "a module's build-id runs past the chunk's used bytes");
    tmp.build_id_len = *heap_byte(p, (*pos)++);
    memcpy(tmp.build_id, heap_byte(p, *pos), tmp.build_id_len);
    *pos += tmp.build_id_len;
    if ((err = varint(p, pos, end, &nsegs, "a module's segment count", d)))
        return err;
    if (nsegs == 0 || nsegs > (end - *pos) / 2)
        return heap_corrupt(p, d, *pos, "a module of %llu segments (expected 1 to %zu)",
                            (unsigned long long)nsegs, (end - *pos) / 2);
    if (m && !(tmp.segs = malloc(2 * nsegs * sizeof(uint64_t))))
        return -ENOMEM;
    tmp.start = UINT64_MAX;
    for (uint64_t i = 0; i < nsegs; i++) {
        if ((err = varint(p, pos, end, &a, "a segment's start", d)) ||
            (err = varint(p, pos, end, &b, "a segment's end", d))) {
            free(tmp.segs);
            return err;
        }
        if (tmp.segs) {
            tmp.segs[2 * i] = a;
            tmp.segs[2 * i + 1] = b;
        }
        tmp.start = a < tmp.start ? a : tmp.start;
        tmp.end = b > tmp.end ? b : tmp.end;
    }
    tmp.nsegs = nsegs;
    const uint8_t *nul = memchr(heap_byte(p, *pos), 0, end - *pos);
    if (!nul) {
        free(tmp.segs);
        return heap_corrupt(p, d, *pos, "a module's path has no NUL before the chunk's end");
    }
    if (m && !(tmp.path = strdup((const char *)heap_byte(p, *pos)))) {
        free(tmp.segs);
        return -ENOMEM;
    }
    *pos = p->view_off + (size_t)(nul - p->view) + 1;
    if (m)
        *m = tmp;
    return 0;
}

/* A STACK record's addresses: checked and skipped (the scan reads them). */
static int stack_body(const struct heap_proc *p, size_t *pos, size_t end, struct heap_rec *r,
                      struct ember_diag *d)
{
    int err = varint(p, pos, end, &r->stack, "a stack's id", d);
    if (!err)
        err = varint(p, pos, end, &r->size, "a stack's frame count", d);
    if (err)
        return err;
    if (r->stack == 0 || r->size > EMBER_HEAP_MAX_FRAMES)
        return heap_corrupt(p, d, r->at,
                            "a stack of id %llu and %llu frames (expected an id "
                            "from 1, at most %d frames)",
                            (unsigned long long)r->stack, (unsigned long long)r->size,
                            EMBER_HEAP_MAX_FRAMES);
    r->addr = *pos;
    uint64_t a;
    for (uint64_t i = 0; i < r->size && !err; i++)
        err = varint(p, pos, end, &a, "a return address", d);
    return err;
}

int heap_record_next(const struct heap_proc *p, size_t *pos, size_t end, struct heap_rec *r,
                     struct ember_diag *d)
{
    if (*pos >= end)
        return 0;
    r->at = *pos;
    r->tag = *heap_byte(p, (*pos)++);
    int err = 0;
    switch (r->tag) {
    case EMBER_HEAP_PAD:
        *pos = end;
        return 0;
    case EMBER_HEAP_ALLOC:
        if (!(err = varint(p, pos, end, &r->seq_delta, "an allocation's sequence", d)) &&
            !(err = varint(p, pos, end, &r->size, "an allocation's size", d)) &&
            !(err = varint(p, pos, end, &r->stack, "an allocation's stack", d)))
            err = varint(p, pos, end, &r->addr, "an allocation's address", d);
        break;
    case EMBER_HEAP_FREE:
        if (!(err = varint(p, pos, end, &r->seq_delta, "a free's sequence", d)))
            err = varint(p, pos, end, &r->addr, "a free's address", d);
        break;
    case EMBER_HEAP_STACK:
        err = stack_body(p, pos, end, r, d);
        break;
    case EMBER_HEAP_MODULE:
        r->addr = *pos;
        err = heap_module_read(p, pos, end, NULL, d);
        break;
    case EMBER_HEAP_TIME:
        err = varint(p, pos, end, &r->time_ns, "a time", d);
        break;
    case EMBER_HEAP_END:
        if (!(err = varint(p, pos, end, &r->end_how, "the end's status", d)))
            err = varint(p, pos, end, &r->end_seq, "the end's sequence", d);
        break;
    default:
        return heap_corrupt(p, d, r->at, "unknown record tag %u (expected 0 to 6)", r->tag);
    }
    return err ? err : 1;
}
