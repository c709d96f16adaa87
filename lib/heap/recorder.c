/*
 * recorder.c - the allocation recorder's file and records: starting from
 * the environment (EMBER_HEAP_DIR...), one file per process image, each
 * thread's stream of chunks, the records of lib/wire/heap_format.h, fork
 * and the END record.
 *
 * Invariants: no syscall on the event path but when a chunk fills (one
 * per chunk_size bytes of records); one atomic add per event (the
 * sequence number); a record's bytes are written before `used` moves past
 * them (release store), so a SIGKILL leaves every record below `used`
 * whole; chunks are claimed under chunk_lock, the file only grows; the
 * header's magic is stored last. A thread writes only its own chunk; a
 * fork's child starts a new file (its own pid) and forgets its parent's
 * chunks, stacks and modules.
 */
#include "heap/heap_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__thread struct heap_tls heap_tls HEAP_TLS;
struct heap_global heap_g = {.fd = -1, .chunk_lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key; /* its destructor unmaps an ending thread's chunk */

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The decimal digits of v at p: the end. */
static char *put_decimal(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* DIR/heap.PID.N, the first N free (O_EXCL): an exec'd image of the same
 * pid gets the next. */
static int create_file(void)
{
    char *path = heap_g.path;
    size_t n = strlen(heap_g.dir);
    memcpy(path, heap_g.dir, n);
    memcpy(path + n, "/heap.", 6);
    char *num = put_decimal(path + n + 6, (uint64_t)getpid());
    *num++ = '.';
    for (unsigned i = 0; i < 1000; i++) {
        *put_decimal(num, i) = '\0';
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

/* fd moved above the numbers a program uses (and expects free: some
 * close or dup2 onto the low ones). */
static int high_fd(int fd)
{
    if (fd < 0)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 1000);
    if (high < 0)
        return fd;
    close(fd);
    return high;
}

/* Our file's descriptor, checked before it grows: a program that closed it
 * (closing every descriptor it did not open is common) may have another
 * file under that number, which is never touched; ours is opened again
 * by its name. -1 when it is gone. */
static int file_fd(void)
{
    struct stat st;
    if (fstat(heap_g.fd, &st) == 0 && st.st_dev == heap_g.dev && st.st_ino == heap_g.ino)
        return heap_g.fd;
    int fd = high_fd(open(heap_g.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != heap_g.dev || st.st_ino != heap_g.ino)) {
        close(fd);
        fd = -1;
    }
    heap_g.fd = fd; /* the old number is the program's now */
    return fd;
}

/* A new file with its header, magic last; false when it cannot be made. */
static bool start_file(void)
{
    int fd = high_fd(create_file());
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    heap_g.dev = st.st_dev;
    heap_g.ino = st.st_ino;
    void *m = MAP_FAILED;
    if (ftruncate(fd, EMBER_HEAP_HEADER_SIZE) == 0)
        m = mmap(NULL, EMBER_HEAP_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        close(fd);
        return false;
    }
    struct ember_heap_header *h = m;
    h->version = EMBER_HEAP_VERSION;
    h->header_size = EMBER_HEAP_HEADER_SIZE;
    h->pid = (uint32_t)getpid();
    h->ppid = (uint32_t)getppid();
    h->chunk_size = heap_g.chunk_size;
    h->flags = heap_g.flags;
    h->sample_bytes = heap_g.sample_bytes;
    h->seed = heap_g.seed;
    h->start_mono_ns = clock_ns(CLOCK_MONOTONIC);
    h->start_real_ns = clock_ns(CLOCK_REALTIME);
    size_t n = strlen(heap_g.exe);
    memcpy(h->exe, heap_g.exe, n < sizeof(h->exe) - 1 ? n : sizeof(h->exe) - 1);
    __atomic_store_n(&h->magic, EMBER_HEAP_MAGIC, __ATOMIC_RELEASE);
    heap_g.fd = fd;
    heap_g.h = h;
    heap_g.gen++;
    return true;
}

static uint64_t env_u64(const char *name)
{
    const char *s = getenv(name);
    return s ? strtoull(s, NULL, 0) : 0;
}

/* The settings from the environment: false when recording is not asked. */
static bool read_env(void)
{
    const char *dir = getenv("EMBER_HEAP_DIR");
    if (!dir || !*dir || strlen(dir) >= sizeof(heap_g.dir))
        return false;
    strcpy(heap_g.dir, dir);
    heap_g.chunk_size = EMBER_HEAP_CHUNK_SIZE;
    uint64_t n = env_u64("EMBER_HEAP_SAMPLE_BYTES");
    if (n > 1) {
        heap_g.flags |= EMBER_HEAP_SAMPLED;
        heap_g.sample_bytes = n;
    }
    heap_g.seed = getenv("EMBER_HEAP_SEED") ? env_u64("EMBER_HEAP_SEED")
                                            : clock_ns(CLOCK_MONOTONIC) ^ (uint64_t)getpid();
    const char *unwind = getenv("EMBER_HEAP_UNWIND");
    if (unwind && strcmp(unwind, "fp") == 0)
        heap_g.flags |= EMBER_HEAP_FP;
    ssize_t len = readlink("/proc/self/exe", heap_g.exe, sizeof(heap_g.exe) - 1);
    heap_g.exe[len > 0 ? len : 0] = '\0';
    return true;
}

static void before_fork(void)
{
    pthread_mutex_lock(&heap_g.chunk_lock);
    heap_stacks_lock();
    heap_live_lock();
}

static void after_fork_parent(void)
{
    heap_live_unlock();
    heap_stacks_unlock();
    pthread_mutex_unlock(&heap_g.chunk_lock);
}

/* The child: a file of its own; what was written is its parent's. The
 * parent's mappings stay (other threads' chunks are unreachable here);
 * this thread's chunk is left unmapped so that nothing writes into the
 * parent's file. */
static void after_fork_child(void)
{
    pthread_mutex_init(&heap_g.chunk_lock, NULL);
    heap_stacks_reset();
    heap_live_reset();
    heap_tls.busy = true;
    struct heap_thread *t = &heap_tls.t;
    if (t->chunk)
        munmap(t->chunk, heap_g.chunk_size);
    t->chunk = NULL;
    munmap(heap_g.h, EMBER_HEAP_HEADER_SIZE);
    if (file_fd() >= 0) /* the parent's: not a number the child's program owns */
        close(heap_g.fd);
    heap_g.h = NULL;
    heap_g.fd = -1;
    bool ok = start_file();
    atomic_store(&heap_g.state, ok ? HEAP_ON : HEAP_OFF);
    heap_tls.busy = false;
}

/* A thread ends: its chunk's mapping goes (what it wrote stays in the
 * file). A record it makes after this claims a new chunk. */
static void thread_ends(void *arg)
{
    struct heap_thread *t = arg;
    if (t->chunk)
        munmap(t->chunk, heap_g.chunk_size);
    t->chunk = NULL;
}

static void init(void)
{
    heap_tls.busy = true;
    bool on = read_env() && heap_stacks_init() &&
              pthread_key_create(&thread_key, thread_ends) == 0 && start_file();
    if (on)
        pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    atomic_store_explicit(&heap_g.state, on ? HEAP_ON : HEAP_OFF, memory_order_release);
    heap_tls.busy = false;
}

bool heap_init_once(void)
{
    int s = atomic_load_explicit(&heap_g.state, memory_order_acquire);
    if (HEAP_LIKELY_(s != HEAP_UNINIT))
        return s == HEAP_ON;
    pthread_once(&init_once, init);
    return atomic_load_explicit(&heap_g.state, memory_order_acquire) == HEAP_ON;
}

__attribute__((constructor)) static void heap_constructor(void)
{
    heap_init_once();
}

/* A thread's first event in this file: its stream. */
static void start_thread(struct heap_thread *t)
{
    memset(t, 0, sizeof(*t));
    t->gen = heap_g.gen;
    t->stream = __atomic_fetch_add(&heap_g.h->streams, 1, __ATOMIC_RELAXED);
    t->tid = (uint32_t)syscall(SYS_gettid);
    pthread_setspecific(thread_key, t);
    heap_sample_start(t);
}

struct heap_thread *heap_enter(void)
{
    if (heap_tls.busy || !heap_init_once())
        return NULL;
    heap_tls.busy = true;
    struct heap_thread *t = &heap_tls.t;
    if (t->gen != heap_g.gen)
        start_thread(t);
    if (t->dead) {
        heap_tls.busy = false;
        return NULL;
    }
    return t;
}

void heap_leave(void)
{
    heap_tls.busy = false;
}

uint64_t heap_seq(void)
{
    return __atomic_fetch_add(&heap_g.h->seq, 1, __ATOMIC_RELAXED);
}

/* Claims the file's next chunk for t: false when the file cannot grow. */
static bool claim_chunk(struct heap_thread *t)
{
    size_t cs = heap_g.chunk_size;
    pthread_mutex_lock(&heap_g.chunk_lock);
    uint32_t k = __atomic_load_n(&heap_g.h->chunks, __ATOMIC_RELAXED);
    off_t at = EMBER_HEAP_HEADER_SIZE + (off_t)k * (off_t)cs;
    int fd = file_fd();
    void *m = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, at + (off_t)cs) == 0) /* under the lock: fd stays ours */
        m = mmap(NULL, cs, PROT_READ | PROT_WRITE, MAP_SHARED, fd, at);
    if (m != MAP_FAILED)
        __atomic_store_n(&heap_g.h->chunks, k + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&heap_g.chunk_lock);
    if (m == MAP_FAILED)
        return false;
    struct ember_heap_chunk *c = m;
    c->tid = t->tid;
    c->stream = t->stream;
    c->index = t->chunk_index++;
    c->first_seq = t->last_seq;
    c->time_ns = t->time_ns;
    __atomic_store_n(&c->magic, EMBER_HEAP_CHUNK_MAGIC, __ATOMIC_RELEASE);
    t->chunk = m;
    t->used = 0;
    t->last_addr = 0;
    return true;
}

uint8_t *heap_reserve(struct heap_thread *t, size_t max)
{
    size_t room = heap_g.chunk_size - EMBER_HEAP_CHUNK_HEADER;
    if (HEAP_LIKELY_(t->chunk && t->used + max <= room))
        return t->chunk + EMBER_HEAP_CHUNK_HEADER + t->used;
    if (t->chunk) {
        if (t->used < room) { /* the rest is padding */
            t->chunk[EMBER_HEAP_CHUNK_HEADER + t->used] = EMBER_HEAP_PAD;
            heap_commit(t, t->chunk + EMBER_HEAP_CHUNK_HEADER + t->used + 1);
        }
        munmap(t->chunk, heap_g.chunk_size);
        t->chunk = NULL;
    }
    if (!claim_chunk(t)) {
        t->dead = true;
        return NULL;
    }
    return t->chunk + EMBER_HEAP_CHUNK_HEADER;
}

void heap_commit(struct heap_thread *t, uint8_t *end)
{
    t->used = (uint64_t)(end - (t->chunk + EMBER_HEAP_CHUNK_HEADER));
    struct ember_heap_chunk *c = (struct ember_heap_chunk *)t->chunk;
    __atomic_store_n(&c->used, t->used, __ATOMIC_RELEASE);
}

/* A TIME record when the coarse clock moved since the stream's last. */
static uint8_t *put_time(struct heap_thread *t, uint8_t *p)
{
    uint64_t now = clock_ns(CLOCK_MONOTONIC_COARSE), start = heap_g.h->start_mono_ns;
    uint64_t ns = now > start ? now - start : 0;
    if (ns == t->time_ns)
        return p;
    t->time_ns = ns;
    *p++ = EMBER_HEAP_TIME;
    return heap_put(p, ns);
}

/* The record's head: TIME if due, the tag and the sequence delta. */
static uint8_t *put_head(struct heap_thread *t, uint8_t *p, int tag, uint64_t seq)
{
    p = put_time(t, p);
    *p++ = (uint8_t)tag;
    p = heap_put(p, seq - t->last_seq);
    t->last_seq = seq;
    return p;
}

void heap_write_alloc(struct heap_thread *t, uint64_t seq, void *ptr, size_t size,
                      const uintptr_t *raw, int n)
{
    uint32_t id = heap_stack_id(t, raw, n);
    uint8_t *p = heap_reserve(t, HEAP_RECORD_MAX);
    if (!p)
        return;
    p = put_head(t, p, EMBER_HEAP_ALLOC, seq);
    p = heap_put(p, size);
    p = heap_put(p, id);
    p = heap_put(p, ember_heap_zigzag(t->last_addr, (uintptr_t)ptr));
    t->last_addr = (uintptr_t)ptr;
    heap_commit(t, p);
}

void heap_write_free(struct heap_thread *t, uint64_t seq, void *ptr)
{
    uint8_t *p = heap_reserve(t, HEAP_RECORD_MAX);
    if (!p)
        return;
    p = put_head(t, p, EMBER_HEAP_FREE, seq);
    p = heap_put(p, ember_heap_zigzag(t->last_addr, (uintptr_t)ptr));
    t->last_addr = (uintptr_t)ptr;
    heap_commit(t, p);
}

void heap_write_end(int how)
{
    struct heap_thread *t = heap_enter();
    if (!t)
        return;
    /* a vfork's child shares our memory but is not this process: its exec
     * does not end our image */
    if (how == EMBER_HEAP_END_EXEC && (uint32_t)getpid() != heap_g.h->pid) {
        heap_leave();
        return;
    }
    uint8_t *p = heap_reserve(t, HEAP_RECORD_MAX);
    if (p) {
        p = put_time(t, p);
        *p++ = EMBER_HEAP_END;
        *p++ = (uint8_t)how;
        p = heap_put(p, __atomic_load_n(&heap_g.h->seq, __ATOMIC_ACQUIRE));
        heap_commit(t, p);
    }
    heap_leave();
}

__attribute__((destructor)) static void heap_destructor(void)
{
    heap_write_end(EMBER_HEAP_END_EXIT);
}
