/*
 * reader.c - reading ring files and packet logs (see ember/tracefile.h and
 * format.h).
 *
 * A snapshot is taken ring by ring: copy the ring's slots, reload its head,
 * keep the packets the writer cannot have reached in the meantime. Only
 * then is the site table read (it only grows, and an event's site is in it
 * before the event is written). Everything read is checked against the
 * file's size and the format's limits before use.
 *
 * A file cut short is read up to the cut: a packet the file ends in gives
 * its whole events, one it ends before none, and each is counted as cut in
 * its ring, with the events the next packet read says it held. Packet logs
 * also know, from each ring's head, how many packets should follow the
 * last one they hold.
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

/* The data of a packet log (`ember record`, EMBER_RING_LOG) is a sequence
 * of {u32 ring, u32 size} + packet. */
struct packet_ref { /* a packet of a log */
    uint64_t off;
    uint32_t size; /* in the file: less than the record's when cut */
    bool cut;
};

struct ring {
    struct ember_trace_ring info;
    uint64_t dropped; /* events the writer dropped (drain mode) */
    /* ring files: packets first..last, the last one ending at head */
    uint64_t head, first, last;
    /* logs: where each packet is; packets the head says follow the last
     * one in the log (cut off with the end of the file) */
    struct packet_ref *refs;
    size_t nrefs, rcap;
    uint64_t missing, missing_first;
};

struct ember_trace {
    char name[256];
    int fd;
    bool log;
    struct ember_ring_header h;
    char *sites_raw;
    struct ember_sites sites;
    struct ring *rings;
    unsigned nrings;
    struct ember_diag err; /* what stopped the last iteration */
    struct ember_ns_scale scale;
    uint64_t size, expected; /* the file's size; a ring file's full size */
    bool cut_short;
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

static struct ember_ring_desc read_desc(struct ember_trace *t, unsigned i, int *err)
{
    struct ember_ring_desc dsc;
    memset(&dsc, 0, sizeof(dsc));
    if (read_at(t->fd, &dsc, sizeof(dsc), t->h.rings_offset + (uint64_t)i * EMBER_RING_DESC_SIZE) <
        0)
        *err = -EIO;
    return dsc;
}

/* The packets of ring i worth reading: those from the oldest one the
 * writer cannot overwrite before we get to it... as far as we can tell
 * now; each is checked again when read. */
static int window(struct ember_trace *t, unsigned i)
{
    struct ring *r = &t->rings[i];
    uint64_t P = t->h.packet_size, N = t->h.packets_per_ring;
    int err = 0;
    struct ember_ring_desc dsc = read_desc(t, i, &err);
    r->info.tid = dsc.tid;
    memcpy(r->info.name, dsc.name, sizeof(dsc.name));
    r->info.name[sizeof(dsc.name) - 1] = '\0';
    r->dropped = dsc.dropped;
    r->head = dsc.head;
    r->first = 1, r->last = 0; /* empty */
    if (dsc.head > 0) {
        r->last = (dsc.head - 1) / P;
        r->first = r->last + 1 >= N ? r->last + 1 - N : 0;
    }
    return err;
}

/* Which packets a ring of a log lacks at its end: its head (the stream
 * position of its last event) is in packet (head - 1) / P; the log should
 * end with that one. */
static int log_missing_tail(struct ember_trace *t, struct ring *r, uint64_t head)
{
    uint64_t want = head ? (head - 1) / t->h.packet_size : 0;
    uint64_t next = 0; /* the packet after the last one in the log */
    size_t n = r->nrefs;
    /* a record cut before the end of its packet's header is the packet
     * after the one before it (counted cut as it is read) */
    bool headless = n && r->refs[n - 1].size < EMBER_PACKET_HEADER;
    if (n > headless) {
        struct ember_packet_header ph;
        if (read_at(t->fd, &ph, sizeof(ph), r->refs[n - 1 - headless].off) < 0)
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
static int read_log_index(struct ember_trace *t, uint64_t file_size, struct ember_diag *d)
{
    uint64_t off;
    for (off = t->h.data_offset; off + 8 <= file_size;) {
        uint32_t hdr[2];
        if (read_at(t->fd, hdr, 8, off) < 0)
            return bad(t, d, "unreadable packet log");
        if (hdr[0] >= t->nrings || hdr[1] < EMBER_PACKET_HEADER || hdr[1] % 8 ||
            hdr[1] > t->h.packet_size)
            return ember_diag_set(d, -EINVAL, t->name, 0,
                                  "not a valid ember trace: corrupt packet log at byte %llu",
                                  (unsigned long long)off);
        struct ring *r = &t->rings[hdr[0]];
        if (EMBER_VEC_RESERVE(r->refs, r->rcap, r->nrefs + 1) < 0)
            return -ENOMEM;
        bool cut = hdr[1] > file_size - off - 8;
        uint32_t have = cut ? (uint32_t)(file_size - off - 8) : hdr[1];
        r->refs[r->nrefs++] = (struct packet_ref){off + 8, have, cut};
        off += 8 + (uint64_t)hdr[1];
    }
    if (off != file_size)
        t->cut_short = true; /* a record, or its header, goes past the end */
    int err = 0;
    for (unsigned i = 0; i < t->nrings && !err; i++) {
        struct ember_ring_desc dsc = read_desc(t, i, &err);
        t->rings[i].info.tid = dsc.tid;
        memcpy(t->rings[i].info.name, dsc.name, sizeof(dsc.name));
        t->rings[i].info.name[sizeof(dsc.name) - 1] = '\0';
        t->rings[i].dropped = dsc.dropped;
        if (!err)
            err = log_missing_tail(t, &t->rings[i], dsc.head);
    }
    return err ? bad(t, d, "truncated ring table") : 0;
}

int ember_trace_open(struct ember_trace **out, const char *path, struct ember_diag *d)
{
    struct ember_trace *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    snprintf(t->name, sizeof(t->name), "%s", path);
    t->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (t->fd < 0) {
        int err = ember_diag_set(d, -EIO, path, 0, "cannot open: %s", strerror(errno));
        free(t);
        return err;
    }
    struct stat st;
    int err = fstat(t->fd, &st) < 0 ? -EIO : 0;
    struct ember_ring_header *h = &t->h;
    uint64_t size = (uint64_t)st.st_size;
    if (!err && (size < EMBER_RING_HEADER_SIZE || read_at(t->fd, h, sizeof(*h), 0) < 0 ||
                 h->magic != EMBER_RING_MAGIC))
        err = bad(t, d, "no ember trace header (the program has not started tracing yet?)");
    if (!err && (h->version != EMBER_RING_VERSION || h->header_size != EMBER_RING_HEADER_SIZE))
        err = bad(t, d, "unsupported version");
    t->log = !err && (h->flags & EMBER_RING_LOG);
    if (!err && !ember_ring_geometry_ok(h))
        err = bad(t, d, "header fields out of range");
    h->exe[sizeof(h->exe) - 1] = '\0';
    if (!err) {
        t->nrings = t->log ? h->ring_count
                           : (h->rings_claimed < h->ring_count ? h->rings_claimed : h->ring_count);
        t->size = size;
        t->expected = t->log ? 0 : ember_ring_file_end(h);
        t->cut_short = size < t->expected;
        if (size < ember_ring_tables_end(h, t->nrings))
            err = ember_diag_set(d, -EINVAL, t->name, 0,
                                 "not a valid ember trace: cut short at byte %llu, before the end "
                                 "of its site and ring tables (byte %llu)",
                                 (unsigned long long)size,
                                 (unsigned long long)ember_ring_tables_end(h, t->nrings));
    }
    if (!err && !(t->rings = calloc(t->nrings ? t->nrings : 1, sizeof(*t->rings))))
        err = -ENOMEM;
    if (t->log && !err)
        err = read_log_index(t, size, d);
    for (unsigned i = 0; !t->log && !err && i < t->nrings; i++)
        if ((err = window(t, i)) < 0)
            err = bad(t, d, "truncated ring table");
    /* The site table after the heads: every event before a head has its
     * site in the table by then. */
    uint32_t used = 0;
    if (!err && read_at(t->fd, &used, 4, offsetof(struct ember_ring_header, strings_used)) < 0)
        err = bad(t, d, "truncated header");
    if (!err && (used > h->strings_size || !(t->sites_raw = malloc(used ? used : 1))))
        err = used > h->strings_size ? bad(t, d, "site table out of range") : -ENOMEM;
    if (!err && read_at(t->fd, t->sites_raw, used, h->strings_offset) < 0)
        err = bad(t, d, "truncated site table");
    if (!err && (err = ember_sites_update(&t->sites, t->sites_raw, used)) == -EINVAL)
        err = bad(t, d, "corrupt site table");
    if (err) {
        ember_trace_close(t);
        return err;
    }
    ember_ns_scale_init(&t->scale, h->ticks_per_sec);
    *out = t;
    return 0;
}

void ember_trace_close(struct ember_trace *t)
{
    if (!t)
        return;
    ember_sites_release(&t->sites);
    for (unsigned i = 0; t->rings && i < t->nrings; i++)
        free(t->rings[i].refs);
    if (t->fd >= 0)
        close(t->fd);
    free(t->rings);
    free(t->sites_raw);
    free(t);
}

bool ember_trace_cut_short(const struct ember_trace *t, uint64_t *size, uint64_t *expected)
{
    *size = t->size;
    *expected = t->expected;
    return t->cut_short;
}

const struct ember_diag *ember_trace_error(const struct ember_trace *t)
{
    return &t->err;
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

/* ---- iteration: one packet at a time per ring ---------------------------- */

struct cursor {
    unsigned ring;
    uint64_t next; /* ring files: the next packet's sequence; logs: its index */
    char *buf;     /* the packet being read */
    size_t size;   /* its content */
    size_t off;    /* the next event in it */
    uint64_t seq;  /* the next event's number */
    uint64_t seen; /* events of the ring before the current packet's end */
    uint64_t pseq; /* the current packet's sequence number (logs: checked to grow) */
    bool cut_gap;  /* packets were cut since the last one read: the events
                      missing before the next one went with them */
    struct ember_trace_event e;
};

/* Content size of a closed packet, 0 if implausible. */
static size_t closed_size(const struct ember_trace *t, const struct ember_packet_header *ph)
{
    uint64_t bytes = ph->ctx.content_size / 8;
    if (ph->ctx.content_size % 64 || bytes < EMBER_PACKET_HEADER || bytes > t->h.packet_size)
        return 0;
    return (size_t)bytes;
}

static int corrupt(struct ember_trace *t, unsigned ring, uint64_t packet, const char *what)
{
    return ember_diag_set(&t->err, -EINVAL, t->name, 0,
                          "not a valid ember trace: %s in ring %u (thread %u), packet %llu", what,
                          ring, t->rings[ring].info.tid, (unsigned long long)packet);
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

/* Where packet c->next is and the bytes it may hold: ring files by its
 * slot (the last packet up to head), logs by their index. 0 at the end. */
static int locate(struct ember_trace *t, struct cursor *c, uint64_t *off, size_t *size, bool *cut)
{
    struct ring *r = &t->rings[c->ring];
    uint64_t P = t->h.packet_size, N = t->h.packets_per_ring;
    if (t->log) {
        if (c->next >= r->nrefs)
            return 0;
        *off = r->refs[c->next].off;
        *size = r->refs[c->next].size;
        *cut = r->refs[c->next].cut;
        return 1;
    }
    if (c->next < r->first)
        c->next = r->first;
    if (c->next > r->last)
        return 0;
    *off = t->h.data_offset + ((uint64_t)c->ring * N + c->next % N) * P;
    *size = c->next == r->last ? (size_t)(r->head - c->next * P) : (size_t)P;
    *cut = false;
    return 1;
}

/* Reads the cursor's next packet; 1 if there is one, 0 at the end, < 0 on
 * error. Packets a live writer overwrote are skipped (their events are
 * counted lost from the numbers of the next one), and so are packets the
 * file ends before (counted cut). */
static int next_packet(struct ember_trace *t, struct cursor *c)
{
    struct ring *r = &t->rings[c->ring];
    uint64_t P = t->h.packet_size, N = t->h.packets_per_ring;
    for (;;) {
        uint64_t off;
        size_t size;
        bool cut;
        if (locate(t, c, &off, &size, &cut) == 0)
            return 0;
        uint64_t seq = c->next++;
        if (!t->log && r->last + 2 > seq + N)
            continue; /* the oldest slot: a live writer's next packet goes there */
        size_t have = (size_t)ember_ring_in_file(off, size, t->size);
        if (have < EMBER_PACKET_HEADER) {
            /* a log's packet is numbered by its header: the next one */
            note_cut(&r->info, t->log ? (seq ? c->pseq + 1 : 0) : seq);
            c->cut_gap = true;
            continue;
        }
        if (read_at(t->fd, c->buf, have, off) < 0)
            return ember_diag_set(&t->err, -EIO, t->name, 0, "cannot read: %s", strerror(EIO));
        struct ember_packet_header ph;
        memcpy(&ph, c->buf, sizeof(ph));
        if (!t->log) {
            /* as a seqlock reader: the copy is done before head is read again */
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            int err = 0;
            struct ember_ring_desc dsc = read_desc(t, c->ring, &err);
            if (err)
                return ember_diag_set(&t->err, -EIO, t->name, 0, "cannot read the ring table");
            uint64_t now = dsc.head ? (dsc.head - 1) / P : 0;
            if (now + 2 > seq + N || ph.magic != EMBER_CTF_MAGIC || ph.ctx.packet_seq_num != seq)
                continue; /* overwritten, or never completed */
            if (seq != r->last)
                size = closed_size(t, &ph);
            if (size < EMBER_PACKET_HEADER)
                continue;
        } else if (ph.magic != EMBER_CTF_MAGIC || ph.ctx.packet_size != P * 8 ||
                   (c->next > 1 && ph.ctx.packet_seq_num <= c->pseq)) {
            return corrupt(t, c->ring, seq, "a damaged packet");
        }
        if (ph.ctx.event_seq_begin > c->seen) {
            uint64_t gap = ph.ctx.event_seq_begin - c->seen;
            /* after a packet read, they were in the packets cut; before,
             * overwritten events may be among them: lost, as they are */
            if (c->cut_gap && r->info.packets)
                r->info.cut_events += gap;
            else
                r->info.lost += gap;
        }
        c->cut_gap = cut || size > have;
        if (c->cut_gap) {
            note_cut(&r->info, t->log ? ph.ctx.packet_seq_num : seq);
            size = (size_t)ember_ring_whole_events(c->buf, have);
        }
        c->pseq = ph.ctx.packet_seq_num;
        c->seq = c->seen = ph.ctx.event_seq_begin;
        c->size = size;
        c->off = EMBER_PACKET_HEADER;
        r->info.packets++;
        return 1;
    }
}

/* Loads the cursor's next event; 1, 0 at the end, < 0 on error. */
static int cursor_load(struct ember_trace *t, struct cursor *c)
{
    while (c->off >= c->size) {
        int r = next_packet(t, c);
        if (r <= 0)
            return r;
    }
    size_t sz = ember_event_decode(&t->sites, c->buf + c->off, c->size - c->off, &c->e);
    if (!sz)
        return corrupt(t, c->ring, c->next - 1, "a corrupt event");
    struct ring *r = &t->rings[c->ring];
    c->e.ring = c->ring;
    c->e.tid = r->info.tid;
    c->e.seq = c->seq++;
    c->seen = c->seq;
    int64_t dt = (int64_t)(c->e.ticks - t->h.base_ticks);
    c->e.ns = ember_ticks_to_ns(&t->scale, dt);
    c->off += sz;
    r->info.events++;
    return 1;
}

static bool before(const struct cursor *a, const struct cursor *b)
{
    return a->e.ticks != b->e.ticks ? a->e.ticks < b->e.ticks : a->ring < b->ring;
}

static void sift_down(struct cursor **heap, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && before(heap[l], heap[m]))
            m = l;
        if (l + 1 < n && before(heap[l + 1], heap[m]))
            m = l + 1;
        if (m == i)
            return;
        struct cursor *tmp = heap[i];
        heap[i] = heap[m];
        heap[m] = tmp;
        i = m;
    }
}

/* Cursors for every ring, counts reset: the ring figures are those of this
 * pass when it ends. */
static struct cursor *start_pass(struct ember_trace *t)
{
    struct cursor *cs = calloc(t->nrings ? t->nrings : 1, sizeof(*cs));
    if (!cs)
        return NULL;
    ember_diag_clear(&t->err);
    for (unsigned i = 0; i < t->nrings; i++) {
        cs[i].ring = i;
        t->rings[i].info.events = t->rings[i].info.packets = 0;
        t->rings[i].info.lost = 0;
        t->rings[i].info.cut = t->rings[i].info.cut_events = 0;
        if (!(cs[i].buf = malloc(t->h.packet_size))) {
            for (unsigned k = 0; k < i; k++)
                free(cs[k].buf);
            free(cs);
            return NULL;
        }
    }
    return cs;
}

/* Losses after the last packet read: dropped events, and events the
 * writer committed after the ones read (a live ring file). */
static void end_pass(struct ember_trace *t, struct cursor *cs)
{
    for (unsigned i = 0; i < t->nrings; i++) {
        struct ring *r = &t->rings[i];
        r->info.lost += r->dropped;
        if (r->missing) {
            note_cut(&r->info, r->missing_first);
            note_cut(&r->info, r->missing_first + r->missing - 1);
            r->info.cut += r->missing - 2;
        }
        free(cs[i].buf);
    }
    free(cs);
}

/* Few rings (the usual case): the next event is found by a scan, and the
 * ring holding it hands out events while they come before every other
 * ring's next one. Branches a heap would mispredict on every event become
 * one comparison per event. act[] keeps ring order, so the first of equal
 * times is the lowest ring. */
enum { SCAN_MAX = 8 };

static int merge_scan(struct ember_trace *t, struct cursor **act, size_t n, ember_trace_event_fn fn,
                      void *ctx)
{
    while (n) {
        size_t b = 0;
        for (size_t i = 1; i < n; i++)
            b = act[i]->e.ticks < act[b]->e.ticks ? i : b;
        /* the ring after which b must yield: the least of the others */
        size_t s = b == 0 ? 1 : 0;
        for (size_t i = s + 1; i < n; i++)
            s = i != b && act[i]->e.ticks < act[s]->e.ticks ? i : s;
        struct cursor *c = act[b];
        int got;
        do {
            int err = fn(ctx, &c->e);
            if (err)
                return err;
            if ((got = cursor_load(t, c)) < 0)
                return got;
        } while (got && (s >= n || before(c, act[s])));
        if (!got) {
            memmove(act + b, act + b + 1, (n - b - 1) * sizeof(*act));
            n--;
        }
    }
    return 0;
}

static int merge_heap(struct ember_trace *t, struct cursor **heap, size_t n,
                      ember_trace_event_fn fn, void *ctx)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(heap, n, i);
    while (n) {
        int err = fn(ctx, &heap[0]->e);
        int got = err ? err : cursor_load(t, heap[0]);
        if (got < 0)
            return got;
        if (got == 0)
            heap[0] = heap[--n];
        sift_down(heap, n, 0);
    }
    return 0;
}

int ember_trace_each(struct ember_trace *t, ember_trace_event_fn fn, void *ctx)
{
    struct cursor *cs = start_pass(t);
    struct cursor **act = calloc(t->nrings ? t->nrings : 1, sizeof(*act));
    if (!cs || !act) {
        free(act);
        if (cs)
            end_pass(t, cs);
        return -ENOMEM;
    }
    size_t n = 0;
    int err = 0;
    for (unsigned i = 0; i < t->nrings && !err; i++) {
        int got = cursor_load(t, &cs[i]);
        if (got > 0)
            act[n++] = &cs[i];
        err = got < 0 ? got : 0;
    }
    if (!err)
        err = n <= SCAN_MAX ? merge_scan(t, act, n, fn, ctx) : merge_heap(t, act, n, fn, ctx);
    free(act);
    end_pass(t, cs);
    return err;
}

int ember_trace_each_packet(struct ember_trace *t, ember_trace_packet_fn fn, void *ctx)
{
    struct cursor *cs = start_pass(t);
    if (!cs)
        return -ENOMEM;
    size_t P = t->h.packet_size;
    int err = 0;
    for (unsigned i = 0; i < t->nrings && !err; i++) {
        struct cursor *c = &cs[i];
        struct ring *r = &t->rings[i];
        for (;;) {
            int got = next_packet(t, c);
            if (got <= 0) {
                err = got;
                break;
            }
            /* walk the events: they are checked, counted, and give the end */
            uint64_t last = 0;
            while (c->off < c->size && (err = cursor_load(t, c)) > 0)
                last = c->e.ticks;
            if (err < 0)
                break;
            err = 0;
            struct ember_packet_header ph;
            memcpy(&ph, c->buf, sizeof(ph));
            if (ph.ctx.timestamp_end < ph.ctx.timestamp_begin || !ph.ctx.content_size)
                ph.ctx.timestamp_end = last ? last : ph.ctx.timestamp_begin;
            ph.ctx.content_size = (uint64_t)c->size * 8;
            /* CTF wants the running total of events lost so far */
            ph.ctx.events_discarded = r->info.lost + ph.ctx.events_discarded;
            memcpy(c->buf, &ph, sizeof(ph));
            memset(c->buf + c->size, 0, P - c->size);
            if ((err = fn(ctx, i, c->buf, P)) != 0)
                break;
        }
    }
    end_pass(t, cs);
    return err;
}
