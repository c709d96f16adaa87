/*
 * interpose.c - the functions libember-heap puts in front of glibc's
 * allocator (malloc, calloc, realloc, reallocarray, free, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc; C++'s new and delete call
 * them) and of exec (the image that ends writes END).
 *
 * Each calls glibc's own entry (__libc_malloc...: exported, so no dlsym
 * at start) and records around it. Invariants: the program sees glibc's
 * results and errno exactly (what is written here on top of glibc —
 * posix_memalign, reallocarray — checks as glibc does; recording never
 * touches errno); an allocation takes its sequence number after the
 * allocator returned, a free before the block goes back; realloc takes
 * the free's number before the call and writes both records after it (a
 * failed realloc writes neither).
 */
#include "heap/heap_impl.h"

#include <errno.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

#define INLINE_ __attribute__((always_inline)) static inline

/* Records the allocation of p (size bytes): its stack is taken here, in
 * the interposed function's frame (heap_capture). */
INLINE_ void write_alloc(struct heap_thread *t, void *p, size_t size)
{
    uintptr_t raw[HEAP_RAW_FRAMES];
    int n = heap_capture(t, raw);
    heap_write_alloc(t, heap_seq(), p, size, raw, n);
}

/* An allocation that returned p (non-NULL): recorded when chosen. */
INLINE_ void on_alloc(void *p, size_t size)
{
    if (heap_sample_skip(size))
        return;
    struct heap_thread *t = heap_enter();
    if (!t)
        return;
    int saved = errno;
    if (heap_sample_take(t, size) &&
        (!(heap_g.flags & EMBER_HEAP_SAMPLED) || heap_live_add((uintptr_t)p)))
        write_alloc(t, p, size);
    errno = saved;
    heap_leave();
}

/* Whether p's free is recorded (every block, or a live sampled one). */
static bool recorded(void *p)
{
    return !(heap_g.flags & EMBER_HEAP_SAMPLED) || heap_live_take((uintptr_t)p);
}

static void on_free(void *p)
{
    if (heap_free_skip(p))
        return;
    struct heap_thread *t = heap_enter();
    if (!t)
        return;
    int saved = errno;
    if (recorded(p))
        heap_write_free(t, heap_seq(), p);
    errno = saved;
    heap_leave();
}

HEAP_EXPORT void *malloc(size_t size)
{
    void *p = __libc_malloc(size);
    if (p)
        on_alloc(p, size);
    return p;
}

HEAP_EXPORT void free(void *p)
{
    if (p)
        on_free(p);
    __libc_free(p);
}

HEAP_EXPORT void *calloc(size_t n, size_t size)
{
    void *p = __libc_calloc(n, size);
    if (p)
        on_alloc(p, n * size);
    return p;
}

/* The free half of a realloc of old, before the call: its sequence
 * number, or UINT64_MAX when it is not recorded. */
static uint64_t realloc_begin(void *old)
{
    struct heap_thread *t = heap_enter();
    if (!t)
        return UINT64_MAX;
    uint64_t seq = recorded(old) ? heap_seq() : UINT64_MAX;
    heap_leave();
    return seq;
}

/* After realloc(old, size) returned p: the free (if it was taken), then
 * the new block; a failure puts a sampled block back in the live set. */
INLINE_ void realloc_end(void *old, uint64_t seq, void *p, size_t size)
{
    struct heap_thread *t = heap_enter();
    if (!t)
        return;
    bool failed = !p && size;
    if (failed && seq != UINT64_MAX && (heap_g.flags & EMBER_HEAP_SAMPLED))
        heap_live_add((uintptr_t)old);
    if (!failed && seq != UINT64_MAX)
        heap_write_free(t, seq, old);
    if (p && heap_sample_take(t, size) &&
        (!(heap_g.flags & EMBER_HEAP_SAMPLED) || heap_live_add((uintptr_t)p)))
        write_alloc(t, p, size);
    heap_leave();
}

HEAP_EXPORT void *realloc(void *old, size_t size)
{
    if (!old)
        return malloc(size);
    uint64_t seq = realloc_begin(old);
    void *p = __libc_realloc(old, size);
    int saved = errno;
    realloc_end(old, seq, p, size);
    errno = saved;
    return p;
}

HEAP_EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM; /* as glibc's */
        return NULL;
    }
    return realloc(old, bytes);
}

HEAP_EXPORT void *memalign(size_t align, size_t size)
{
    void *p = __libc_memalign(align, size);
    if (p)
        on_alloc(p, size);
    return p;
}

/* glibc 2.36's aligned_alloc is its memalign (the same symbol). */
HEAP_EXPORT void *aligned_alloc(size_t align, size_t size)
{
    return memalign(align, size);
}

HEAP_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    /* glibc's check: a power-of-two multiple of sizeof(void *), errno untouched */
    if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0 || align == 0)
        return EINVAL;
    void *p = __libc_memalign(align, size);
    if (!p)
        return ENOMEM; /* errno as glibc's memalign left it, as glibc's posix_memalign */
    on_alloc(p, size);
    *out = p;
    return 0;
}

HEAP_EXPORT void *valloc(size_t size)
{
    void *p = __libc_valloc(size);
    if (p)
        on_alloc(p, size);
    return p;
}

HEAP_EXPORT void *pvalloc(size_t size)
{
    void *p = __libc_pvalloc(size);
    if (p)
        on_alloc(p, size);
    return p;
}
