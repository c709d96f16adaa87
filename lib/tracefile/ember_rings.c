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
 *
 * This file opens a file and reads its header, tables and ring
 * descriptors; the cursor, native packets and recording are in
 * ember_rings_cursor.c.
 */
#include "ember/trace.h"
#include "tracefile/ring_log.h"
#include "tracefile/ember_rings.h"
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

/* Ring i's descriptor: in place when following, else read from the file. */
int ember_rings_read_desc(struct ember_trace *t, unsigned i, struct ember_ring_desc *dsc)
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
        int err = ember_rings_read_desc(t, i, &dsc);
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
        if (ember_rings_read_desc(t, i, &dsc) < 0)
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
int ember_rings_refresh(struct ember_trace *t)
{
    struct backend *b = be(t);
    uint32_t claimed = __atomic_load_n(&b->live->rings_claimed, __ATOMIC_ACQUIRE);
    int err = grow_rings(t, claimed < b->h.ring_count ? claimed : b->h.ring_count);
    for (unsigned i = 0; i < b->nrings && !err; i++) {
        struct ember_ring_desc dsc;
        ember_rings_read_desc(t, i, &dsc);
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

const struct ember_source_ops ember_rings_ops = {
    .name = "ember",
    .probe = probe,
    .ready = ready,
    .open = open_rings,
    .close = close_rings,
    .refresh = ember_rings_refresh,
    .cursor_init = ember_rings_cursor_init,
    .cursor_next = ember_rings_cursor_next,
    .cursor_free = ember_rings_cursor_free,
    .pass_begin = ember_rings_pass_begin,
    .pass_end = ember_rings_pass_end,
    .writer_alive = ember_rings_writer_alive,
    .each_packet = ember_rings_each_packet,
    .recorder_new = ember_rings_recorder_new,
};
