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
 */
#include "ember/trace.h"
#include "wire/ring_format.h"

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

/* What a thread knows beyond the fast path's fields. */
struct thread_state {
    uint32_t epoch; /* the file its ring is in; 0: none */
    int ring;       /* valid when epoch is set and not untraced */
    bool full;      /* drain mode: waiting for the consumer */
    bool untraced;  /* no ring left for this thread in this file */
    char *base;     /* the open packet */
    uint64_t seq;   /* its sequence number */
    char name[56];
};
static __thread struct thread_state ts_ __attribute__((tls_model("initial-exec")));

/* The current file. Written under lock; read by the slow paths, which
 * compare epochs before touching a ring. */
static struct {
    pthread_mutex_t lock;
    uint32_t epoch;
    char path[4096];
    char *map;
    size_t map_size;
    struct ember_ring_header *h;
    bool tsc;
    /* the site table, as in every file */
    char *sites;
    size_t sites_used, sites_cap;
    pthread_key_t key;
    bool key_made;
    struct ember_trace_opts opts;
    char base_path[4096]; /* as given: forks derive their file from it */
    bool from_env;        /* started by EMBER_TRACE: say why it stops */
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

enum { SITES_SIZE = 1 << 20 };

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

static uint64_t clock_ns(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* An invariant TSC ticks at a constant rate on every core and in every
 * power state; then it is the clock (2-3x cheaper than clock_gettime).
 * Its rate is measured against CLOCK_MONOTONIC over a few milliseconds. */
static bool calibrate(uint64_t *hz)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (getenv("EMBER_TRACE_NO_TSC") || !__get_cpuid(0x80000007, &a, &b, &c, &d) ||
        !(d & (1u << 8)))
        return false;
    uint64_t n0 = clock_ns(CLOCK_MONOTONIC), t0 = __rdtsc(), n1, t1;
    do {
        n1 = clock_ns(CLOCK_MONOTONIC);
        t1 = __rdtsc();
    } while (n1 - n0 < 5000000);
    if (t1 <= t0)
        return false;
    *hz = (uint64_t)((double)(t1 - t0) * 1e9 / (double)(n1 - n0));
    return *hz > 0;
#else
    (void)hz;
    return false;
#endif
}

/* ---- the file --------------------------------------------------------- */

/* "%p" becomes the pid. */
static void expand_path(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = in; *p && o + 16 < cap; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(out + o, cap - o, "%d", (int)getpid());
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

/* A new file that did not exist: path, or path.1, path.2, ... */
static int create_file(const char *path, char *used, size_t cap)
{
    for (int n = 0; n < 1000; n++) {
        if (n == 0)
            snprintf(used, cap, "%s", path);
        else
            snprintf(used, cap, "%s.%d", path, n);
        int fd = open(used, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd < 0 ? -errno : fd;
    }
    return -EEXIST;
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

static void fill_uuid(uint8_t *u)
{
    uint64_t a = clock_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 32);
    uint64_t b = clock_ns(CLOCK_MONOTONIC) * 0x9E3779B97F4A7C15ULL;
    memcpy(u, &a, 8);
    memcpy(u + 8, &b, 8);
    u[6] = (uint8_t)((u[6] & 0x0f) | 0x40); /* a version 4 UUID */
    u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
}

static void thread_exit(void *unused);

/* Creates and maps the file; the caller holds the lock. */
static int open_file(const char *path)
{
    const struct ember_trace_opts *o = &g.opts;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t packet = round_up(o->packet_bytes ? o->packet_bytes : 64 << 10, page);
    size_t ring = round_up(o->ring_bytes ? o->ring_bytes : 1 << 20, packet);
    unsigned rings = o->max_threads ? o->max_threads : 256;
    if (ring / packet < 2)
        ring = 2 * packet;
    size_t rings_off = EMBER_RING_HEADER_SIZE + SITES_SIZE;
    size_t data_off = round_up(rings_off + (size_t)rings * EMBER_RING_DESC_SIZE, page);
    size_t total = data_off + (size_t)rings * ring;

    char used[sizeof(g.path)];
    int fd = create_file(path, used, sizeof(used));
    if (fd < 0)
        return fd;
    if (ftruncate(fd, (off_t)total) < 0) {
        int err = -errno;
        close(fd);
        unlink(used);
        return err;
    }
    char *map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        unlink(used);
        return -ENOMEM;
    }
    struct ember_ring_header *h = (struct ember_ring_header *)(void *)map;
    uint64_t hz = 1000000000;
    g.tsc = calibrate(&hz);
    h->version = EMBER_RING_VERSION;
    h->header_size = EMBER_RING_HEADER_SIZE;
    h->pid = (uint32_t)getpid();
    h->ppid = (uint32_t)getppid();
    h->ring_count = rings;
    h->packets_per_ring = (uint32_t)(ring / packet);
    h->packet_size = (uint32_t)packet;
    h->flags = (g.tsc ? EMBER_RING_TSC : 0) | (o->drain ? EMBER_RING_DRAIN : 0);
    h->ticks_per_sec = hz;
    h->base_mono_ns = clock_ns(CLOCK_MONOTONIC);
    h->base_real_ns = clock_ns(CLOCK_REALTIME);
    h->base_ticks = g.tsc ? __rdtsc() : h->base_mono_ns;
    h->strings_offset = EMBER_RING_HEADER_SIZE;
    h->strings_size = SITES_SIZE;
    h->rings_offset = rings_off;
    h->data_offset = data_off;
    fill_uuid(h->uuid);
    ssize_t n = readlink("/proc/self/exe", h->exe, sizeof(h->exe) - 1);
    if (n < 0)
        h->exe[0] = '\0';
    /* the sites registered so far keep their ids */
    memcpy(map + EMBER_RING_HEADER_SIZE, g.sites, g.sites_used);
    h->strings_used = (uint32_t)g.sites_used;
    __atomic_store_n(&h->magic, EMBER_RING_MAGIC, __ATOMIC_RELEASE);

    g.map = map;
    g.map_size = total;
    g.h = h;
    snprintf(g.path, sizeof(g.path), "%s", used);
    __atomic_store_n(&g.epoch, g.epoch + 1, __ATOMIC_RELEASE);
    return 0;
}

/* One line, in one write: a traced program may have threads printing. */
static void say_tracing_off(const char *path, int err)
{
    char line[sizeof(g.path) + 128];
    int n = snprintf(line, sizeof(line), "ember-trace: cannot create %s: %s; tracing is off\n",
                     path, strerror(-err));
    if (n > 0) {
        ssize_t w =
            write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
        (void)w; /* stderr closed: nobody to tell */
    }
}

static void at_fork_prepare(void)
{
    pthread_mutex_lock(&g.lock);
}

static void at_fork_parent(void)
{
    pthread_mutex_unlock(&g.lock);
}

/* The child traces into a file of its own, keeping the parent's sites. */
static void at_fork_child(void)
{
    pthread_mutex_init(&g.lock, NULL);
    memset(&ember__w, 0, sizeof(ember__w));
    ts_.epoch = 0;
    if (!ember__on)
        return;
    char path[sizeof(g.path)], child[sizeof(g.path) + 16];
    expand_path(g.base_path, path, sizeof(path));
    if (strcmp(path, g.base_path) == 0) /* no %p: say which process it is */
        snprintf(child, sizeof(child), "%s.%d", path, (int)getpid());
    else
        snprintf(child, sizeof(child), "%s", path);
    int err = open_file(child);
    if (err < 0) {
        __atomic_store_n(&ember__on, 0, __ATOMIC_RELEASE);
        if (g.from_env)
            say_tracing_off(child, err);
    }
}

static void register_fork(void)
{
    pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
}

int ember_trace_start(const char *path, const struct ember_trace_opts *opts)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork);
    if (!path || !*path)
        return -EINVAL;
    pthread_mutex_lock(&g.lock);
    if (opts)
        g.opts = *opts;
    if (!g.key_made && pthread_key_create(&g.key, thread_exit) == 0)
        g.key_made = true;
    if (!g.sites) {
        g.sites = calloc(1, SITES_SIZE);
        g.sites_cap = g.sites ? SITES_SIZE : 0;
    }
    snprintf(g.base_path, sizeof(g.base_path), "%s", path);
    char expanded[sizeof(g.path)];
    expand_path(path, expanded, sizeof(expanded));
    int err = g.sites ? open_file(expanded) : -ENOMEM;
    if (!err)
        __atomic_store_n(&ember__on, g.tsc ? 1 : 2, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g.lock);
    return err;
}

void ember_trace_stop(void)
{
    __atomic_store_n(&ember__on, 0, __ATOMIC_RELEASE);
}

const char *ember_trace_path(void)
{
    return ember__on ? g.path : "";
}

/* EMBER_TRACE=PATH starts tracing before main. */
__attribute__((constructor)) static void trace_from_environment(void)
{
    const char *path = getenv("EMBER_TRACE");
    if (!path || !*path)
        return;
    struct ember_trace_opts o = {0};
    const char *v;
    if ((v = getenv("EMBER_TRACE_RING")))
        o.ring_bytes = strtoull(v, NULL, 0);
    if ((v = getenv("EMBER_TRACE_PACKET")))
        o.packet_bytes = strtoull(v, NULL, 0);
    if ((v = getenv("EMBER_TRACE_THREADS")))
        o.max_threads = (unsigned)strtoul(v, NULL, 0);
    if ((v = getenv("EMBER_TRACE_MODE")))
        o.drain = strcmp(v, "drain") == 0;
    g.from_env = true;
    int err = ember_trace_start(path, &o);
    if (err < 0) {
        char expanded[sizeof(g.path)];
        expand_path(path, expanded, sizeof(expanded));
        say_tracing_off(expanded, err);
    }
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
    pthread_mutex_lock(&g.lock);
    uint32_t id = site->id;
    if (id || !g.sites) {
        pthread_mutex_unlock(&g.lock);
        return id;
    }
    size_t nlen = strnlen(site->name ? site->name : "", EMBER_NAME_MAX);
    size_t size = sizeof(struct ember_site_record) + nlen;
    unsigned nf = site->nfields > EMBER_MAX_FIELDS ? EMBER_MAX_FIELDS : site->nfields;
    for (unsigned i = 0; i < nf; i++)
        size += 2 + strnlen(field_name(site, i), EMBER_NAME_MAX);
    size = round_up(size, 8);
    if (g.sites_used + size <= g.sites_cap) {
        char *r = g.sites + g.sites_used;
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
        id = (uint32_t)(g.sites_used / 8 + 1);
        if (g.h && g.sites_used + size <= g.h->strings_size) {
            memcpy(g.map + g.h->strings_offset + g.sites_used, r, size);
            __atomic_store_n(&g.h->strings_used, (uint32_t)(g.sites_used + size), __ATOMIC_RELEASE);
        }
        g.sites_used += size;
        site->nfields = (uint8_t)nf;
        site->schema = NULL; /* may point at a caller's stack: types[] has what is needed */
        __atomic_store_n(&site->id, id, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g.lock);
    return id;
}

/* ---- rings ------------------------------------------------------------ */

static struct ember_ring_desc *desc_of(int ring)
{
    return (struct ember_ring_desc *)(void *)(g.map + g.h->rings_offset +
                                              (size_t)ring * EMBER_RING_DESC_SIZE);
}

static char *ring_base(int ring)
{
    return g.map + g.h->data_offset +
           (size_t)ring * g.h->packets_per_ring * (size_t)g.h->packet_size;
}

static void close_packet(void)
{
    struct ember_packet_header *ph = (struct ember_packet_header *)(void *)ts_.base;
    if (!ph)
        return;
    ph->ctx.timestamp_end = ember__w.last;
    ph->ctx.content_size = (uint64_t)(ember__w.pos - ts_.base) * 8;
}

/* Starts packet ts_.seq at time t; false if drain mode finds it not free. */
static bool open_packet(uint64_t t)
{
    struct ember_ring_header *h = g.h;
    struct ember_ring_desc *d = desc_of(ts_.ring);
    uint64_t P = h->packet_size, N = h->packets_per_ring;
    if (h->flags & EMBER_RING_DRAIN) {
        /* the slot must have been read: the packet before it in the slot
         * ended at (seq - N + 1) * P */
        uint64_t tail = __atomic_load_n(&d->tail, __ATOMIC_ACQUIRE);
        if (ts_.seq >= N && (ts_.seq - N + 1) * P > tail)
            return false;
    }
    char *base = ring_base(ts_.ring) + (ts_.seq % N) * P;
    struct ember_packet_header *ph = (struct ember_packet_header *)(void *)base;
    ph->magic = EMBER_CTF_MAGIC;
    memcpy(ph->uuid, h->uuid, sizeof(ph->uuid));
    ph->stream_id = 0;
    ph->ctx = (struct ember_packet_context){
        .timestamp_begin = t,
        .packet_size = P * 8,
        .packet_seq_num = ts_.seq,
        .events_discarded = d->dropped,
        .event_seq_begin = ember__w.count,
        .tid = d->tid,
    };
    ts_.base = base;
    ember__w.pos = base + EMBER_PACKET_HEADER;
    ember__w.end = base + P;
    ember__w.delta = ts_.seq * P - (uint64_t)(uintptr_t)base;
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
    uint32_t epoch = __atomic_load_n(&g.epoch, __ATOMIC_ACQUIRE);
    if (ts_.epoch == epoch)
        return !ts_.untraced;
    pthread_mutex_lock(&g.lock);
    struct ember_ring_header *h = g.h;
    if (ts_.epoch && !ts_.untraced && ts_.epoch != g.epoch)
        close_packet(); /* the old file's packet ends here */
    memset(&ember__w, 0, sizeof(ember__w));
    ts_.epoch = g.epoch;
    ts_.base = NULL;
    ts_.full = false;
    uint32_t r = __atomic_fetch_add(&h->rings_claimed, 1, __ATOMIC_ACQ_REL);
    ts_.untraced = r >= h->ring_count;
    if (!ts_.untraced) {
        ts_.ring = (int)r;
        prefault(ring_base(ts_.ring), (size_t)h->packets_per_ring * h->packet_size);
        struct ember_ring_desc *d = desc_of(ts_.ring);
        d->tid = gettid_();
        memcpy(d->name, ts_.name, sizeof(d->name));
        __atomic_store_n(&d->state, 1, __ATOMIC_RELEASE);
        ts_.seq = 0;
        ember__w.head = &d->head;
        if (g.key_made)
            pthread_setspecific(g.key, &ts_);
    }
    pthread_mutex_unlock(&g.lock);
    return !ts_.untraced;
}

/* Room for size bytes in the ring; false if the event must be dropped. */
static bool make_room(unsigned size, uint64_t t)
{
    if (!ember__on || !claim_ring())
        return false;
    if (ember__w.pos && ember__w.pos + size <= ember__w.end)
        return true;
    if (size > g.h->packet_size - EMBER_PACKET_HEADER)
        return false;
    if (ts_.base && !ts_.full) {
        close_packet();
        ts_.seq++;
    }
    if (!open_packet(t)) {
        /* drain mode, ring full: drop until the consumer catches up */
        struct ember_ring_desc *d = desc_of(ts_.ring);
        __atomic_store_n(&d->dropped, d->dropped + 1, __ATOMIC_RELEASE);
        ts_.full = true;
        ember__w.pos = ember__w.end = NULL;
        return false;
    }
    ts_.full = false;
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
        pthread_mutex_lock(&g.lock);
        if (!site->id && !site->schema) {
            site->schema = f; /* the first call's names and types */
            site->nfields = (uint8_t)n;
        }
        pthread_mutex_unlock(&g.lock);
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
    snprintf(ts_.name, sizeof(ts_.name), "%s", name ? name : "");
    if (ember__on && ts_.epoch == g.epoch && !ts_.untraced)
        memcpy(desc_of(ts_.ring)->name, ts_.name, sizeof(ts_.name));
}

/* A thread that ends closes its packet and its ring. */
static void thread_exit(void *unused)
{
    (void)unused;
    if (!ts_.epoch || ts_.untraced || ts_.epoch != g.epoch || !g.h)
        return;
    close_packet();
    __atomic_store_n(&desc_of(ts_.ring)->state, 2, __ATOMIC_RELEASE);
}
