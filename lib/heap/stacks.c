/*
 * stacks.c - the allocating call's stack: captured (libunwind's
 * unw_backtrace, which follows CFI as heaptrack does, or frame pointers),
 * cut of the recorder's own frames, deduplicated process-wide and written
 * once as a STACK record, after the MODULE records its addresses need.
 *
 * Invariants: a stack's id is published (put in the table) under
 * stack_lock only after its STACK record is committed in the writing
 * thread's chunk, so a record naming an id always has its STACK in the
 * file; the table's entries are never moved or freed (an arena of mmap'd
 * blocks), so a thread's cache may point at them without the lock; the
 * frame-pointer walk reads only inside the thread's stack and only
 * upwards, so it ends and never faults; a MODULE is written before the
 * first STACK holding an address inside it.
 */
#include "heap/heap_impl.h"

#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>

struct heap_stack {
    struct heap_stack *next; /* in its table bucket */
    uint64_t hash;
    uint32_t id, n;
    uintptr_t pc[];
};

enum { MODULES_MAX = 4096, ARENA_BLOCK = 1 << 20, BUCKETS_MIN = 1 << 12 };

/* An executable segment of a module written: [lo, hi). */
struct range {
    uintptr_t lo, hi;
};

static struct {
    pthread_mutex_t lock;
    struct heap_stack **buckets;
    size_t nbuckets, count;
    uint32_t next_id;
    uint8_t *arena;
    size_t arena_left;
    struct range mods[MODULES_MAX];
    size_t nmods;
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

void heap_stacks_lock(void)
{
    pthread_mutex_lock(&S.lock);
}

void heap_stacks_unlock(void)
{
    pthread_mutex_unlock(&S.lock);
}

/* The child forgets the parent's table (its memory stays, unused: copies
 * the fork made) and its cache. */
void heap_stacks_reset(void)
{
    pthread_mutex_init(&S.lock, NULL);
    S.buckets = NULL;
    S.nbuckets = S.count = 0;
    S.next_id = 0;
    S.arena = NULL;
    S.arena_left = 0;
    S.nmods = 0;
    memset(heap_tls.t.cache, 0, sizeof(heap_tls.t.cache));
}

static void *map_anon(size_t n)
{
    void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t me = (uintptr_t)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo && me < hi) {
            heap_g.self_lo = lo;
            heap_g.self_hi = hi;
            return 1;
        }
    }
    return 0;
}

bool heap_stacks_init(void)
{
    /* per-thread caches: no lock in libunwind on the way */
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    unw_set_cache_size(unw_local_addr_space, 1024, 0);
    return dl_iterate_phdr(find_self, (void *)(uintptr_t)heap_stacks_init) == 1;
}

static bool is_self(uintptr_t pc)
{
    return pc >= heap_g.self_lo && pc < heap_g.self_hi;
}

/* The thread's stack, for the frame-pointer walk's bounds. */
static void stack_bounds(struct heap_thread *t)
{
    pthread_attr_t attr;
    void *lo;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    if (pthread_attr_getstack(&attr, &lo, &size) == 0) {
        t->stack_lo = (uintptr_t)lo;
        t->stack_hi = (uintptr_t)lo + size;
    }
    pthread_attr_destroy(&attr);
}

/* Frame pointers: each frame is {caller's frame, return address}, frames
 * only go up the stack. */
int heap_walk_fp(struct heap_thread *t, uintptr_t *pc)
{
    if (!t->stack_hi)
        stack_bounds(t);
    const uintptr_t *fp = __builtin_frame_address(0);
    int n = 0;
    while (n < HEAP_RAW_FRAMES && (uintptr_t)fp >= t->stack_lo &&
           (uintptr_t)fp + 16 <= t->stack_hi && !((uintptr_t)fp & 7)) {
        uintptr_t ret = fp[1];
        if (!ret)
            break;
        pc[n++] = ret;
        const uintptr_t *up = (const uintptr_t *)fp[0];
        if (up <= fp)
            break;
        fp = up;
    }
    return n;
}

/* The frames' products are independent of each other (no chain of
 * multiplications through the loop: this runs on every allocation), then
 * mixed once. */
static uint64_t hash_stack(const uintptr_t *pc, int n)
{
    uint64_t h = (uint64_t)n;
    for (int i = 0; i < n; i++)
        h += (pc[i] ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

static bool same(const struct heap_stack *s, uint64_t hash, const uintptr_t *pc, int n)
{
    if (s->hash != hash || s->n != (uint32_t)n)
        return false;
    for (int i = 0; i < n; i++) /* short: a loop beats a call to memcmp */
        if (s->pc[i] != pc[i])
            return false;
    return true;
}

static struct heap_stack *find(uint64_t hash, const uintptr_t *pc, int n)
{
    if (!S.nbuckets)
        return NULL;
    for (struct heap_stack *s = S.buckets[hash & (S.nbuckets - 1)]; s; s = s->next)
        if (same(s, hash, pc, n))
            return s;
    return NULL;
}

/* Twice the buckets when the table is full: false when out of memory. */
static bool grow(void)
{
    if (S.count < S.nbuckets)
        return true;
    size_t n = S.nbuckets ? S.nbuckets * 2 : BUCKETS_MIN;
    struct heap_stack **b = map_anon(n * sizeof(*b));
    if (!b)
        return false;
    for (size_t i = 0; i < S.nbuckets; i++)
        for (struct heap_stack *s = S.buckets[i], *next; s; s = next) {
            next = s->next;
            s->next = b[s->hash & (n - 1)];
            b[s->hash & (n - 1)] = s;
        }
    if (S.buckets)
        munmap(S.buckets, S.nbuckets * sizeof(*b));
    S.buckets = b;
    S.nbuckets = n;
    return true;
}

static struct heap_stack *new_stack(uint64_t hash, const uintptr_t *pc, int n)
{
    size_t size = (sizeof(struct heap_stack) + (size_t)n * sizeof(*pc) + 15) & ~(size_t)15;
    if (!grow())
        return NULL;
    if (S.arena_left < size) {
        S.arena = map_anon(ARENA_BLOCK);
        S.arena_left = S.arena ? ARENA_BLOCK : 0;
        if (!S.arena)
            return NULL;
    }
    struct heap_stack *s = (struct heap_stack *)S.arena;
    S.arena += size;
    S.arena_left -= size;
    s->hash = hash;
    s->n = (uint32_t)n;
    memcpy(s->pc, pc, (size_t)n * sizeof(*pc));
    return s;
}

/* Whether pc is in a segment written: the segments are sorted by start
 * and do not overlap, so a bisection (a program may load hundreds of
 * libraries, and every new stack asks for each of its frames). */
static bool known(uintptr_t pc)
{
    size_t lo = 0, hi = S.nmods;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pc < S.mods[mid].lo)
            hi = mid;
        else if (pc >= S.mods[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

/* Adds a written segment in its place. */
static void add_segment(struct range r)
{
    size_t i = S.nmods;
    while (i > 0 && S.mods[i - 1].lo > r.lo) {
        S.mods[i] = S.mods[i - 1];
        i--;
    }
    S.mods[i] = r;
    S.nmods++;
}

/* The GNU build-id note of a module: its length (0: none), *id at it. */
static size_t build_id(const struct dl_phdr_info *info, const uint8_t **id)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const uint8_t *desc = p + sizeof(*nh) + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(p + sizeof(*nh), "GNU", 4) == 0 && desc + nh->n_descsz <= end) {
                *id = desc;
                return nh->n_descsz > 255 ? 255 : nh->n_descsz;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 0;
}

/* The module's executable segments into r (at most max): how many. */
static size_t exec_segments(const struct dl_phdr_info *info, struct range *r, size_t max)
{
    size_t n = 0;
    for (int i = 0; i < info->dlpi_phnum && n < max; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            r[n].lo = info->dlpi_addr + ph->p_vaddr;
            r[n].hi = r[n].lo + ph->p_memsz;
            n++;
        }
    }
    return n;
}

/* A MODULE record for one module: false when the file cannot grow. */
static bool write_module(struct heap_thread *t, const struct dl_phdr_info *info,
                         const struct range *r, size_t nr)
{
    const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : heap_g.exe;
    size_t plen = strnlen(path, 4095);
    uint8_t *p = heap_reserve(t, 1 + 10 + 1 + 255 + 10 + nr * 20 + plen + 1);
    if (!p)
        return false;
    const uint8_t *id = NULL;
    size_t idlen = build_id(info, &id);
    *p++ = EMBER_HEAP_MODULE;
    p = heap_put(p, info->dlpi_addr);
    *p++ = (uint8_t)idlen;
    memcpy(p, id, idlen);
    p = heap_put(p + idlen, nr);
    for (size_t i = 0; i < nr; i++)
        p = heap_put(heap_put(p, r[i].lo), r[i].hi);
    memcpy(p, path, plen);
    p[plen] = '\0';
    heap_commit(t, p + plen + 1);
    return true;
}

static int each_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct range r[16];
    size_t nr = exec_segments(info, r, 16);
    if (!nr || known(r[0].lo) || S.nmods + nr > MODULES_MAX)
        return 0;
    if (!write_module(data, info, r, nr))
        return 1;
    for (size_t i = 0; i < nr; i++)
        add_segment(r[i]);
    return 0;
}

/* MODULE records for the loaded modules not written yet, when pc's stack
 * holds an address outside those written. */
static void write_modules(struct heap_thread *t, const uintptr_t *pc, int n)
{
    for (int i = 0; i < n; i++)
        if (!known(pc[i])) {
            dl_iterate_phdr(each_module, t);
            return;
        }
}

static bool write_stack(struct heap_thread *t, const struct heap_stack *s)
{
    uint8_t *p = heap_reserve(t, 1 + 10 + 10 + 10 * (size_t)s->n);
    if (!p)
        return false;
    *p++ = EMBER_HEAP_STACK;
    p = heap_put(p, s->id);
    p = heap_put(p, s->n);
    for (uint32_t i = 0; i < s->n; i++)
        p = heap_put(p, s->pc[i]);
    heap_commit(t, p);
    return true;
}

/* The stack under the lock: found, or made, written and published. */
static const struct heap_stack *intern(struct heap_thread *t, uint64_t hash, const uintptr_t *pc,
                                       int n)
{
    pthread_mutex_lock(&S.lock);
    struct heap_stack *s = find(hash, pc, n);
    if (!s && (s = new_stack(hash, pc, n)) != NULL) {
        s->id = S.next_id + 1;
        write_modules(t, pc, n);
        if (write_stack(t, s)) {
            S.next_id++;
            size_t b = hash & (S.nbuckets - 1);
            s->next = S.buckets[b];
            S.buckets[b] = s;
            S.count++;
        } else {
            s = NULL; /* its memory stays in the arena, unused */
        }
    }
    pthread_mutex_unlock(&S.lock);
    return s;
}

uint32_t heap_stack_id(struct heap_thread *t, const uintptr_t *raw, int n)
{
    int first = 0;
    for (int i = 0; i < n && i < HEAP_EXTRA_FRAMES; i++)
        if (is_self(raw[i]))
            first = i + 1; /* everything up to the last frame of ours (libunwind's above it) */
    const uintptr_t *pc = raw + first;
    n -= first;
    if (n > EMBER_HEAP_MAX_FRAMES)
        n = EMBER_HEAP_MAX_FRAMES;
    uint64_t hash = hash_stack(pc, n);
    const struct heap_stack **slot = &t->cache[hash & (HEAP_CACHE_SLOTS - 1)];
    if (*slot && same(*slot, hash, pc, n))
        return (*slot)->id;
    const struct heap_stack *s = intern(t, hash, pc, n);
    if (!s)
        return 0;
    *slot = s;
    return s->id;
}
