/*
 * ember_rings.c - the backend for ember's own trace files (lib/wire/
 * ring_format.h): ring files, read whole or followed while their program writes
 * them, and the packet logs `ember trace record` makes of them.
 *
 * One cursor per ring reads packets for both: it copies the packet at its
 * position, reloads the ring's head, and keeps the copy only if the writer
 * cannot have reached the packet's slot meanwhile (a seqlock reader's
 * check); events lost to overwriting are counted from the packets' event
 * numbers. A pass reads each ring up to the head it had when the file was
 * opened; a follower up to the head it has at each poll, coming back to
 * the packet still being written where it stopped. The site table is read
 * after the heads: every event before a head has its site in the table by
 * then, so an event that does not decode is corrupt, whatever the packet.
 *
 * A file cut short is read up to the cut: a packet the file ends in gives
 * its whole events, one it ends before none, and each is counted as cut in
 * its ring, with the events the next packet read says it held. Packet logs
 * also know, from each ring's head, how many packets should follow the
 * last one they hold. Data is read with pread, never mapped: a file that
 * shrinks under the reader cannot fault it. A follower maps the header and
 * tables only (the heads' atomics, and in drain mode its own place, tail).
 */
#include "ember/trace.h"
#include "tracefile/ring_decode.h"
#include "wire/ring_format.h"
#include "tracefile/ring_log.h"
#include "tracefile/source.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

static struct backend *be(const struct ember_trace *t)
{
    return t->be;
}

static bool probe(const unsigned char *head, size_t n, const char *path)
{
    (void)path;
    uint64_t magic;
    if (n < 8)
        return false;
    memcpy(&magic, head, 8);
    return magic == EMBER_RING_MAGIC;
}

static int ready(int fd, const char *path)
{
    (void)path;
    struct stat st;
    uint64_t magic = 0;
    return fstat(fd, &st) == 0 && st.st_size >= EMBER_RING_HEADER_SIZE &&
                   pread(fd, &magic, 8, 0) == 8 && magic == EMBER_RING_MAGIC
               ? 1
               : 0;
}

static int bad(struct ember_trace *t, struct ember_diag *d, const char *what)
{
    return ember_diag_set(d, -EINVAL, t->name, 0, "not a valid ember trace: %s", what);
}

static struct ember_ring_desc *live_desc(const struct backend *b, unsigned i)
{
    return (struct ember_ring_desc *)(void *)(b->map + b->h.rings_offset +
                                              (size_t)i * EMBER_RING_DESC_SIZE);
}

/* Ring i's descriptor: in place when following, else read from the file. */
static int read_desc(struct ember_trace *t, unsigned i, struct ember_ring_desc *dsc)
{
    struct backend *b = be(t);
    if (b->map) {
        struct ember_ring_desc *d = live_desc(b, i);
        memcpy(dsc, d, sizeof(*dsc));
        dsc->head = __atomic_load_n(&d->head, __ATOMIC_ACQUIRE);
        dsc->dropped = __atomic_load_n(&d->dropped, __ATOMIC_ACQUIRE);
        return 0;
    }
    memset(dsc, 0, sizeof(*dsc));
    int err = ember_read_at(t->fd, dsc, sizeof(*dsc),
                            b->h.rings_offset + (uint64_t)i * EMBER_RING_DESC_SIZE);
    /* no writer drops 2^62 events: such a count is a damaged descriptor's,
     * not a number to print (the file's damage is told where it is cut) */
    if (dsc->dropped >> 62)
        dsc->dropped = 0;
    return err;
}

static void take_desc(struct ember_trace *t, unsigned i, const struct ember_ring_desc *dsc)
{
    t->rings[i].tid = dsc->tid;
    memcpy(t->rings[i].name, dsc->name, sizeof(dsc->name));
    t->rings[i].name[sizeof(dsc->name) - 1] = '\0';
}

/* Which packets a ring of a log lacks at its end: its head (the stream
 * position of its last event) is in packet (head - 1) / P; the log should
 * end with that one. */
static int log_missing_tail(struct ember_trace *t, struct ring *r, uint64_t head)
{
    struct backend *b = be(t);
    uint64_t want = head ? (head - 1) / b->h.packet_size : 0;
    uint64_t next = 0; /* the packet after the last one in the log */
    size_t n = r->nrefs;
    /* a record cut before the end of its packet's header is the packet
     * after the one before it (counted cut as it is read) */
    bool headless = n && r->refs[n - 1].size < EMBER_PACKET_HEADER;
    if (n > headless) {
        struct ember_packet_header ph;
        if (ember_read_at(t->fd, &ph, sizeof(ph), r->refs[n - 1 - headless].off) < 0)
            return -EIO;
        next = ph.ctx.packet_seq_num + 1;
    }
    next += headless;
    if (head && next <= want) {
        r->missing = want + 1 - next;
        r->missing_first = next;
        t->cut_short = true;
    }
    return 0;
}

/* The packets of a log, indexed. A record the file ends in is a cut
 * packet, kept with the bytes it has. */
static int read_log_index(struct ember_trace *t, struct ember_diag *d)
{
    struct backend *b = be(t);
    uint64_t off, size = t->size;
    for (off = b->h.data_offset; off + 8 <= size;) {
        uint32_t hdr[2];
        if (ember_read_at(t->fd, hdr, 8, off) < 0)
            return bad(t, d, "unreadable packet log");
        if (hdr[0] >= b->nrings || hdr[1] < EMBER_PACKET_HEADER || hdr[1] % 8 ||
            hdr[1] > b->h.packet_size)
            return ember_diag_set(d, -EINVAL, t->name, 0,
                                  "not a valid ember trace: corrupt packet log at byte %llu",
                                  (unsigned long long)off);
        struct ring *r = &b->rings[hdr[0]];
        if (EMBER_VEC_RESERVE(r->refs, r->rcap, r->nrefs + 1) < 0)
            return -ENOMEM;
        bool cut = hdr[1] > size - off - 8;
        uint32_t have = cut ? (uint32_t)(size - off - 8) : hdr[1];
        r->refs[r->nrefs++] = (struct packet_ref){off + 8, have, cut};
        off += 8 + (uint64_t)hdr[1];
    }
    if (off != size)
        t->cut_short = true; /* a record, or its header, goes past the end */
    for (unsigned i = 0; i < b->nrings; i++) {
        struct ember_ring_desc dsc;
        int err = read_desc(t, i, &dsc);
        if (!err) {
            take_desc(t, i, &dsc);
            b->rings[i].dropped = dsc.dropped;
            err = log_missing_tail(t, &b->rings[i], dsc.head);
        }
        if (err)
            return bad(t, d, "truncated ring table");
    }
    return 0;
}

/* The tables a follower reads in place, as they grow: the whole site
 * table and every ring descriptor must be in the file. */
static uint64_t all_tables_end(const struct ember_ring_header *h)
{
    struct ember_ring_header all = *h;
    all.strings_used = (uint32_t)h->strings_size;
    return ember_ring_tables_end(&all, h->ring_count);
}

/* The header, checked: what every reader needs before anything else. */
static int check_header(struct ember_trace *t, struct ember_diag *d)
{
    struct backend *b = be(t);
    struct ember_ring_header *h = &b->h;
    if (t->size < EMBER_RING_HEADER_SIZE || ember_read_at(t->fd, h, sizeof(*h), 0) < 0 ||
        h->magic != EMBER_RING_MAGIC)
        return bad(t, d, "no ember trace header (the program has not started tracing yet?)");
    if (h->version != EMBER_RING_VERSION || h->header_size != EMBER_RING_HEADER_SIZE)
        return bad(t, d, "unsupported version");
    b->log = h->flags & EMBER_RING_LOG;
    if (t->live && b->log)
        return bad(t, d, "a packet log (ember trace record), not a live ring file");
    if (!ember_ring_geometry_ok(h))
        return bad(t, d, "header fields out of range");
    h->exe[sizeof(h->exe) - 1] = '\0';
    return 0;
}

/* Following: the header and tables mapped, in drain mode writable (the
 * consumer's place). */
static int map_tables(struct ember_trace *t, struct ember_diag *d)
{
    struct backend *b = be(t);
    if (t->size < all_tables_end(&b->h))
        return bad(t, d, "cut short, before the end of its site and ring tables");
    int writable = (fcntl(t->fd, F_GETFL) & O_ACCMODE) == O_RDWR;
    b->map_size = (size_t)all_tables_end(&b->h);
    b->map = mmap(NULL, b->map_size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, t->fd, 0);
    if (b->map == MAP_FAILED) {
        b->map = NULL;
        return ember_diag_set(d, -EIO, t->name, 0, "cannot map: %s", strerror(errno));
    }
    b->live = (struct ember_ring_header *)(void *)b->map;
    b->drain = (b->h.flags & EMBER_RING_DRAIN) && writable;
    if (b->drain)
        __atomic_store_n(&b->live->consumer, (uint64_t)getpid(), __ATOMIC_RELEASE);
    return 0;
}

static int grow_rings(struct ember_trace *t, unsigned n)
{
    struct backend *b = be(t);
    if (n <= b->nrings)
        return 0;
    struct ring *r = realloc(b->rings, (size_t)n * sizeof(*r));
    if (!r)
        return -ENOMEM;
    memset(r + b->nrings, 0, (size_t)(n - b->nrings) * sizeof(*r));
    b->rings = r;
    b->nrings = n;
    return ember_source_rings(t, n);
}

/* Reads the sites added since the last time: after the heads. */
static int update_sites(struct ember_trace *t, uint32_t used, const char *table)
{
    struct backend *b = be(t);
    unsigned before = b->sites.n;
    int err = ember_sites_update(&b->sites, table, used);
    for (unsigned i = before; i < b->sites.n && !err; i++)
        err = ember_source_add_site(t, b->sites.sites[i]);
    return err;
}

static int open_snapshot(struct ember_trace *t, struct ember_diag *d)
{
    struct backend *b = be(t);
    struct ember_ring_header *h = &b->h;
    unsigned n = b->log ? h->ring_count
                        : (h->rings_claimed < h->ring_count ? h->rings_claimed : h->ring_count);
    t->expected = b->log ? 0 : ember_ring_file_end(h);
    t->cut_short = t->size < t->expected;
    if (t->size < ember_ring_tables_end(h, n))
        return ember_diag_set(d, -EINVAL, t->name, 0,
                              "not a valid ember trace: cut short at byte %llu, before the end "
                              "of its site and ring tables (byte %llu)",
                              (unsigned long long)t->size,
                              (unsigned long long)ember_ring_tables_end(h, n));
    int err = grow_rings(t, n);
    if (!err && b->log)
        err = read_log_index(t, d);
    for (unsigned i = 0; !b->log && !err && i < n; i++) {
        struct ember_ring_desc dsc;
        if (read_desc(t, i, &dsc) < 0)
            return bad(t, d, "truncated ring table");
        take_desc(t, i, &dsc);
        b->rings[i].head = dsc.head;
        b->rings[i].dropped = dsc.dropped;
    }
    /* The site table after the heads: every event before a head has its
     * site in the table by then. */
    uint32_t used = 0;
    if (!err &&
        ember_read_at(t->fd, &used, 4, offsetof(struct ember_ring_header, strings_used)) < 0)
        err = bad(t, d, "truncated header");
    if (!err && (used > h->strings_size || !(b->sites_raw = malloc(used ? used : 1))))
        err = used > h->strings_size ? bad(t, d, "site table out of range") : -ENOMEM;
    if (!err && ember_read_at(t->fd, b->sites_raw, used, h->strings_offset) < 0)
        err = bad(t, d, "truncated site table");
    if (!err && (err = update_sites(t, used, b->sites_raw)) == -EINVAL)
        err = bad(t, d, "corrupt site table");
    return err;
}

static int open_rings(struct ember_trace *t, struct ember_diag *d)
{
    struct backend *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    t->be = b;
    t->format = EMBER_TRACE_RINGS;
    int err = check_header(t, d);
    if (err)
        return err;
    struct ember_ring_header *h = &b->h;
    t->format = b->log ? EMBER_TRACE_LOG : EMBER_TRACE_RINGS;
    t->pid = h->pid;
    snprintf(t->exe, sizeof(t->exe), "%s", h->exe);
    t->ticks_per_sec = h->ticks_per_sec;
    t->base_ticks = h->base_ticks;
    t->start_realtime = h->base_real_ns;
    memcpy(t->uuid, h->uuid, sizeof(t->uuid));
    ember_ns_scale_init(&b->scale, h->ticks_per_sec);
    if (!t->live)
        return open_snapshot(t, d);
    t->expected = ember_ring_file_end(h);
    t->cut_short = t->size < t->expected;
    return map_tables(t, d);
}

static void close_rings(struct ember_trace *t)
{
    struct backend *b = be(t);
    if (!b)
        return;
    if (b->map) {
        if (b->drain)
            __atomic_store_n(&b->live->consumer, 0, __ATOMIC_RELEASE);
        munmap(b->map, b->map_size);
    }
    for (unsigned i = 0; i < b->nrings; i++)
        free(b->rings[i].refs);
    free(b->rings);
    ember_sites_release(&b->sites);
    free(b->sites_raw);
    free(b);
}

/* Following: the rings claimed, their heads, then the sites. */
static int refresh(struct ember_trace *t)
{
    struct backend *b = be(t);
    uint32_t claimed = __atomic_load_n(&b->live->rings_claimed, __ATOMIC_ACQUIRE);
    int err = grow_rings(t, claimed < b->h.ring_count ? claimed : b->h.ring_count);
    for (unsigned i = 0; i < b->nrings && !err; i++) {
        struct ember_ring_desc dsc;
        read_desc(t, i, &dsc);
        take_desc(t, i, &dsc);
        /* no writer gets to 2^62 bytes; past it, positions could wrap */
        if (!(dsc.head >> 62))
            b->rings[i].head = dsc.head;
        struct ring *r = &b->rings[i];
        r->dropped = dsc.dropped;
        t->rings[i].lost += r->dropped - r->dropped_told;
        r->dropped_told = r->dropped;
    }
    uint32_t used = __atomic_load_n(&b->live->strings_used, __ATOMIC_ACQUIRE);
    if (!err && used > b->h.strings_size)
        return ember_source_corrupt(t, "site table out of range");
    if (!err && (err = update_sites(t, used, b->map + b->h.strings_offset)) == -EINVAL)
        return ember_source_corrupt(t, "corrupt site table");
    return err;
}

static int cursor_init(struct ember_trace *t, struct ember_cursor *c)
{
    struct cursor *k = calloc(1, sizeof(*k));
    if (!k || !(k->buf = malloc(be(t)->h.packet_size))) {
        free(k);
        return -ENOMEM;
    }
    c->state = k;
    return 0;
}

static void cursor_free(struct ember_trace *t, struct ember_cursor *c)
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
    if (read_desc(t, ring, &dsc) < 0)
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

static int cursor_next(struct ember_trace *t, struct ember_cursor *c)
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

static void pass_begin(struct ember_trace *t)
{
    for (unsigned i = 0; i < t->nrings; i++) {
        struct ember_trace_ring *r = &t->rings[i];
        r->events = r->packets = r->lost = 0;
        r->cut = r->cut_events = 0;
    }
}

/* Losses after the last packet read: dropped events, and the packets a
 * log lacks. */
static void pass_end(struct ember_trace *t)
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

static bool writer_alive(const struct ember_trace *t)
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

static int each_packet(struct ember_trace *t, ember_trace_packet_fn fn, void *ctx)
{
    struct backend *b = be(t);
    size_t P = b->h.packet_size;
    pass_begin(t);
    struct ember_cursor c = {0};
    int err = 0;
    for (unsigned i = 0; i < t->nrings && !err; i++) {
        if ((err = cursor_init(t, &c)) != 0)
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
        cursor_free(t, &c);
    }
    pass_end(t);
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
    int err = refresh(t);
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

static int recorder_new(struct ember_trace_recorder **out, struct ember_trace *t, int fd,
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

const struct ember_source_ops ember_rings_ops = {
    .name = "ember",
    .probe = probe,
    .ready = ready,
    .open = open_rings,
    .close = close_rings,
    .refresh = refresh,
    .cursor_init = cursor_init,
    .cursor_next = cursor_next,
    .cursor_free = cursor_free,
    .pass_begin = pass_begin,
    .pass_end = pass_end,
    .writer_alive = writer_alive,
    .each_packet = each_packet,
    .recorder_new = recorder_new,
};
