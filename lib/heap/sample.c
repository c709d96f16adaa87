/*
 * sample.c - sampled mode: which allocations are recorded (Poisson by
 * bytes with mean sample_bytes, as Go's MemProfileRate and jemalloc's
 * prof), and the set of live sampled blocks, whose frees (and only
 * those) are recorded.
 *
 * Invariants: each thread draws its distances from its own xorshift64*
 * generator, seeded from the file's seed and its stream number, so that a
 * fixed seed gives the same samples run after run (one thread, or threads
 * that start in the same order); the recorder only chooses, the reader
 * scales. A sampled block is in the set from before its address reaches
 * the program until its free, so no free of it is missed; a free of any
 * other block reads one counter (a filter indexed by the address's hash:
 * zero means "not in the set") and takes no lock.
 */
#include "heap/heap_impl.h"

#include <string.h>
#include <sys/mman.h>

enum { SHARDS = 64, SHARD_MIN = 1024 };

/* An open-addressed set of addresses: 0 empty, 1 removed. */
struct shard {
    pthread_mutex_t lock;
    uintptr_t *slot;
    size_t cap, used; /* used: live and removed slots */
};

_Atomic uint32_t heap_live_filter[1u << HEAP_FILTER_BITS] __attribute__((aligned(4096)));
static struct shard shards[SHARDS];

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* The natural logarithm of x > 0: x = m 2^e with m in [sqrt(1/2),
 * sqrt(2)], ln m = 2 atanh((m-1)/(m+1)) by its series (error below
 * 1e-12). Here rather than libm's: the library links libc alone. */
static double ln(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof(bits));
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & ~(0x7ffull << 52)) | (1023ull << 52);
    double m;
    memcpy(&m, &bits, sizeof(m));
    if (m > 1.4142135623730951) {
        m /= 2;
        e++;
    }
    double z = (m - 1) / (m + 1), z2 = z * z, term = z, sum = 0;
    for (int k = 1; k <= 23; k += 2) {
        sum += term / k;
        term *= z2;
    }
    return e * 0.6931471805599453 + 2 * sum;
}

static uint64_t next_random(struct heap_thread *t)
{
    t->rng ^= t->rng >> 12;
    t->rng ^= t->rng << 25;
    t->rng ^= t->rng >> 27;
    return t->rng * 0x2545f4914f6cdd1dull;
}

/* Bytes to the next sample: exponential with mean sample_bytes. */
static int64_t draw(struct heap_thread *t)
{
    double u = (double)((next_random(t) >> 11) + 1) * 0x1p-53; /* (0, 1] */
    return (int64_t)(-ln(u) * (double)heap_g.sample_bytes) + 1;
}

void heap_sample_start(struct heap_thread *t)
{
    if (!(heap_g.flags & EMBER_HEAP_SAMPLED))
        return;
    t->rng = mix(heap_g.seed ^ mix(t->stream + 1)) | 1;
    t->countdown = draw(t);
}

bool heap_sample_take(struct heap_thread *t, size_t size)
{
    if (!(heap_g.flags & EMBER_HEAP_SAMPLED))
        return true;
    t->countdown -= (int64_t)(size < INT64_MAX ? size : INT64_MAX);
    if (HEAP_LIKELY_(t->countdown > 0))
        return false;
    t->countdown = draw(t);
    return true;
}

static size_t probe_start(uintptr_t p, size_t cap)
{
    return (size_t)mix(p) & (cap - 1);
}

/* Twice the room (removed slots dropped) when over half used. */
static bool rehash(struct shard *s)
{
    if (s->used * 2 < s->cap)
        return true;
    size_t cap = s->cap ? s->cap * 2 : SHARD_MIN;
    uintptr_t *slot =
        mmap(NULL, cap * sizeof(*slot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (slot == MAP_FAILED)
        return false;
    size_t used = 0;
    for (size_t i = 0; i < s->cap; i++) {
        if (s->slot[i] <= 1)
            continue;
        size_t j = probe_start(s->slot[i], cap);
        while (slot[j])
            j = (j + 1) & (cap - 1);
        slot[j] = s->slot[i];
        used++;
    }
    if (s->slot)
        munmap(s->slot, s->cap * sizeof(*slot));
    s->slot = slot;
    s->cap = cap;
    s->used = used;
    return true;
}

static struct shard *shard_of(uintptr_t p)
{
    return &shards[mix(p) >> (64 - 6)];
}

static _Atomic uint32_t *filter_of(uintptr_t p)
{
    return &heap_live_filter[heap_filter_index(p)];
}

bool heap_live_add(uintptr_t p)
{
    struct shard *s = shard_of(p);
    pthread_mutex_lock(&s->lock);
    bool ok = rehash(s);
    if (ok) {
        size_t j = probe_start(p, s->cap);
        while (s->slot[j])
            j = (j + 1) & (s->cap - 1);
        s->slot[j] = p;
        s->used++;
        atomic_fetch_add_explicit(filter_of(p), 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

bool heap_live_take(uintptr_t p)
{
    _Atomic uint32_t *f = filter_of(p);
    if (HEAP_LIKELY_(atomic_load_explicit(f, memory_order_relaxed) == 0))
        return false;
    struct shard *s = shard_of(p);
    bool found = false;
    pthread_mutex_lock(&s->lock);
    for (size_t j = s->cap ? probe_start(p, s->cap) : 0; s->cap && s->slot[j];
         j = (j + 1) & (s->cap - 1))
        if (s->slot[j] == p) {
            s->slot[j] = 1;
            found = true;
            atomic_fetch_sub_explicit(f, 1, memory_order_relaxed);
            break;
        }
    pthread_mutex_unlock(&s->lock);
    return found;
}

void heap_live_lock(void)
{
    for (int i = 0; i < SHARDS; i++)
        pthread_mutex_lock(&shards[i].lock);
}

void heap_live_unlock(void)
{
    for (int i = 0; i < SHARDS; i++)
        pthread_mutex_unlock(&shards[i].lock);
}

/* A fork's child: its file knows none of its parent's blocks. The old
 * tables stay mapped (copies the fork made). */
void heap_live_reset(void)
{
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_init(&shards[i].lock, NULL);
        shards[i].slot = NULL;
        shards[i].cap = shards[i].used = 0;
    }
    madvise(heap_live_filter, sizeof(heap_live_filter), MADV_DONTNEED); /* zero pages again */
}
