/*
 * follow.c - reading a ring file while its program writes it: the live
 * consumer behind `ember trace dump --follow` and `ember record`.
 *
 * It waits for the file and for its header's magic (written last), never
 * trusting a fixed sleep. Then, each poll, it copies the packets each ring
 * published since the last poll, re-checks the ring's head to drop any the
 * writer may have overwritten meanwhile, and counts as lost the events
 * between the last one it read and the first of the next packet it keeps.
 * In drain mode it publishes how far it has read (tail), so writers only
 * drop events when it falls behind.
 */
#include "decode.h"
#include "ember/trace.h"
#include "ember/tracefile.h"
#include "format.h"
#include "util/diag.h"
#include "util/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct follow_ring {
    struct ember_trace_ring info; /* lost = overwritten + dropped */
    uint64_t pos;                 /* stream position read up to */
    uint64_t next_seq;            /* the number of the next event expected */
    uint64_t overwritten;         /* events gone before they could be read */
    bool cut_gap;                 /* packets cut since the last one read */
};

struct batched {
    struct ember_trace_event e;
    size_t str_off[EMBER_TRACE_MAX_FIELDS];
};

struct ember_follow {
    char name[256];
    int fd;
    char *map;
    size_t size;
    struct ember_ring_header *h;  /* the live header: its atomics */
    struct ember_ring_header hdr; /* a checked copy: the geometry */
    bool drain;
    struct ember_sites sites;
    struct ember_ns_scale scale;
    struct follow_ring *rings;
    unsigned nrings;
    char *buf;
    struct batched *batch;
    size_t nbatch, bcap;
    char *strs;
    size_t nstrs, scap;
};

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The tables a follower reads in place, as they grow: the whole site
 * table and every ring descriptor must be in the file. */
static uint64_t tables_end(const struct ember_ring_header *h)
{
    struct ember_ring_header all = *h;
    all.strings_used = (uint32_t)h->strings_size;
    return ember_ring_tables_end(&all, h->ring_count);
}

int ember_follow_open(struct ember_follow **out, const char *path, int timeout_ms,
                      struct ember_diag *d)
{
    uint64_t deadline = now_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
    int fd = -1;
    struct stat st;
    for (;;) {
        if (fd < 0)
            fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0 && errno != ENOENT)
            fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            uint64_t magic = 0;
            if (fstat(fd, &st) == 0 && st.st_size >= EMBER_RING_HEADER_SIZE &&
                pread(fd, &magic, 8, 0) == 8 && magic == EMBER_RING_MAGIC)
                break;
        } else if (errno != ENOENT) {
            return ember_diag_set(d, -EIO, path, 0, "cannot open: %s", strerror(errno));
        }
        if (now_ms() >= deadline) {
            if (fd >= 0)
                close(fd);
            return ember_diag_set(d, -ETIMEDOUT, path, 0,
                                  fd < 0 ? "no such trace file appeared"
                                         : "the file never got a complete trace header");
        }
        sleep_ms(20);
    }
    struct ember_follow *f = calloc(1, sizeof(*f));
    if (!f) {
        close(fd);
        return -ENOMEM;
    }
    snprintf(f->name, sizeof(f->name), "%s", path);
    f->fd = fd;
    f->size = (size_t)st.st_size;
    int writable = (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR;
    f->map = mmap(NULL, f->size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        ember_follow_close(f);
        return ember_diag_set(d, -EIO, path, 0, "cannot map: %s", strerror(errno));
    }
    f->h = (struct ember_ring_header *)(void *)f->map;
    memcpy(&f->hdr, f->map, sizeof(f->hdr)); /* checked once, then trusted */
    const char *why =
        f->hdr.version != EMBER_RING_VERSION ? "unsupported version"
        : f->hdr.flags & EMBER_RING_LOG      ? "a packet log (ember record), not a live ring file"
        : !ember_ring_geometry_ok(&f->hdr)   ? "header fields out of range"
        : f->size < tables_end(&f->hdr) ? "cut short, before the end of its site and ring tables"
                                        : NULL;
    if (why) {
        ember_follow_close(f);
        return ember_diag_set(d, -EINVAL, path, 0, "not a valid ember trace: %s", why);
    }
    f->drain = (f->hdr.flags & EMBER_RING_DRAIN) && writable;
    ember_ns_scale_init(&f->scale, f->hdr.ticks_per_sec);
    f->rings = calloc(f->hdr.ring_count, sizeof(*f->rings));
    f->buf = malloc(f->hdr.packet_size);
    if (!f->rings || !f->buf) {
        ember_follow_close(f);
        return -ENOMEM;
    }
    if (f->drain)
        __atomic_store_n(&f->h->consumer, (uint64_t)getpid(), __ATOMIC_RELEASE);
    *out = f;
    return 0;
}

void ember_follow_close(struct ember_follow *f)
{
    if (!f)
        return;
    if (f->map) {
        if (f->drain)
            __atomic_store_n(&f->h->consumer, 0, __ATOMIC_RELEASE);
        munmap(f->map, f->size);
    }
    if (f->fd >= 0)
        close(f->fd);
    ember_sites_release(&f->sites);
    free(f->rings);
    free(f->buf);
    free(f->batch);
    free(f->strs);
    free(f);
}

bool ember_follow_cut_short(const struct ember_follow *f, uint64_t *size, uint64_t *expected)
{
    *size = f->size;
    *expected = ember_ring_file_end(&f->hdr);
    return *size < *expected;
}

bool ember_follow_writer_alive(const struct ember_follow *f)
{
    return kill((pid_t)f->hdr.pid, 0) == 0 || errno == EPERM;
}

unsigned ember_follow_ring_count(const struct ember_follow *f)
{
    return f->nrings;
}

const struct ember_trace_ring *ember_follow_ring(const struct ember_follow *f, unsigned i)
{
    return i < f->nrings ? &f->rings[i].info : NULL;
}

static struct ember_ring_desc *desc(const struct ember_follow *f, unsigned i)
{
    return (struct ember_ring_desc *)(void *)(f->map + f->hdr.rings_offset +
                                              (size_t)i * EMBER_RING_DESC_SIZE);
}

static int batch_event(struct ember_follow *f, const struct ember_trace_event *e)
{
    if (EMBER_VEC_RESERVE(f->batch, f->bcap, f->nbatch + 1) < 0)
        return -ENOMEM;
    struct batched *b = &f->batch[f->nbatch++];
    b->e = *e;
    for (unsigned i = 0; i < e->site->nfields; i++) {
        if (e->site->field_types[i] != EMBER_FT_STR)
            continue;
        size_t n = strlen(e->v[i].s) + 1;
        if (EMBER_VEC_RESERVE(f->strs, f->scap, f->nstrs + n) < 0)
            return -ENOMEM;
        memcpy(f->strs + f->nstrs, e->v[i].s, n);
        b->str_off[i] = f->nstrs;
        f->nstrs += n;
    }
    return 0;
}

static int batch_cmp(const void *va, const void *vb)
{
    const struct batched *a = va, *b = vb;
    if (a->e.ticks != b->e.ticks)
        return a->e.ticks < b->e.ticks ? -1 : 1;
    if (a->e.ring != b->e.ring)
        return a->e.ring < b->e.ring ? -1 : 1;
    return a->e.seq < b->e.seq ? -1 : a->e.seq > b->e.seq;
}

/* Packet s of ring r is cut (whole or in part): the file ends in it. */
static void note_cut(struct follow_ring *r, uint64_t s)
{
    if (!r->info.cut || s < r->info.cut_first)
        r->info.cut_first = s;
    if (!r->info.cut || s > r->info.cut_last)
        r->info.cut_last = s;
    r->info.cut++;
    r->cut_gap = true;
}

/* Reads ring i: events to the batch, packets to pfn. With whole, only
 * closed packets are taken (the open one is left for a later poll). A
 * packet the file ends in (a file cut short) gives its whole events. */
static int poll_ring(struct ember_follow *f, unsigned i, ember_trace_packet_fn pfn, void *pctx,
                     bool whole)
{
    struct follow_ring *r = &f->rings[i];
    struct ember_ring_desc *d = desc(f, i);
    uint64_t P = f->hdr.packet_size, N = f->hdr.packets_per_ring;
    r->info.tid = d->tid;
    memcpy(r->info.name, d->name, sizeof(d->name));
    r->info.name[sizeof(d->name) - 1] = '\0';
    uint64_t ring = f->hdr.data_offset + (uint64_t)i * P * N;
    int err = 0;
    for (;;) {
        uint64_t head = __atomic_load_n(&d->head, __ATOMIC_ACQUIRE);
        /* no writer gets to 2^62 bytes; past it, positions could wrap */
        if (r->pos >= head || head >> 62 || err)
            break;
        uint64_t s = r->pos / P, last = (head - 1) / P;
        if (last + 2 > s + N) {
            /* lapped: skip to the oldest packet the writer cannot reach now */
            r->pos = (last + 2 - N) * P;
            continue;
        }
        bool closed = s < last;
        if (whole && !closed)
            break;
        uint64_t have = ember_ring_in_file(ring + (s % N) * P, P, f->size);
        if (have < EMBER_PACKET_HEADER) {
            note_cut(r, s);
            r->pos = (s + 1) * P;
            continue;
        }
        memcpy(f->buf, f->map + ring + (s % N) * P, have);
        /* as a seqlock reader: the copy is done before head is read again */
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        uint64_t head2 = __atomic_load_n(&d->head, __ATOMIC_ACQUIRE);
        if ((head2 - 1) / P + 2 > s + N)
            continue; /* overwritten while copied: go round again */
        struct ember_packet_header ph;
        memcpy(&ph, f->buf, sizeof(ph));
        uint64_t end = closed ? ph.ctx.content_size / 8 : head - s * P;
        if (ph.magic != EMBER_CTF_MAGIC || ph.ctx.packet_seq_num != s ||
            end < EMBER_PACKET_HEADER || end > P) {
            r->pos = (s + 1) * P; /* not a packet we can use */
            continue;
        }
        uint64_t off = r->pos - s * P;
        if (off < EMBER_PACKET_HEADER) {
            off = EMBER_PACKET_HEADER;
            if (ph.ctx.event_seq_begin > r->next_seq) {
                uint64_t gap = ph.ctx.event_seq_begin - r->next_seq;
                /* after a packet read, they were in the packets cut; before,
                 * overwritten events may be among them: lost, as they are */
                if (r->cut_gap && r->info.packets)
                    r->info.cut_events += gap;
                else
                    r->overwritten += gap;
            }
            r->cut_gap = false;
            r->next_seq = ph.ctx.event_seq_begin;
            r->info.packets++;
        }
        if (end > have) { /* the file ends in this packet */
            note_cut(r, s);
            end = ember_ring_whole_events(f->buf, have);
            closed = true;
        }
        while (off < end && !err) {
            struct ember_trace_event e;
            size_t sz = ember_event_decode(&f->sites, f->buf + off, end - off, &e);
            if (!sz) {
                /* the open packet: a site not yet in our table, read again
                 * next poll; a closed one is damaged (it never changes) */
                err = closed ? -EINVAL : 0;
                break;
            }
            e.ring = i;
            e.tid = r->info.tid;
            e.seq = r->next_seq++;
            int64_t dt = (int64_t)(e.ticks - f->hdr.base_ticks);
            e.ns = ember_ticks_to_ns(&f->scale, dt);
            r->info.events++;
            err = batch_event(f, &e);
            off += sz;
        }
        if (!err && pfn) {
            ph.ctx.content_size = off * 8; /* events_discarded stays the writer's */
            memcpy(f->buf, &ph, sizeof(ph));
            err = pfn(pctx, i, f->buf, (size_t)off);
        }
        r->pos = off >= end && closed ? (s + 1) * P : s * P + off;
        if (f->drain)
            __atomic_store_n(&d->tail, closed && off >= end ? (s + 1) * P : s * P,
                             __ATOMIC_RELEASE);
        if (off < end && !closed)
            break;
    }
    r->info.lost = r->overwritten + __atomic_load_n(&d->dropped, __ATOMIC_ACQUIRE);
    return err;
}

int ember_follow_poll(struct ember_follow *f, ember_trace_event_fn fn, void *ctx,
                      ember_trace_packet_fn pfn, void *pctx, bool final)
{
    uint32_t used = __atomic_load_n(&f->h->strings_used, __ATOMIC_ACQUIRE);
    if (used > f->hdr.strings_size)
        return -EINVAL;
    int err = ember_sites_update(&f->sites, f->map + f->hdr.strings_offset, used);
    if (err)
        return err;
    uint32_t claimed = __atomic_load_n(&f->h->rings_claimed, __ATOMIC_ACQUIRE);
    f->nrings = claimed < f->hdr.ring_count ? claimed : f->hdr.ring_count;
    f->nbatch = 0;
    f->nstrs = 0;
    for (unsigned i = 0; i < f->nrings && !err; i++)
        err = poll_ring(f, i, pfn, pctx, pfn && !final);
    if (err)
        return err;
    if (f->nbatch)
        qsort(f->batch, f->nbatch, sizeof(*f->batch), batch_cmp);
    for (size_t k = 0; k < f->nbatch && fn && !err; k++) {
        struct ember_trace_event *e = &f->batch[k].e;
        for (unsigned i = 0; i < e->site->nfields; i++)
            if (e->site->field_types[i] == EMBER_FT_STR)
                e->v[i].s = f->strs + f->batch[k].str_off[i];
        err = fn(ctx, e);
    }
    return err ? err : (int)(f->nbatch > INT32_MAX ? INT32_MAX : f->nbatch);
}

/* The header and tables as they are now, for `ember record`'s log. */
const void *ember_follow_header(const struct ember_follow *f, size_t *strings_used)
{
    *strings_used = __atomic_load_n(&f->h->strings_used, __ATOMIC_ACQUIRE);
    return f->map;
}
