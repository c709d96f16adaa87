/*
 * heap_merge.c - the allocations and frees of a process's streams in
 * sequence order: one cursor per stream, and a binary min-heap of the
 * cursors keyed by the sequence number of each one's next event.
 *
 * Each thread's stream is in increasing sequence order (heap_format.h),
 * so the smallest next event among the cursors is the next event of the
 * process; the recorder's single counter makes the order total, which is
 * what pairs a block freed by one thread with its reuse by another.
 * Memory grows with the streams, never with the events: a cursor reads
 * its records through a window (heap_win) of 64 KiB.
 * Invariants: a cursor's seq never decreases (a chunk whose first_seq is
 * below its stream's last event, or a delta that wraps, is corrupt); an
 * allocation handed out names a stack the process defines.
 */
#include "read/heap/heap_impl.h"
#include "base/diag.h"

#include <errno.h>
#include <stdlib.h>

/* No allocation is larger (x86-64 and arm64 address 2^48 bytes): sums of
 * sizes stay far from int64's range. */
#define MAX_SIZE (1ull << 48)

struct cursor {
    uint32_t stream;
    size_t ci;        /* the current chunk, in the stream's list */
    size_t pos, end;  /* its records left */
    uint64_t seq;     /* the last sequence number seen */
    uint64_t time_ns; /* the stream's time */
    uint64_t addr;    /* the chunk's last ALLOC or FREE address */
    struct heap_event ev;
    struct heap_win win;
};

struct heap_merge {
    const struct heap_proc *p;
    struct cursor *cur;
    uint32_t *heap; /* cursor indexes, a min-heap by (ev.seq, stream) */
    size_t n;
};

/* Enters chunk ci of c's stream: its start continues the stream. */
static int enter(const struct heap_proc *p, struct cursor *c, struct ember_diag *d)
{
    uint32_t k = p->streams[c->stream].chunks[c->ci];
    const struct ember_heap_chunk *ch = heap_chunk(p, k);
    heap_chunk_span(p, k, &c->pos, &c->end);
    if (ch->first_seq < c->seq)
        return heap_corrupt(p, d, c->pos - EMBER_HEAP_CHUNK_HEADER + 24,
                            "stream %u goes back in sequence: its chunk at place %u starts from "
                            "%llu (expected at least %llu, where its chunk before ends)",
                            c->stream, ch->index, (unsigned long long)ch->first_seq,
                            (unsigned long long)c->seq);
    c->seq = ch->first_seq;
    c->time_ns = ch->time_ns;
    c->addr = 0;
    return 0;
}

static int event(const struct heap_proc *p, struct cursor *c, const struct heap_rec *r,
                 struct ember_diag *d)
{
    if (c->seq + r->seq_delta < c->seq)
        return heap_corrupt(p, d, r->at,
                            "a sequence delta of %llu wraps around (expected "
                            "increasing sequence numbers)",
                            (unsigned long long)r->seq_delta);
    bool alloc = r->tag == EMBER_HEAP_ALLOC;
    if (alloc && r->size > MAX_SIZE)
        return heap_corrupt(p, d, r->at, "an allocation of %llu bytes (expected at most 2^48)",
                            (unsigned long long)r->size);
    if (alloc && (r->stack >= p->nstacks || p->stack_n[r->stack] == UINT32_MAX))
        return heap_corrupt(p, d, r->at,
                            "an allocation from stack %llu, which no STACK record of process %u "
                            "defines",
                            (unsigned long long)r->stack, p->h.pid);
    c->seq += r->seq_delta;
    c->addr = ember_heap_unzigzag(c->addr, r->addr);
    c->ev = (struct heap_event){
        .alloc = alloc,
        .seq = c->seq,
        .size = r->size,
        .stack = r->stack,
        .addr = c->addr,
        .time_ns = c->time_ns,
        .stream = c->stream,
    };
    return 1;
}

/* Moves c to its stream's next event: 1, 0 at the stream's end, or an
 * error. */
static int advance(const struct heap_proc *p, struct cursor *c, struct ember_diag *d)
{
    const struct heap_stream *st = &p->streams[c->stream];
    for (;;) {
        struct heap_rec r;
        int got = heap_win_next(&c->win, &c->pos, c->end, &r, d);
        if (got < 0)
            return got;
        if (got == 0) {
            if (++c->ci >= st->n)
                return 0;
            if ((got = enter(p, c, d)) < 0)
                return got;
            continue;
        }
        if (r.tag == EMBER_HEAP_TIME)
            c->time_ns = r.time_ns;
        else if (r.tag == EMBER_HEAP_ALLOC || r.tag == EMBER_HEAP_FREE)
            return event(p, c, &r, d);
    }
}

static bool before(const struct heap_merge *m, uint32_t a, uint32_t b)
{
    const struct heap_event *x = &m->cur[a].ev, *y = &m->cur[b].ev;
    return x->seq < y->seq || (x->seq == y->seq && x->stream < y->stream);
}

static void sift_down(struct heap_merge *m, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, best = i;
        if (l < m->n && before(m, m->heap[l], m->heap[best]))
            best = l;
        if (l + 1 < m->n && before(m, m->heap[l + 1], m->heap[best]))
            best = l + 1;
        if (best == i)
            return;
        uint32_t t = m->heap[i];
        m->heap[i] = m->heap[best];
        m->heap[best] = t;
        i = best;
    }
}

void heap_merge_free(struct heap_merge *m)
{
    if (!m)
        return;
    for (uint32_t s = 0; m->cur && m->p && s < m->p->nstreams; s++)
        heap_win_release(&m->cur[s].win);
    free(m->cur);
    free(m->heap);
    free(m);
}

int heap_merge_new(struct heap_merge **out, const struct heap_proc *p, struct ember_diag *d)
{
    struct heap_merge *m = calloc(1, sizeof(*m));
    if (!m || !(m->cur = calloc(p->nstreams + 1, sizeof(*m->cur))) ||
        !(m->heap = calloc(p->nstreams + 1, sizeof(*m->heap)))) {
        heap_merge_free(m);
        return -ENOMEM;
    }
    m->p = p;
    int err = 0;
    for (uint32_t s = 0; s < p->nstreams && err >= 0; s++) {
        struct cursor *c = &m->cur[s];
        c->stream = s;
        heap_win_init(&c->win, p);
        if (p->streams[s].n == 0)
            continue;
        if ((err = enter(p, c, d)) == 0 && (err = advance(p, c, d)) > 0)
            m->heap[m->n++] = s;
    }
    for (size_t i = m->n / 2; i-- > 0;)
        sift_down(m, i);
    if (err < 0) {
        heap_merge_free(m);
        return err;
    }
    *out = m;
    return 0;
}

size_t heap_merge_held(const struct heap_merge *m)
{
    size_t n = 0;
    for (uint32_t s = 0; s < m->p->nstreams; s++)
        n += m->cur[s].win.cap;
    return n;
}

int heap_merge_next(struct heap_merge *m, struct heap_event *e, struct ember_diag *d)
{
    if (m->n == 0)
        return 0;
    struct cursor *c = &m->cur[m->heap[0]];
    *e = c->ev;
    int got = advance(m->p, c, d);
    if (got < 0)
        return got;
    if (got == 0)
        m->heap[0] = m->heap[--m->n];
    sift_down(m, 0);
    return 1;
}
