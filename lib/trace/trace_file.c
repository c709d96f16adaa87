/*
 * trace_file.c - the tracing runtime's file: creating and mapping it
 * (lib/wire/ring_format.h's layout), the clock it records (an invariant TSC,
 * else CLOCK_MONOTONIC), starting and stopping, a forked child's own file,
 * and EMBER_TRACE before main. Cold paths only: the event paths are in
 * trace.c.
 *
 * Invariants: files are created 0600 with O_EXCL|O_NOFOLLOW and never
 * unmapped; every new file starts with the sites registered so far; the
 * only thing printed is EMBER_TRACE's one line when tracing is off.
 */
#include "trace/trace_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

/* Defined here, not in trace.c: every program that traces uses it, so a
 * static link always takes this file too, and with it EMBER_TRACE's
 * constructor. */
struct trace_file ember__g = {.lock = PTHREAD_MUTEX_INITIALIZER};

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

static void fill_uuid(uint8_t *u)
{
    uint64_t a = clock_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 32);
    uint64_t b = clock_ns(CLOCK_MONOTONIC) * 0x9E3779B97F4A7C15ULL;
    memcpy(u, &a, 8);
    memcpy(u + 8, &b, 8);
    u[6] = (uint8_t)((u[6] & 0x0f) | 0x40); /* a version 4 UUID */
    u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
}

/* Creates and maps the file; the caller holds the lock. */
static int open_file(const char *path)
{
    const struct ember_trace_opts *o = &ember__g.opts;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t packet = round_up(o->packet_bytes ? o->packet_bytes : 64 << 10, page);
    size_t ring = round_up(o->ring_bytes ? o->ring_bytes : 1 << 20, packet);
    unsigned rings = o->max_threads ? o->max_threads : 256;
    if (ring / packet < 2)
        ring = 2 * packet;
    size_t rings_off = EMBER_RING_HEADER_SIZE + SITES_SIZE;
    size_t data_off = round_up(rings_off + (size_t)rings * EMBER_RING_DESC_SIZE, page);
    size_t total = data_off + (size_t)rings * ring;

    char used[sizeof(ember__g.path)];
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
    ember__g.tsc = calibrate(&hz);
    h->version = EMBER_RING_VERSION;
    h->header_size = EMBER_RING_HEADER_SIZE;
    h->pid = (uint32_t)getpid();
    h->ppid = (uint32_t)getppid();
    h->ring_count = rings;
    h->packets_per_ring = (uint32_t)(ring / packet);
    h->packet_size = (uint32_t)packet;
    h->flags = (ember__g.tsc ? EMBER_RING_TSC : 0) | (o->drain ? EMBER_RING_DRAIN : 0);
    h->ticks_per_sec = hz;
    h->base_mono_ns = clock_ns(CLOCK_MONOTONIC);
    h->base_real_ns = clock_ns(CLOCK_REALTIME);
    h->base_ticks = ember__g.tsc ? __rdtsc() : h->base_mono_ns;
    h->strings_offset = EMBER_RING_HEADER_SIZE;
    h->strings_size = SITES_SIZE;
    h->rings_offset = rings_off;
    h->data_offset = data_off;
    fill_uuid(h->uuid);
    ssize_t n = readlink("/proc/self/exe", h->exe, sizeof(h->exe) - 1);
    if (n < 0)
        h->exe[0] = '\0';
    /* the sites registered so far keep their ids */
    memcpy(map + EMBER_RING_HEADER_SIZE, ember__g.sites, ember__g.sites_used);
    h->strings_used = (uint32_t)ember__g.sites_used;
    __atomic_store_n(&h->magic, EMBER_RING_MAGIC, __ATOMIC_RELEASE);

    ember__g.map = map;
    ember__g.map_size = total;
    ember__g.h = h;
    snprintf(ember__g.path, sizeof(ember__g.path), "%s", used);
    __atomic_store_n(&ember__g.epoch, ember__g.epoch + 1, __ATOMIC_RELEASE);
    return 0;
}

/* One line, in one write: a traced program may have threads printing. */
static void say_tracing_off(const char *path, int err)
{
    char line[sizeof(ember__g.path) + 128];
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
    pthread_mutex_lock(&ember__g.lock);
}

static void at_fork_parent(void)
{
    pthread_mutex_unlock(&ember__g.lock);
}

/* The child traces into a file of its own, keeping the parent's sites. */
static void at_fork_child(void)
{
    pthread_mutex_init(&ember__g.lock, NULL);
    memset(&ember__w, 0, sizeof(ember__w));
    ember__ts.epoch = 0;
    if (!ember__on)
        return;
    char path[sizeof(ember__g.path)], child[sizeof(ember__g.path) + 16];
    expand_path(ember__g.base_path, path, sizeof(path));
    if (strcmp(path, ember__g.base_path) == 0) /* no %p: say which process it is */
        snprintf(child, sizeof(child), "%s.%d", path, (int)getpid());
    else
        snprintf(child, sizeof(child), "%s", path);
    int err = open_file(child);
    if (err < 0) {
        __atomic_store_n(&ember__on, 0, __ATOMIC_RELEASE);
        if (ember__g.from_env)
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
    pthread_mutex_lock(&ember__g.lock);
    if (opts)
        ember__g.opts = *opts;
    if (!ember__g.key_made && pthread_key_create(&ember__g.key, ember__thread_exit) == 0)
        ember__g.key_made = true;
    if (!ember__g.sites) {
        ember__g.sites = calloc(1, SITES_SIZE);
        ember__g.sites_cap = ember__g.sites ? SITES_SIZE : 0;
    }
    snprintf(ember__g.base_path, sizeof(ember__g.base_path), "%s", path);
    char expanded[sizeof(ember__g.path)];
    expand_path(path, expanded, sizeof(expanded));
    int err = ember__g.sites ? open_file(expanded) : -ENOMEM;
    if (!err)
        __atomic_store_n(&ember__on, ember__g.tsc ? 1 : 2, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ember__g.lock);
    return err;
}

void ember_trace_stop(void)
{
    __atomic_store_n(&ember__on, 0, __ATOMIC_RELEASE);
}

const char *ember_trace_path(void)
{
    return ember__on ? ember__g.path : "";
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
    ember__g.from_env = true;
    int err = ember_trace_start(path, &o);
    if (err < 0) {
        char expanded[sizeof(ember__g.path)];
        expand_path(path, expanded, sizeof(expanded));
        say_tracing_off(expanded, err);
    }
}
