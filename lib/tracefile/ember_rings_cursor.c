/*
 * ember_rings_cursor.c - reading ember's ring files and packet logs, one
 * packet at a time (ember_rings.c tells how a copy is checked against the
 * writer, and how files cut short are read); the native CTF packets they
 * hold (each_packet); and recording a followed ring file into a packet log.
 *
 * Invariants: a packet copy is kept only if the writer cannot have reached
 * its slot meanwhile; every event read, lost or cut is counted in its ring.
 */
#include "ember/trace.h"
#include "tracefile/ember_rings.h"
#include "tracefile/ring_log.h"
#include "base/diag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ember_rings_cursor_init(struct ember_trace *t, struct ember_cursor *c)
{
    struct cursor *k = calloc(1, sizeof(*k));
    if (!k || !(k->buf = malloc(be(t)->h.packet_size))) {
        free(k);
        return -ENOMEM;
    }
    c->state = k;
    return 0;
}

void ember_rings_cursor_free(struct ember_trace *t, struct ember_cursor *c)
{
    (void)t;
    struct cursor *k = c->state;
    if (k)
        free(k->buf);
    free(k);
    c->state = NULL;
}

/* ---- the cursor: one packet at a time ------------------------------------ */

/* Content size of a closed packet, 0 if implausible. */
static size_t closed_size(const struct backend *b, const struct ember_packet_header *ph)
{
    uint64_t bytes = ph->ctx.content_size / 8;
    if (ph->ctx.content_size % 64 || bytes < EMBER_PACKET_HEADER || bytes > b->h.packet_size)
        return 0;
    return (size_t)bytes;
}

static int corrupt_event(struct ember_trace *t, unsigned ring, uint64_t packet)
{
    return ember_source_corrupt(t, "a corrupt event in ring %u (thread %u), packet %llu", ring,
                                t->rings[ring].tid, (unsigned long long)packet);
}

/* Packet seq of a ring is cut (whole or in part). */
static void note_cut(struct ember_trace_ring *info, uint64_t seq)
{
    if (!info->cut || seq < info->cut_first)
        info->cut_first = seq;
    if (!info->cut || seq > info->cut_last)
        info->cut_last = seq;
    info->cut++;
}

/* Drain mode: the writer may reuse the slots of packets read wholly. */
static void publish(const struct backend *b, unsigned ring, uint64_t pos)
{
    if (b->drain)
        __atomic_store_n(&live_desc(b, ring)->tail, pos - pos % b->h.packet_size, __ATOMIC_RELEASE);
}

/* The head now: what the writer may have overwritten since a copy. */
static uint64_t head_now(struct ember_trace *t, unsigned ring)
{
    struct backend *b = be(t);
    if (b->map)
        return __atomic_load_n(&live_desc(b, ring)->head, __ATOMIC_ACQUIRE);
    struct ember_ring_desc dsc;
    if (ember_rings_read_desc(t, ring, &dsc) < 0)
        return UINT64_MAX; /* unreadable: treat the copy as overwritten */
    return dsc.head;
}

/* Accounts for a packet read for the first time: the events between the
 * last one read and its first were lost (or cut); it is cut itself when
 * the file ends in it (have bytes of it there) or its log record says so. */
static void first_visit(struct ember_trace *t, unsigned ring, struct cursor *k,
                        const struct ember_packet_header *ph, uint64_t number, size_t have,
                        bool cut_record)
{
    struct ember_trace_ring *info = &t->rings[ring];
    if (ph->ctx.event_seq_begin > k->seq) {
        uint64_t gap = ph->ctx.event_seq_begin - k->seq;
        /* after a packet read, they were in the packets cut; before,
         * overwritten events may be among them: lost, as they are */
        if (k->cut_gap && info->packets)
            info->cut_events += gap;
        else
            info->lost += gap;
    }
    k->seq = ph->ctx.event_seq_begin;
    k->off = EMBER_PACKET_HEADER;
    k->cut_gap = k->cut = cut_record || k->size > have;
    if (k->cut_gap) {
        note_cut(info, number);
        k->size = (size_t)ember_ring_whole_events(k->buf, have);
    }
    info->packets++;
}

/* Moves k to packet index to, never back nor to s again (a damaged head
 * cannot send a cursor around in circles); false when no position can
 * hold it: the ring ends there. */
static bool move_to(struct cursor *k, uint64_t s, uint64_t to, uint64_t P)
{
    if (to <= s)
        to = s + 1;
    if (to > UINT64_MAX / P - 1)
        return false;
    k->pos = to * P;
    return true;
}

/* A ring file's next packet (or the rest of the one being written): 1, 0
 * at the ring's end as last read, < 0 on error. With whole, a packet the
 * writer has not finished is left for later (recording). */
static int next_ring_packet(struct ember_trace *t, unsigned ring, struct cursor *k, bool whole)
{
    struct backend *b = be(t);
    uint64_t P = b->h.packet_size, N = b->h.packets_per_ring, H = b->rings[ring].head;
    for (;;) {
        if (k->pos >= H)
            return 0;
        uint64_t s = k->pos / P, last = (H - 1) / P;
        if (last + 2 > s + N) {
            /* the oldest slot: a live writer's next packet goes there */
            if (!move_to(k, s, last + 2 - N, P))
                return 0;
            continue;
        }
        if (whole && s == last)
            return 0;
        uint64_t slot = b->h.data_offset + ((uint64_t)ring * N + s % N) * P;
        size_t size = s == last ? (size_t)(H - s * P) : (size_t)P;
        size_t have = (size_t)ember_ring_in_file(slot, size, t->size);
        if (have < EMBER_PACKET_HEADER) {
            note_cut(&t->rings[ring], s);
            k->cut_gap = true;
            if (!move_to(k, s, s + 1, P))
                return 0;
            continue;
        }
        if (ember_read_at(t->fd, k->buf, have, slot) < 0)
            return ember_diag_set(&t->err, -EIO, t->name, 0, "cannot read: %s", strerror(EIO));
        /* as a seqlock reader: the copy is done before head is read again */
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        uint64_t now = head_now(t, ring);
        now = now ? (now - 1) / P : 0;
        struct ember_packet_header ph;
        memcpy(&ph, k->buf, sizeof(ph));
        if (now + 2 > s + N) { /* overwritten while copied */
            if (!move_to(k, s, now + 2 - N, P))
                return 0;
            continue;
        }
        if (ph.magic != EMBER_CTF_MAGIC || ph.ctx.packet_seq_num != s) {
            if (!move_to(k, s, s + 1, P)) /* never completed */
                return 0;
            continue;
        }
        k->closed = s != last;
        k->size = k->closed ? closed_size(b, &ph) : size;
        if (k->size < EMBER_PACKET_HEADER) {
            if (!move_to(k, s, s + 1, P))
                return 0;
            continue;
        }
        k->s = s;
        uint64_t resume = k->pos - s * P;
        if (resume < EMBER_PACKET_HEADER) {
            first_visit(t, ring, k, &ph, s, have, false);
        } else {
            k->off = (size_t)resume; /* the rest of a packet read before */
            k->cut = k->size > have;
            if (k->cut)
                k->size = (size_t)ember_ring_whole_events(k->buf, have);
        }
        publish(b, ring, k->pos);
        return 1;
    }
}

/* A log's next packet: 1, 0 at the end, < 0 on error. */
static int next_log_packet(struct ember_trace *t, unsigned ring, struct cursor *k)
{
    struct backend *b = be(t);
    struct ring *r = &b->rings[ring];
    for (;;) {
        if (k->pos >= r->nrefs)
            return 0;
        const struct packet_ref *ref = &r->refs[k->pos];
        uint64_t index = k->pos++;
        if (ref->size < EMBER_PACKET_HEADER) {
            /* a log's packet is numbered by its header: the next one */
            note_cut(&t->rings[ring], index ? k->pseq + 1 : 0);
            k->cut_gap = true;
            continue;
        }
        if (ember_read_at(t->fd, k->buf, ref->size, ref->off) < 0)
            return ember_diag_set(&t->err, -EIO, t->name, 0, "cannot read: %s", strerror(EIO));
        struct ember_packet_header ph;
        memcpy(&ph, k->buf, sizeof(ph));
        if (ph.magic != EMBER_CTF_MAGIC || ph.ctx.packet_size != b->h.packet_size * 8 ||
            (index > 0 && ph.ctx.packet_seq_num <= k->pseq))
            return ember_source_corrupt(t, "a damaged packet in ring %u (thread %u), packet %llu",
                                        ring, t->rings[ring].tid, (unsigned long long)index);
        k->s = index;
        k->size = ref->size;
        first_visit(t, ring, k, &ph, ph.ctx.packet_seq_num, ref->size, ref->cut);
        k->pseq = ph.ctx.packet_seq_num;
        return 1;
    }
}

static int next_packet(struct ember_trace *t, unsigned ring, struct cursor *k, bool whole)
{
    return be(t)->log ? next_log_packet(t, ring, k) : next_ring_packet(t, ring, k, whole);
}

/* The end of the current packet: a ring file's position moves on. */
static void packet_done(struct ember_trace *t, unsigned ring, struct cursor *k)
{
    struct backend *b = be(t);
    if (b->log)
        return;
    uint64_t P = b->h.packet_size;
    k->pos = k->closed || k->cut ? (k->s + 1) * P : k->s * P + k->off;
    publish(b, ring, k->pos);
}

/* Decodes the event at the cursor: its size, 0 if corrupt. */
static size_t decode(struct ember_trace *t, unsigned ring, struct cursor *k,
                     struct ember_trace_event *e)
{
    struct backend *b = be(t);
    size_t sz = ember_event_decode(&b->sites, k->buf + k->off, k->size - k->off, e);
    if (!sz)
        return 0;
    e->ring = ring;
    e->tid = t->rings[ring].tid;
    e->seq = k->seq++;
    e->ns = ember_ticks_to_ns(&b->scale, (int64_t)(e->ticks - b->h.base_ticks));
    k->off += sz;
    t->rings[ring].events++;
    return sz;
}

int ember_rings_cursor_next(struct ember_trace *t, struct ember_cursor *c)
{
    struct cursor *k = c->state;
    while (k->off >= k->size) {
        if (k->size)
            packet_done(t, c->ring, k);
        k->size = k->off = 0;
        uint64_t lost = t->rings[c->ring].lost;
        int got = next_packet(t, c->ring, k, false);
        c->lost_events += t->rings[c->ring].lost - lost;
        if (got <= 0)
            return got;
    }
    if (!decode(t, c->ring, k, &c->e))
        return corrupt_event(t, c->ring, k->s);
    c->key = c->e.ticks;
    if (k->off >= k->size) { /* the packet read wholly: its slot is free */
        packet_done(t, c->ring, k);
        k->size = k->off = 0;
    }
    return 1;
}

void ember_rings_pass_begin(struct ember_trace *t)
{
    for (unsigned i = 0; i < t->nrings; i++) {
        struct ember_trace_ring *r = &t->rings[i];
        r->events = r->packets = r->lost = 0;
        r->cut = r->cut_events = 0;
    }
}

/* Losses after the last packet read: dropped events, and the packets a
 * log lacks. */
void ember_rings_pass_end(struct ember_trace *t)
{
    struct backend *b = be(t);
    for (unsigned i = 0; i < t->nrings; i++) {
        struct ring *r = &b->rings[i];
        t->rings[i].lost += r->dropped;
        if (r->missing) {
            note_cut(&t->rings[i], r->missing_first);
            note_cut(&t->rings[i], r->missing_first + r->missing - 1);
            t->rings[i].cut += r->missing - 2;
        }
    }
}

bool ember_rings_writer_alive(const struct ember_trace *t)
{
    return ember_source_pid_alive(t->pid);
}

/* Walks the events of the cursor's packet (checked and counted); the
 * last one's time, or 0. */
/* Where CTF readers see an event end: after its last field, a string's
 * NUL included, before the padding that aligns the next one (babeltrace2
 * reads another event wherever the content goes on, padding or not). */
static size_t event_end(const struct cursor *k, const struct ember_trace_event *e)
{
    unsigned n = e->site->nfields;
    if (n && e->site->field_types[n - 1] == EMBER_FT_STR)
        return (size_t)(e->v[n - 1].s - k->buf) + strlen(e->v[n - 1].s) + 1;
    return k->off;
}

/* Decodes the packet's events: the last one's time, and where its
 * content ends for a CTF reader. */
static int walk_packet(struct ember_trace *t, unsigned ring, struct cursor *k, uint64_t *last,
                       size_t *end)
{
    struct ember_trace_event e;
    *last = 0;
    *end = k->size;
    while (k->off < k->size) {
        if (!decode(t, ring, k, &e))
            return corrupt_event(t, ring, k->s);
        *last = e.ticks;
        *end = event_end(k, &e);
    }
    return 0;
}

int ember_rings_each_packet(struct ember_trace *t, ember_trace_packet_fn fn, void *ctx)
{
    struct backend *b = be(t);
    size_t P = b->h.packet_size;
    ember_rings_pass_begin(t);
    struct ember_cursor c = {0};
    int err = 0;
    for (unsigned i = 0; i < t->nrings && !err; i++) {
        if ((err = ember_rings_cursor_init(t, &c)) != 0)
            break;
        struct cursor *k = c.state;
        while ((err = next_packet(t, i, k, false)) > 0) {
            uint64_t last;
            size_t end;
            if ((err = walk_packet(t, i, k, &last, &end)) != 0)
                break;
            struct ember_packet_header ph;
            memcpy(&ph, k->buf, sizeof(ph));
            if (ph.ctx.timestamp_end < ph.ctx.timestamp_begin || !ph.ctx.content_size)
                ph.ctx.timestamp_end = last ? last : ph.ctx.timestamp_begin;
            ph.ctx.content_size = (uint64_t)end * 8;
            /* CTF wants the running total of events lost so far */
            ph.ctx.events_discarded = t->rings[i].lost + ph.ctx.events_discarded;
            memcpy(k->buf, &ph, sizeof(ph));
            memset(k->buf + k->size, 0, P - k->size);
            if ((err = fn(ctx, i, k->buf, P)) != 0)
                break;
            packet_done(t, i, k);
        }
        ember_rings_cursor_free(t, &c);
    }
    ember_rings_pass_end(t);
    return err;
}

/* ---- recording: the packets, copied into a packet log --------------------- */

struct recorder {
    struct ember_trace_recorder r;
    struct ember_trace *t;
    struct ember_log *log;
    struct ember_cursor *cs;
    unsigned ncs;
};

/* Copies ring i's packets: how many, or < 0. */
static int record_ring(struct recorder *rec, unsigned i, bool final)
{
    struct ember_trace *t = rec->t;
    struct cursor *k = rec->cs[i].state;
    int got, n = 0;
    while ((got = next_ring_packet(t, i, k, !final)) > 0) {
        uint64_t last;
        size_t end;
        int err = walk_packet(t, i, k, &last, &end);
        if (err)
            return err;
        struct ember_packet_header ph;
        memcpy(&ph, k->buf, sizeof(ph));
        ph.ctx.content_size = (uint64_t)k->off * 8; /* events_discarded stays the writer's */
        memcpy(k->buf, &ph, sizeof(ph));
        if ((err = ember_log_packet(rec->log, i, k->buf, k->off)) != 0)
            return err;
        packet_done(t, i, k);
        n += n < INT32_MAX;
    }
    return got < 0 ? got : n;
}

static int record_poll(struct ember_trace_recorder *r, bool final)
{
    struct recorder *rec = (struct recorder *)r;
    struct ember_trace *t = rec->t;
    ember_diag_clear(&t->err);
    int err = ember_rings_refresh(t);
    if (!err)
        err = ember_source_grow_cursors(t, &rec->cs, &rec->ncs);
    int n = 0;
    for (unsigned i = 0; i < rec->ncs && !err; i++) {
        int got = record_ring(rec, i, final);
        err = got < 0 ? got : 0;
        n = got > 0 && n < INT32_MAX - got ? n + got : n;
    }
    return err ? err : n;
}

static int record_finish(struct ember_trace_recorder *r, int fd)
{
    (void)fd; /* the log has been written to its own */
    struct recorder *rec = (struct recorder *)r;
    struct backend *b = be(rec->t);
    return ember_log_finish(rec->log, b->map,
                            __atomic_load_n(&b->live->strings_used, __ATOMIC_ACQUIRE), b->nrings);
}

static void record_free(struct ember_trace_recorder *r)
{
    struct recorder *rec = (struct recorder *)r;
    ember_source_free_cursors(rec->t, rec->cs, rec->ncs);
    ember_log_free(rec->log);
    free(rec);
}

int ember_rings_recorder_new(struct ember_trace_recorder **out, struct ember_trace *t, int fd,
                             int scratch)
{
    (void)scratch; /* packets are written as they come */
    struct recorder *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    rec->r = (struct ember_trace_recorder){record_poll, record_finish, record_free};
    rec->t = t;
    int err = ember_log_new(&rec->log, &be(t)->h, fd);
    if (err) {
        free(rec);
        return err;
    }
    *out = &rec->r;
    return 0;
}
