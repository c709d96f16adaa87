/*
 * reader.c - reading ring files and packet logs (see ember/tracefile.h and
 * format.h).
 *
 * A snapshot is taken ring by ring: copy the ring's slots, reload its head,
 * keep the packets the writer cannot have reached in the meantime. Only
 * then is the site table read (it only grows, and an event's site is in it
 * before the event is written). Everything read is checked against the
 * file's size and the format's limits before use.
 */
#include "ember/trace.h"
#include "ember/tracefile.h"
#include "decode.h"
#include "format.h"
#include "util/diag.h"
#include "util/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Packet logs (`ember record`) carry this flag; their data is a sequence
 * of {u32 ring, u32 size} + packet. */
#define EMBER_RING_LOG 0x100

struct packet {
    const char *p; /* the copied packet */
    size_t size;   /* bytes of content (header and events) */
    uint64_t seq;
    uint64_t discarded; /* running total of lost events, for CTF */
};

struct ring {
    struct ember_trace_ring info;
    char *copy;
    struct packet *packets;
    size_t npackets, pcap;
};

struct ember_trace {
    char name[256];
    struct ember_ring_header h;
    char *sites_raw;
    struct ember_sites sites;
    struct ring *rings;
    unsigned nrings;
    char *log; /* packet log: the whole data part */
};

static int bad(struct ember_trace *t, struct ember_diag *d, const char *what)
{
    return ember_diag_set(d, -EINVAL, t->name, 0, "not a valid ember trace: %s", what);
}

static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -EIO;
        got += (size_t)r;
    }
    return 0;
}

/* ---- packets ---------------------------------------------------------- */

/* Checks every event of a packet; returns the number, or -1 if corrupt. */
static long count_events(const struct ember_trace *t, const char *p, size_t size)
{
    long n = 0;
    struct ember_trace_event e;
    for (size_t off = EMBER_PACKET_HEADER; off < size; n++) {
        size_t sz = ember_event_decode(&t->sites, p + off, size - off, &e);
        if (!sz)
            return -1;
        off += sz;
    }
    return n;
}

static int add_packet(struct ring *r, const char *p, size_t size, uint64_t seq)
{
    if (EMBER_VEC_RESERVE(r->packets, r->pcap, r->npackets + 1) < 0)
        return -ENOMEM;
    r->packets[r->npackets++] = (struct packet){p, size, seq, 0};
    return 0;
}

/* The packet header at p, checked against the trace: its sequence number. */
static bool packet_ok(const struct ember_trace *t, const char *p, uint64_t *seq)
{
    struct ember_packet_header ph;
    memcpy(&ph, p, sizeof(ph));
    *seq = ph.ctx.packet_seq_num;
    return ph.magic == EMBER_CTF_MAGIC && ph.ctx.packet_size == (uint64_t)t->h.packet_size * 8;
}

/* Content size of a closed packet, 0 if implausible. */
static size_t closed_size(const struct ember_trace *t, const char *p)
{
    struct ember_packet_header ph;
    memcpy(&ph, p, sizeof(ph));
    uint64_t bytes = ph.ctx.content_size / 8;
    if (ph.ctx.content_size % 64 || bytes < EMBER_PACKET_HEADER || bytes > t->h.packet_size)
        return 0;
    return (size_t)bytes;
}

/* Copies ring i of a ring file and keeps the packets a writer cannot have
 * touched while it was copied. */
static int snapshot_ring(struct ember_trace *t, int fd, unsigned i, struct ember_diag *d)
{
    const struct ember_ring_header *h = &t->h;
    struct ring *r = &t->rings[i];
    uint64_t P = h->packet_size, N = h->packets_per_ring;
    uint64_t desc_off = h->rings_offset + (uint64_t)i * EMBER_RING_DESC_SIZE;
    struct ember_ring_desc dsc, dsc2;
    if (read_at(fd, &dsc, sizeof(dsc), desc_off) < 0)
        return bad(t, d, "truncated ring table");
    r->info.tid = dsc.tid;
    memcpy(r->info.name, dsc.name, sizeof(dsc.name));
    r->info.name[sizeof(dsc.name) - 1] = '\0';
    if (dsc.head == 0)
        return 0;
    r->copy = malloc(P * N);
    if (!r->copy)
        return -ENOMEM;
    if (read_at(fd, r->copy, P * N, h->data_offset + (uint64_t)i * P * N) < 0 ||
        read_at(fd, &dsc2, sizeof(dsc2), desc_off) < 0)
        return bad(t, d, "truncated ring");
    uint64_t head = dsc.head, head2 = dsc2.head < head ? head : dsc2.head;
    uint64_t last = (head - 1) / P, now = (head2 - 1) / P;
    uint64_t first = last + 1 >= N ? last + 1 - N : 0;
    /* the writer may be filling the slot of packet now + 1 */
    if (now + 2 > N && first < now + 2 - N)
        first = now + 2 - N;
    for (uint64_t s = first; s <= last; s++) {
        const char *p = r->copy + (s % N) * P;
        uint64_t seq;
        size_t size = s == last ? (size_t)(head - s * P) : closed_size(t, p);
        if (!packet_ok(t, p, &seq) || seq != s || size < EMBER_PACKET_HEADER || size > P)
            continue; /* overwritten or never completed: its events count as lost */
        int err = add_packet(r, p, size, s);
        if (err)
            return err;
    }
    r->info.lost = dsc2.dropped;
    return 0;
}

static int read_log(struct ember_trace *t, int fd, uint64_t file_size, struct ember_diag *d)
{
    uint64_t n = file_size - t->h.data_offset;
    t->log = malloc(n ? n : 1);
    if (!t->log)
        return -ENOMEM;
    if (read_at(fd, t->log, n, t->h.data_offset) < 0)
        return bad(t, d, "truncated packet log");
    for (uint64_t off = 0; off + 8 <= n;) {
        uint32_t ring, size;
        memcpy(&ring, t->log + off, 4);
        memcpy(&size, t->log + off + 4, 4);
        const char *p = t->log + off + 8;
        uint64_t seq;
        if (ring >= t->nrings || size < EMBER_PACKET_HEADER || size % 8 ||
            size > t->h.packet_size || size > n - off - 8 || !packet_ok(t, p, &seq))
            return ember_diag_set(d, -EINVAL, t->name, 0,
                                  "not a valid ember trace: corrupt packet log at byte %llu",
                                  (unsigned long long)(t->h.data_offset + off));
        struct ring *r = &t->rings[ring];
        if (r->npackets && seq <= r->packets[r->npackets - 1].seq)
            return bad(t, d, "packets out of order in the log");
        int err = add_packet(r, p, size, seq);
        if (err)
            return err;
        off += 8 + size;
    }
    for (unsigned i = 0; i < t->nrings; i++) {
        struct ember_ring_desc dsc;
        if (read_at(fd, &dsc, sizeof(dsc), t->h.rings_offset + (uint64_t)i * EMBER_RING_DESC_SIZE) <
            0)
            return bad(t, d, "truncated ring table");
        t->rings[i].info.tid = dsc.tid;
        memcpy(t->rings[i].info.name, dsc.name, sizeof(dsc.name));
        t->rings[i].info.name[sizeof(dsc.name) - 1] = '\0';
        t->rings[i].info.lost = dsc.dropped;
    }
    return 0;
}

/* Counts events, checks them, and works out losses and the running
 * "discarded" total of each packet. */
static int account(struct ember_trace *t, struct ember_diag *d)
{
    for (unsigned i = 0; i < t->nrings; i++) {
        struct ring *r = &t->rings[i];
        uint64_t dropped = r->info.lost, seen = 0;
        r->info.lost = 0;
        for (size_t k = 0; k < r->npackets; k++) {
            struct packet *pk = &r->packets[k];
            struct ember_packet_header ph;
            memcpy(&ph, pk->p, sizeof(ph));
            long n = count_events(t, pk->p, pk->size);
            if (n < 0)
                return ember_diag_set(d, -EINVAL, t->name, 0,
                                      "not a valid ember trace: corrupt event in ring %u (thread "
                                      "%u), packet %llu",
                                      i, r->info.tid, (unsigned long long)pk->seq);
            /* events before this packet that were not read: overwritten */
            if (ph.ctx.event_seq_begin > seen)
                r->info.lost += ph.ctx.event_seq_begin - seen;
            seen = ph.ctx.event_seq_begin + (uint64_t)n;
            pk->discarded = r->info.lost + ph.ctx.events_discarded;
            r->info.events += (uint64_t)n;
        }
        r->info.lost += dropped;
        r->info.packets = r->npackets;
    }
    return 0;
}

int ember_trace_open(struct ember_trace **out, const char *path, struct ember_diag *d)
{
    struct ember_trace *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    snprintf(t->name, sizeof(t->name), "%s", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = ember_diag_set(d, -EIO, path, 0, "cannot open: %s", strerror(errno));
        free(t);
        return err;
    }
    struct stat st;
    int err = fstat(fd, &st) < 0 ? -EIO : 0;
    struct ember_ring_header *h = &t->h;
    uint64_t size = (uint64_t)st.st_size;
    if (!err && (size < EMBER_RING_HEADER_SIZE || read_at(fd, h, sizeof(*h), 0) < 0 ||
                 h->magic != EMBER_RING_MAGIC))
        err = bad(t, d, "no ember trace header (the program has not started tracing yet?)");
    if (!err && (h->version != EMBER_RING_VERSION || h->header_size != EMBER_RING_HEADER_SIZE))
        err = bad(t, d, "unsupported version");
    bool log = !err && (h->flags & EMBER_RING_LOG);
    uint64_t P = h->packet_size, N = h->packets_per_ring;
    if (!err &&
        (P < 4096 || P > (64u << 20) || P % 8 || N < 2 || N > (1u << 20) || h->ring_count == 0 ||
         h->ring_count > 65536 || h->ticks_per_sec == 0 || h->strings_used > h->strings_size ||
         h->strings_offset > size || h->strings_size > size - h->strings_offset ||
         h->rings_offset + (uint64_t)h->ring_count * EMBER_RING_DESC_SIZE > size ||
         h->data_offset > size ||
         (!log &&
          (P * N > (1ull << 36) || h->data_offset + (uint64_t)h->ring_count * P * N > size))))
        err = bad(t, d, "header fields out of range");
    h->exe[sizeof(h->exe) - 1] = '\0';
    if (!err) {
        t->nrings = log ? h->ring_count
                        : (h->rings_claimed < h->ring_count ? h->rings_claimed : h->ring_count);
        t->rings = calloc(t->nrings ? t->nrings : 1, sizeof(*t->rings));
        if (!t->rings)
            err = -ENOMEM;
    }
    if (log && !err)
        err = read_log(t, fd, size, d);
    for (unsigned i = 0; !log && !err && i < t->nrings; i++)
        err = snapshot_ring(t, fd, i, d);
    /* the site table last: every event read has its site there by now */
    uint32_t used = 0;
    if (!err && read_at(fd, &used, 4, offsetof(struct ember_ring_header, strings_used)) < 0)
        err = bad(t, d, "truncated header");
    if (!err && (used > h->strings_size || !(t->sites_raw = malloc(used ? used : 1))))
        err = used > h->strings_size ? bad(t, d, "site table out of range") : -ENOMEM;
    if (!err && read_at(fd, t->sites_raw, used, h->strings_offset) < 0)
        err = bad(t, d, "truncated site table");
    if (!err && (err = ember_sites_update(&t->sites, t->sites_raw, used)) == -EINVAL)
        err = bad(t, d, "corrupt site table");
    if (!err)
        err = account(t, d);
    close(fd);
    if (err) {
        ember_trace_close(t);
        return err;
    }
    *out = t;
    return 0;
}

void ember_trace_close(struct ember_trace *t)
{
    if (!t)
        return;
    ember_sites_release(&t->sites);
    for (unsigned i = 0; i < t->nrings; i++) {
        free(t->rings[i].copy);
        free(t->rings[i].packets);
    }
    free(t->rings);
    free(t->sites_raw);
    free(t->log);
    free(t);
}

uint32_t ember_trace_pid(const struct ember_trace *t)
{
    return t->h.pid;
}

const char *ember_trace_exe(const struct ember_trace *t)
{
    return t->h.exe;
}

uint64_t ember_trace_ticks_per_sec(const struct ember_trace *t)
{
    return t->h.ticks_per_sec;
}

uint64_t ember_trace_base_ticks(const struct ember_trace *t)
{
    return t->h.base_ticks;
}

uint64_t ember_trace_start_realtime(const struct ember_trace *t)
{
    return t->h.base_real_ns;
}

const uint8_t *ember_trace_uuid(const struct ember_trace *t)
{
    return t->h.uuid;
}

unsigned ember_trace_ring_count(const struct ember_trace *t)
{
    return t->nrings;
}

const struct ember_trace_ring *ember_trace_ring(const struct ember_trace *t, unsigned i)
{
    return i < t->nrings ? &t->rings[i].info : NULL;
}

unsigned ember_trace_site_count(const struct ember_trace *t)
{
    return t->sites.n;
}

const struct ember_trace_site *ember_trace_site_at(const struct ember_trace *t, unsigned i)
{
    return i < t->sites.n ? &t->sites.sites[i] : NULL;
}

/* ---- iteration -------------------------------------------------------- */

struct cursor {
    unsigned ring;
    size_t packet, off;
    uint64_t seq;
    struct ember_trace_event e; /* the next event */
};

static bool cursor_load(const struct ember_trace *t, struct cursor *c)
{
    const struct ring *r = &t->rings[c->ring];
    while (c->packet < r->npackets) {
        const struct packet *pk = &r->packets[c->packet];
        if (c->off == 0) {
            struct ember_packet_header ph;
            memcpy(&ph, pk->p, sizeof(ph));
            c->off = EMBER_PACKET_HEADER;
            c->seq = ph.ctx.event_seq_begin;
        }
        if (c->off < pk->size) {
            size_t sz = ember_event_decode(&t->sites, pk->p + c->off, pk->size - c->off, &c->e);
            c->e.ring = c->ring;
            c->e.tid = r->info.tid;
            c->e.seq = c->seq;
            int64_t dt = (int64_t)(c->e.ticks - t->h.base_ticks);
            c->e.ns = (int64_t)((__int128)dt * 1000000000 / (__int128)t->h.ticks_per_sec);
            c->off += sz;
            c->seq++;
            return true;
        }
        c->packet++;
        c->off = 0;
    }
    return false;
}

static bool before(const struct cursor *a, const struct cursor *b)
{
    return a->e.ticks != b->e.ticks ? a->e.ticks < b->e.ticks : a->ring < b->ring;
}

static void sift_down(struct cursor *heap, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && before(&heap[l], &heap[m]))
            m = l;
        if (l + 1 < n && before(&heap[l + 1], &heap[m]))
            m = l + 1;
        if (m == i)
            return;
        struct cursor tmp = heap[i];
        heap[i] = heap[m];
        heap[m] = tmp;
        i = m;
    }
}

int ember_trace_each(struct ember_trace *t, ember_trace_event_fn fn, void *ctx)
{
    struct cursor *heap = calloc(t->nrings ? t->nrings : 1, sizeof(*heap));
    if (!heap)
        return -ENOMEM;
    size_t n = 0;
    for (unsigned i = 0; i < t->nrings; i++) {
        heap[n] = (struct cursor){.ring = i};
        if (cursor_load(t, &heap[n]))
            n++;
    }
    for (size_t i = n / 2; i-- > 0;)
        sift_down(heap, n, i);
    int err = 0;
    while (n && !err) {
        err = fn(ctx, &heap[0].e);
        if (!cursor_load(t, &heap[0]))
            heap[0] = heap[--n];
        sift_down(heap, n, 0);
    }
    free(heap);
    return err;
}

int ember_trace_each_packet(struct ember_trace *t, ember_trace_packet_fn fn, void *ctx)
{
    size_t P = t->h.packet_size;
    char *buf = malloc(P);
    if (!buf)
        return -ENOMEM;
    int err = 0;
    for (unsigned i = 0; i < t->nrings && !err; i++) {
        const struct ring *r = &t->rings[i];
        for (size_t k = 0; k < r->npackets && !err; k++) {
            const struct packet *pk = &r->packets[k];
            struct ember_packet_header ph;
            memcpy(buf, pk->p, pk->size);
            memset(buf + pk->size, 0, P - pk->size);
            memcpy(&ph, buf, sizeof(ph));
            /* an open packet has no end yet: its last event's time */
            if (ph.ctx.timestamp_end < ph.ctx.timestamp_begin || !ph.ctx.content_size) {
                uint64_t last = ph.ctx.timestamp_begin;
                struct ember_trace_event e;
                for (size_t off = EMBER_PACKET_HEADER; off < pk->size;) {
                    size_t sz = ember_event_decode(&t->sites, buf + off, pk->size - off, &e);
                    last = e.ticks;
                    off += sz;
                }
                ph.ctx.timestamp_end = last;
            }
            ph.ctx.content_size = (uint64_t)pk->size * 8;
            ph.ctx.events_discarded = pk->discarded;
            memcpy(buf, &ph, sizeof(ph));
            err = fn(ctx, i, buf, P);
        }
    }
    free(buf);
    return err;
}
