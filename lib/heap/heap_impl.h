/*
 * heap_impl.h - the allocation recorder's own declarations (libember-heap,
 * preloaded into a program by `ember record --heap`): the process-wide
 * state, each thread's state and the calls between its files.
 *
 * Invariants: nothing here calls malloc (memory comes from mmap) or stdio;
 * every path that records runs with the thread's `busy` flag set, so the
 * allocations it causes (libunwind's, pthread_getattr_np's) pass through
 * unrecorded; a thread's state belongs to that thread alone, shared state
 * (stacks, modules, chunk claims, the live set) is behind its own lock or
 * atomic; the format written is lib/wire/heap_format.h's.
 */
#ifndef EMBER_HEAP_IMPL_H
#define EMBER_HEAP_IMPL_H

#include "wire/heap_format.h"
#include "wire/protobuf.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEAP_TLS        __attribute__((tls_model("initial-exec")))
#define HEAP_EXPORT     __attribute__((visibility("default")))
#define HEAP_LIKELY_(x) __builtin_expect(!!(x), 1)

enum heap_state { HEAP_UNINIT, HEAP_ON, HEAP_OFF };

/* A record's largest size but STACK's and MODULE's (which reserve their own). */
enum { HEAP_RECORD_MAX = 64, HEAP_CACHE_SLOTS = 1024 };

struct heap_stack; /* an interned stack (stacks.c) */

struct heap_thread {
    unsigned gen; /* heap_g.gen when started: another means a fork's child */
    bool dead;    /* its file could not grow: it records nothing more */
    uint32_t stream, tid;
    uint8_t *chunk;               /* the chunk it writes (mapped), NULL before the first */
    uint32_t chunk_index;         /* the next chunk's place in the stream */
    uint64_t used;                /* bytes of records in chunk */
    uint64_t last_seq;            /* the previous record's sequence number */
    uint64_t last_addr;           /* the chunk's previous ALLOC or FREE address */
    uint64_t time_ns;             /* the stream's time, as the last TIME said */
    int64_t countdown;            /* sampled: bytes until the next sample */
    uint64_t rng;                 /* sampled: xorshift64* state */
    uintptr_t stack_lo, stack_hi; /* fp: this thread's stack, 0 until asked */
    /* the stacks it saw, by hash: the common case finds its stack here
     * without the lock */
    const struct heap_stack *cache[HEAP_CACHE_SLOTS];
};

struct heap_tls {
    bool busy; /* the recorder runs on this thread: allocations pass through */
    struct heap_thread t;
};
extern __thread struct heap_tls heap_tls HEAP_TLS;

struct heap_global {
    _Atomic int state;           /* enum heap_state */
    unsigned gen;                /* counts starts (the first, then one per fork's child) */
    int fd;                      /* the file's, checked against dev/ino before use */
    unsigned long long dev, ino; /* the file's identity */
    char path[4096 + 64];        /* its name, to open it again */
    struct ember_heap_header *h;
    uint32_t chunk_size, flags;
    uint64_t sample_bytes, seed;
    uintptr_t self_lo, self_hi; /* libember-heap.so's text: cut from stacks */
    char dir[4096];
    char exe[4096]; /* /proc/self/exe */
    pthread_mutex_t chunk_lock;
};
extern struct heap_global heap_g;

/* recorder.c: starting, the thread's chunk, records */
bool heap_init_once(void);
/* The calling thread's state, busy set: NULL when not recording (or busy). */
struct heap_thread *heap_enter(void);
void heap_leave(void);
/* Room for max bytes in t's chunk (a new chunk when full): NULL when the
 * file cannot grow. */
uint8_t *heap_reserve(struct heap_thread *t, size_t max);
/* The record up to end is written: `used` advances (a release store). */
void heap_commit(struct heap_thread *t, uint8_t *end);
/* v as a varint at p (wire/protobuf.h's codec): the end. */
static inline uint8_t *heap_put(uint8_t *p, uint64_t v)
{
    return p + ember_protobuf_varint_encode(v, p);
}
/* The next sequence number (the one atomic add per event). */
uint64_t heap_seq(void);
/* An allocation, its stack as heap_capture gave it. */
void heap_write_alloc(struct heap_thread *t, uint64_t seq, void *p, size_t size,
                      const uintptr_t *raw, int n);
void heap_write_free(struct heap_thread *t, uint64_t seq, void *p);
void heap_write_end(int how);

/* stacks.c: the stack of the allocating call (raw: heap_capture's, n
 * frames), the recorder's frames cut, deduplicated; its id (0 when it
 * could not be written) */
uint32_t heap_stack_id(struct heap_thread *t, const uintptr_t *raw, int n);
void heap_stacks_reset(void); /* a fork's child: nothing written yet */
void heap_stacks_lock(void);
void heap_stacks_unlock(void);
bool heap_stacks_init(void); /* libunwind's caches, heap_g.self_lo/hi */

/* The recorder's own frames a stack may start with, at most. */
enum { HEAP_EXTRA_FRAMES = 16, HEAP_RAW_FRAMES = EMBER_HEAP_MAX_FRAMES + HEAP_EXTRA_FRAMES };
int heap_walk_fp(struct heap_thread *t, uintptr_t *raw);

/* The stack, HEAP_RAW_FRAMES at most into raw: how many. Inline, so that
 * it runs in the interposed function's own frame: libunwind has the
 * fewest frames of ours to unwind (each costs as much as a program's). */
__attribute__((always_inline)) static inline int heap_capture(struct heap_thread *t, uintptr_t *raw)
{
    if (heap_g.flags & EMBER_HEAP_FP)
        return heap_walk_fp(t, raw);
    int n = unw_backtrace((void **)raw, HEAP_RAW_FRAMES);
    return n > 0 ? n : 0;
}

/* sample.c: sampled mode's choice and its set of live sampled blocks */
void heap_sample_start(struct heap_thread *t);
/* Whether an allocation of size is recorded (always when not sampling). */
bool heap_sample_take(struct heap_thread *t, size_t size);
bool heap_live_add(uintptr_t p);
/* Whether p is a live sampled block (then no longer): its free is recorded. */
bool heap_live_take(uintptr_t p);
void heap_live_reset(void);

/* The live set's filter: a count of live sampled blocks per hash of their
 * address; zero means p is not in the set. Small enough to stay in cache,
 * as every free reads it. */
enum { HEAP_FILTER_BITS = 15 };
extern _Atomic uint32_t heap_live_filter[1u << HEAP_FILTER_BITS];
static inline uint32_t heap_filter_index(uintptr_t p)
{
    return (uint32_t)(((uint64_t)p * 0x9e3779b97f4a7c15ull) >> (64 - HEAP_FILTER_BITS));
}

/* Sampled mode's fast paths, without the flag or a syscall: an allocation
 * that only moves the thread's countdown, a free of a block that was not
 * sampled. heap_g.gen is 0 until a file is started, and a thread's gen is
 * its file's. */
static inline bool heap_sample_skip(size_t size)
{
    struct heap_thread *t = &heap_tls.t;
    if (!(heap_g.flags & EMBER_HEAP_SAMPLED) || t->gen != heap_g.gen || !t->gen ||
        t->countdown <= (int64_t)size || heap_tls.busy)
        return false;
    t->countdown -= (int64_t)size;
    return true;
}

static inline bool heap_free_skip(const void *p)
{
    return (heap_g.flags & EMBER_HEAP_SAMPLED) &&
           atomic_load_explicit(&heap_live_filter[heap_filter_index((uintptr_t)p)],
                                memory_order_relaxed) == 0;
}
void heap_live_lock(void);
void heap_live_unlock(void);

#endif
