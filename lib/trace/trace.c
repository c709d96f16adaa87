/*
 * trace.c - the tracing runtime: the ring file, threads' rings, call sites,
 * and the slow paths of include/ember/trace.h (the fast path is inline
 * there). See lib/wire/ring_format.h for the file.
 *
 * Invariants:
 * - each ring has exactly one writer, its thread; nothing here takes a lock
 *   on the event path. The only lock guards site registration and thread
 *   registration, which happen once per call site and once per thread;
 * - the registry of sites lives in process memory too, and every new file
 *   (ember_trace_start, or a child after fork) starts with a copy of it, so
 *   a site keeps its id for the life of the process;
 * - files are created 0600 with O_EXCL|O_NOFOLLOW: a file that exists is
 *   never written to; mappings are never unmapped while the process runs
 *   (another thread may still be writing to an old one until its packet
 *   fills);
 * - the library prints one thing only: when EMBER_TRACE (the user's
 *   request, not the program's) names a file it cannot create, one line
 *   on stderr says why tracing is off, once per process. ember_trace_start
 *   called by the program returns the error instead.
 *
 * This file has the sites, the rings and the event paths; the file itself,
 * starting and stopping, forks and EMBER_TRACE are in trace_file.c.
 */
#include "trace/trace_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

int ember__on;
__thread struct ember__writer ember__w __attribute__((tls_model("initial-exec")));
__thread struct thread_state ember__ts __attribute__((tls_model("initial-exec")));

static uint32_t gettid_(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

uint64_t ember__clock(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- sites ------------------------------------------------------------ */

/* Counters name their one field "value"; other sites have a schema. */
static const char *field_name(const struct ember__site *site, unsigned i)
{
    if (!site->schema)
        return "value";
    return site->schema[i].name ? site->schema[i].name : "";
}

/* Appends the site's record to the registry (and the current file). */
uint32_t ember__register(struct ember__site *site)
{
    pthread_mutex_lock(&ember__g.lock);
    uint32_t id = site->id;
    if (id || !ember__g.sites) {
        pthread_mutex_unlock(&ember__g.lock);
        return id;
    }
    size_t nlen = strnlen(site->name ? site->name : "", EMBER_NAME_MAX);
    size_t size = sizeof(struct ember_site_record) + nlen;
    unsigned nf = site->nfields > EMBER_MAX_FIELDS ? EMBER_MAX_FIELDS : site->nfields;
    for (unsigned i = 0; i < nf; i++)
        size += 2 + strnlen(field_name(site, i), EMBER_NAME_MAX);
    size = round_up(size, 8);
    if (ember__g.sites_used + size <= ember__g.sites_cap) {
        char *r = ember__g.sites + ember__g.sites_used;
        struct ember_site_record rec = {(uint32_t)size, site->kind, (uint8_t)nf, (uint16_t)nlen};
        memcpy(r, &rec, sizeof(rec));
        char *p = r + sizeof(rec);
        memcpy(p, site->name ? site->name : "", nlen);
        p += nlen;
        for (unsigned i = 0; i < nf; i++) {
            const char *fn = field_name(site, i);
            size_t fl = strnlen(fn, EMBER_NAME_MAX);
            if (site->schema)
                site->types[i] = (uint8_t)site->schema[i].type;
            *p++ = (char)site->types[i];
            *p++ = (char)fl;
            memcpy(p, fn, fl);
            p += fl;
        }
        id = (uint32_t)(ember__g.sites_used / 8 + 1);
        if (ember__g.h && ember__g.sites_used + size <= ember__g.h->strings_size) {
            memcpy(ember__g.map + ember__g.h->strings_offset + ember__g.sites_used, r, size);
            __atomic_store_n(&ember__g.h->strings_used, (uint32_t)(ember__g.sites_used + size),
                             __ATOMIC_RELEASE);
        }
        ember__g.sites_used += size;
        site->nfields = (uint8_t)nf;
        site->schema = NULL; /* may point at a caller's stack: types[] has what is needed */
        __atomic_store_n(&site->id, id, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&ember__g.lock);
    return id;
}

/* ---- rings ------------------------------------------------------------ */

static struct ember_ring_desc *desc_of(int ring)
{
    return (struct ember_ring_desc *)(void *)(ember__g.map + ember__g.h->rings_offset +
                                              (size_t)ring * EMBER_RING_DESC_SIZE);
}

static char *ring_base(int ring)
{
    return ember__g.map + ember__g.h->data_offset +
           (size_t)ring * ember__g.h->packets_per_ring * (size_t)ember__g.h->packet_size;
}

static void close_packet(void)
{
    struct ember_packet_header *ph = (struct ember_packet_header *)(void *)ember__ts.base;
    if (!ph)
        return;
    ph->ctx.timestamp_end = ember__w.last;
    ph->ctx.content_size = (uint64_t)(ember__w.pos - ember__ts.base) * 8;
}

/* Starts packet ember__ts.seq at time t; false if drain mode finds it not free. */
static bool open_packet(uint64_t t)
{
    struct ember_ring_header *h = ember__g.h;
    struct ember_ring_desc *d = desc_of(ember__ts.ring);
    uint64_t P = h->packet_size, N = h->packets_per_ring;
    if (h->flags & EMBER_RING_DRAIN) {
        /* the slot must have been read: the packet before it in the slot
         * ended at (seq - N + 1) * P */
        uint64_t tail = __atomic_load_n(&d->tail, __ATOMIC_ACQUIRE);
        if (ember__ts.seq >= N && (ember__ts.seq - N + 1) * P > tail)
            return false;
    }
    char *base = ring_base(ember__ts.ring) + (ember__ts.seq % N) * P;
    struct ember_packet_header *ph = (struct ember_packet_header *)(void *)base;
    ph->magic = EMBER_CTF_MAGIC;
    memcpy(ph->uuid, h->uuid, sizeof(ph->uuid));
    ph->stream_id = 0;
    ph->ctx = (struct ember_packet_context){
        .timestamp_begin = t,
        .packet_size = P * 8,
        .packet_seq_num = ember__ts.seq,
        .events_discarded = d->dropped,
        .event_seq_begin = ember__w.count,
        .tid = d->tid,
    };
    ember__ts.base = base;
    ember__w.pos = base + EMBER_PACKET_HEADER;
    ember__w.end = base + P;
    ember__w.delta = ember__ts.seq * P - (uint64_t)(uintptr_t)base;
    return true;
}

/* Makes the writer's pages present now: first-touch faults would cost
 * several times an event each. */
static void prefault(char *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, n, MADV_POPULATE_WRITE) == 0)
        return;
#endif
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < n; i += page)
        __atomic_store_n(p + i, 0, __ATOMIC_RELAXED);
}

/* Gives the calling thread a ring in the current file. */
static bool claim_ring(void)
{
    uint32_t epoch = __atomic_load_n(&ember__g.epoch, __ATOMIC_ACQUIRE);
    if (ember__ts.epoch == epoch)
        return !ember__ts.untraced;
    pthread_mutex_lock(&ember__g.lock);
    struct ember_ring_header *h = ember__g.h;
    if (ember__ts.epoch && !ember__ts.untraced && ember__ts.epoch != ember__g.epoch)
        close_packet(); /* the old file's packet ends here */
    memset(&ember__w, 0, sizeof(ember__w));
    ember__ts.epoch = ember__g.epoch;
    ember__ts.base = NULL;
    ember__ts.full = false;
    uint32_t r = __atomic_fetch_add(&h->rings_claimed, 1, __ATOMIC_ACQ_REL);
    ember__ts.untraced = r >= h->ring_count;
    if (!ember__ts.untraced) {
        ember__ts.ring = (int)r;
        prefault(ring_base(ember__ts.ring), (size_t)h->packets_per_ring * h->packet_size);
        struct ember_ring_desc *d = desc_of(ember__ts.ring);
        d->tid = gettid_();
        memcpy(d->name, ember__ts.name, sizeof(d->name));
        __atomic_store_n(&d->state, 1, __ATOMIC_RELEASE);
        ember__ts.seq = 0;
        ember__w.head = &d->head;
        if (ember__g.key_made)
            pthread_setspecific(ember__g.key, &ember__ts);
    }
    pthread_mutex_unlock(&ember__g.lock);
    return !ember__ts.untraced;
}

/* Room for size bytes in the ring; false if the event must be dropped. */
static bool make_room(unsigned size, uint64_t t)
{
    if (!ember__on || !claim_ring())
        return false;
    if (ember__w.pos && ember__w.pos + size <= ember__w.end)
        return true;
    if (size > ember__g.h->packet_size - EMBER_PACKET_HEADER)
        return false;
    if (ember__ts.base && !ember__ts.full) {
        close_packet();
        ember__ts.seq++;
    }
    if (!open_packet(t)) {
        /* drain mode, ring full: drop until the consumer catches up */
        struct ember_ring_desc *d = desc_of(ember__ts.ring);
        __atomic_store_n(&d->dropped, d->dropped + 1, __ATOMIC_RELEASE);
        ember__ts.full = true;
        ember__w.pos = ember__w.end = NULL;
        return false;
    }
    ember__ts.full = false;
    return true;
}

static void commit(char *p, unsigned size, uint64_t t)
{
    ember__w.pos = p + size;
    ember__w.count++;
    ember__w.last = t;
    __atomic_store_n(ember__w.head, (uint64_t)(uintptr_t)(p + size) + ember__w.delta,
                     __ATOMIC_RELEASE);
}

void ember__emit_slow(struct ember__site *site, uint64_t value)
{
    if (!ember__on)
        return;
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
    if (!id && !(id = ember__register(site)))
        return;
    unsigned size = site->kind == EMBER__COUNTER ? 24 : 16;
    uint64_t t = ember__now();
    if (!make_room(size, t))
        return;
    uint64_t *e = (uint64_t *)(void *)ember__w.pos;
    e[0] = (uint64_t)id | (uint64_t)size << 32;
    e[1] = t;
    if (size == 24)
        e[2] = value;
    commit(ember__w.pos, size, t);
}

void ember__emit_fields(struct ember__site *site, const struct ember_field *f, unsigned n)
{
    if (!ember__on)
        return;
    if (n > EMBER_MAX_FIELDS)
        n = EMBER_MAX_FIELDS;
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
    if (!id) {
        pthread_mutex_lock(&ember__g.lock);
        if (!site->id && !site->schema) {
            site->schema = f; /* the first call's names and types */
            site->nfields = (uint8_t)n;
        }
        pthread_mutex_unlock(&ember__g.lock);
        if (!(id = ember__register(site)))
            return;
    }
    if (n > site->nfields)
        n = site->nfields;
    char buf[EMBER_EVENT_HEADER + EMBER_MAX_FIELDS * (EMBER_MAX_STR + 8)];
    size_t size = EMBER_EVENT_HEADER;
    for (unsigned i = 0; i < n; i++) {
        int type = site->types[i];
        if (type == EMBER_FT_STR) {
            const char *s = f[i].type == EMBER_FT_STR && f[i].v.s ? f[i].v.s : "";
            size_t len = strnlen(s, EMBER_MAX_STR);
            size_t padded = round_up(len + 1, 8);
            memset(buf + size + len, 0, padded - len);
            memcpy(buf + size, s, len);
            size += padded;
        } else {
            uint64_t v = 0;
            if (type == EMBER_FT_F64)
                v = f[i].type == EMBER_FT_F64 ? ember__f64_bits(f[i].v.f)
                                              : ember__f64_bits((double)f[i].v.i);
            else
                v = f[i].type == EMBER_FT_F64 ? (uint64_t)(int64_t)f[i].v.f : (uint64_t)f[i].v.i;
            memcpy(buf + size, &v, 8);
            size += 8;
        }
    }
    /* a schema with more fields than given: zeros */
    for (unsigned i = n; i < site->nfields && i < EMBER_MAX_FIELDS; i++) {
        memset(buf + size, 0, 8);
        size += 8;
    }
    uint64_t t = ember__now();
    if (!make_room((unsigned)size, t))
        return;
    uint64_t hdr = (uint64_t)id | (uint64_t)size << 32;
    memcpy(buf, &hdr, 8);
    memcpy(buf + 8, &t, 8);
    memcpy(ember__w.pos, buf, size);
    commit(ember__w.pos, (unsigned)size, t);
}

void ember_thread_name(const char *name)
{
    snprintf(ember__ts.name, sizeof(ember__ts.name), "%s", name ? name : "");
    if (ember__on && ember__ts.epoch == ember__g.epoch && !ember__ts.untraced)
        memcpy(desc_of(ember__ts.ring)->name, ember__ts.name, sizeof(ember__ts.name));
}

/* A thread that ends closes its packet and its ring. */
void ember__thread_exit(void *unused)
{
    (void)unused;
    if (!ember__ts.epoch || ember__ts.untraced || ember__ts.epoch != ember__g.epoch || !ember__g.h)
        return;
    close_packet();
    __atomic_store_n(&desc_of(ember__ts.ring)->state, 2, __ATOMIC_RELEASE);
}
