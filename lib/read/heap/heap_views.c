/*
 * heap_views.c - the values of a heap profile, computed from one
 * process's events in sequence order, per stack id:
 *
 *   alloc_objects, alloc_space  allocations made in the window, and bytes
 *   inuse_objects, inuse_space  of those, held at the window's end (the
 *                               whole run: at the recording's end)
 *   peak      of those, bytes held at the moment in the window when the
 *             process's heap in use (every block, as the "heap" counter
 *             draws it) was highest (its first time), as heaptrack's peak
 *   leaked    of those, bytes never freed in the whole recording (held at
 *             exit; --to does not change what leaked means)
 *   temporary of those, allocations freed by the very next event of the
 *             process (heaptrack's definition, accumulatedtracedata.cpp:
 *             a free is temporary when the event before it was an
 *             allocation of the same size and stack; frees of unknown
 *             addresses are no events, as heaptrack_interpret drops them)
 *
 * The window keeps the allocations made in it (from_ns <= time <= to_ns,
 * the recording's time), as memtrace's reader does: a window is "what was
 * allocated then, and what of it was still held at its end".
 *
 * Sampled recordings weigh each sampled block of size s, sampled with a
 * mean of N bytes, 1/(1-exp(-s/N)) objects and s/(1-exp(-s/N)) bytes
 * (pprof's unbiased scaling, Go's scaleHeapSample; N <= 1: every block
 * weighs 1 and s, as Go's rate 1). Weights add up as doubles (exact for
 * the integers of an every-allocation recording below 2^53) and are
 * rounded once per stack and value at the end: rounding each block would
 * bias the sum, and the values are counts and bytes (pprof's int64).
 *
 * The peak in one pass: each stack keeps its bytes as of the last new
 * maximum, saved lazily when the stack first changes after it (an epoch
 * per maximum), so a new maximum costs O(1), not a snapshot.
 * The "heap" counter: per millisecond of recording time at most three
 * points, its minimum, maximum and last value in time order, so every
 * extreme (the exact peak included) is kept.
 * Invariants: a live block's address is in the table once; a stack's
 * live sums are those of its live blocks allocated in the window.
 */
#include "read/heap/heap_impl.h"
#include "base/hash.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const heap_value_names[HEAP_VALUES][2] = {
    {"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"},
    {"inuse_space", "bytes"},   {"peak", "bytes"},        {"leaked", "bytes"},
    {"temporary", "count"},
};

struct block {
    uint64_t addr, size;
    double wobj, wbytes;
    uint32_t stack;
    uint8_t used, in_window;
};

struct acc {
    double v[HEAP_VALUES];
    double live_obj, live_bytes; /* blocks allocated in the window, live now */
    double saved;                /* live_bytes at the last new maximum ... */
    uint64_t saved_epoch;        /* ... when this is that maximum's epoch */
};

enum phase { BEFORE, INSIDE, AFTER };

struct bucket {
    uint64_t id;
    bool has;
    uint64_t t[3]; /* min, max, last */
    int64_t v[3];
};

struct heap_views {
    const struct heap_proc *p;
    struct heap_window w;
    struct block *tab;
    size_t mask, live;
    struct acc *acc;
    double heap, peak; /* heap in use (all blocks); its maximum in the window */
    uint64_t epoch;
    uint64_t now; /* the recording's time, never decreasing */
    enum phase phase;
    bool last_valid; /* the event before was an allocation of: */
    uint64_t last_size, last_stack;
    struct bucket b;
    struct heap_counts c;
};

/* ---- live blocks by address: open addressing, deletion by backward shift */

static struct block *find(const struct heap_views *v, uint64_t addr)
{
    for (size_t i = ember_hash_u64(addr) & v->mask;; i = (i + 1) & v->mask)
        if (!v->tab[i].used || v->tab[i].addr == addr)
            return &v->tab[i];
}

static int grow(struct heap_views *v)
{
    struct block *old = v->tab;
    size_t n = v->mask + 1;
    if (!(v->tab = calloc(2 * n, sizeof(*v->tab)))) {
        v->tab = old;
        return -ENOMEM;
    }
    v->mask = 2 * n - 1;
    for (size_t i = 0; i < n; i++)
        if (old[i].used)
            *find(v, old[i].addr) = old[i];
    free(old);
    return 0;
}

static void erase(struct heap_views *v, struct block *b)
{
    size_t i = (size_t)(b - v->tab), j = i;
    for (;;) {
        v->tab[i].used = 0;
        for (;;) {
            j = (j + 1) & v->mask;
            if (!v->tab[j].used)
                return;
            size_t k = ember_hash_u64(v->tab[j].addr) & v->mask;
            /* j's entry stays when its home k lies cyclically in (i, j] */
            if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
                continue;
            break;
        }
        v->tab[i] = v->tab[j];
        i = j;
    }
}

/* ---- the counter ------------------------------------------------------------ */

static int flush(struct heap_views *v)
{
    struct bucket *b = &v->b;
    if (!b->has)
        return 0;
    b->has = false;
    int order[3] = {0, 1, 2}; /* min, max, last by time (last is latest) */
    if (b->t[1] < b->t[0]) {
        order[0] = 1;
        order[1] = 0;
    }
    uint64_t pt = UINT64_MAX;
    int64_t pv = 0;
    for (int i = 0; i < 3; i++) {
        int k = order[i];
        if (b->t[k] == pt && b->v[k] == pv)
            continue;
        int err = ember_profile_counter_add(v->w.prof, v->w.counter, b->t[k], b->v[k]);
        if (err)
            return err;
        pt = b->t[k];
        pv = b->v[k];
    }
    return 0;
}

static int point(struct heap_views *v)
{
    int64_t val = llround(v->heap);
    struct bucket *b = &v->b;
    if (b->has && b->id != v->now / 1000000) {
        int err = flush(v);
        if (err)
            return err;
    }
    if (!b->has) {
        *b = (struct bucket){.id = v->now / 1000000, .has = true};
        for (int i = 0; i < 3; i++) {
            b->t[i] = v->now;
            b->v[i] = val;
        }
        return 0;
    }
    if (val < b->v[0]) {
        b->v[0] = val;
        b->t[0] = v->now;
    }
    if (val > b->v[1]) {
        b->v[1] = val;
        b->t[1] = v->now;
    }
    b->v[2] = val;
    b->t[2] = v->now;
    return 0;
}

/* ---- the window ------------------------------------------------------------ */

/* A new maximum of the heap in the window: the stacks' bytes now are the
 * peak's until one beats it. */
static void maybe_peak(struct heap_views *v)
{
    if (v->heap > v->peak) {
        v->peak = v->heap;
        v->epoch++;
    }
}

/* The values held at the window's end, taken once: inuse_* and peak. */
static void close_window(struct heap_views *v)
{
    for (uint64_t s = 0; s < v->p->nstacks; s++) {
        struct acc *a = &v->acc[s];
        a->v[HEAP_INUSE_OBJECTS] = a->live_obj;
        a->v[HEAP_INUSE_SPACE] = a->live_bytes;
        a->v[HEAP_PEAK] = a->saved_epoch == v->epoch ? a->saved : a->live_bytes;
    }
    v->phase = AFTER;
}

/* Moves the clock to an event's time, crossing the window's bounds. */
static int clock_to(struct heap_views *v, uint64_t time_ns)
{
    uint64_t t = v->w.shift + time_ns;
    v->now = t > v->now ? t : v->now;
    if (v->phase == BEFORE && v->now >= v->w.from_ns && (v->w.to_ns == 0 || v->now <= v->w.to_ns)) {
        v->phase = INSIDE;
        maybe_peak(v); /* the heap as the window opens is a moment of it */
        return point(v);
    }
    if (v->phase != AFTER && v->w.to_ns && v->now > v->w.to_ns)
        close_window(v);
    return 0;
}

/* ---- events ----------------------------------------------------------------- */

static void touch(struct heap_views *v, struct acc *a)
{
    if (a->saved_epoch != v->epoch) {
        a->saved = a->live_bytes;
        a->saved_epoch = v->epoch;
    }
}

/* A block's end, by a free or by an allocation at its address. */
static void end_block(struct heap_views *v, struct block *b, bool by_free)
{
    v->heap -= b->wbytes;
    if (b->in_window) {
        struct acc *a = &v->acc[b->stack];
        touch(v, a);
        a->live_obj -= b->wobj;
        a->live_bytes -= b->wbytes;
        if (v->phase == INSIDE && by_free && v->last_valid && v->last_size == b->size &&
            v->last_stack == b->stack)
            a->v[HEAP_TEMPORARY] += b->wobj;
    }
    if (by_free)
        v->last_valid = false;
    erase(v, b);
    v->live--;
}

static void weigh(const struct heap_views *v, struct block *b)
{
    double n = (double)v->p->h.sample_bytes, s = (double)b->size;
    b->wobj = 1;
    b->wbytes = s;
    if (!(v->p->h.flags & EMBER_HEAP_SAMPLED) || v->p->h.sample_bytes <= 1)
        return;
    if (b->size == 0) {
        b->wobj = 0; /* as Go's scaleHeapSample: a sample of no bytes weighs nothing */
        return;
    }
    double scale = 1 / (1 - exp(-s / n));
    b->wobj = scale;
    b->wbytes = s * scale;
}

static int on_alloc(struct heap_views *v, const struct heap_event *e)
{
    struct block *b = find(v, e->addr);
    if (b->used) {
        v->c.missed_frees++;
        end_block(v, b, false);
    }
    if ((v->live + 1) * 2 > v->mask + 1 && grow(v) < 0)
        return -ENOMEM;
    b = find(v, e->addr);
    *b = (struct block){.addr = e->addr, .size = e->size, .stack = (uint32_t)e->stack, .used = 1};
    b->in_window = v->phase == INSIDE;
    weigh(v, b);
    v->live++;
    v->heap += b->wbytes;
    if (b->in_window) {
        struct acc *a = &v->acc[e->stack];
        touch(v, a);
        a->live_obj += b->wobj;
        a->live_bytes += b->wbytes;
        a->v[HEAP_ALLOC_OBJECTS] += b->wobj;
        a->v[HEAP_ALLOC_SPACE] += b->wbytes;
        v->last_valid = true;
        v->last_size = e->size;
        v->last_stack = e->stack;
    }
    return 0;
}

int heap_views_event(struct heap_views *v, const struct heap_event *e)
{
    int err = clock_to(v, e->time_ns);
    if (err)
        return err;
    v->c.last_ns = e->time_ns > v->c.last_ns ? e->time_ns : v->c.last_ns;
    if (e->alloc) {
        if ((err = on_alloc(v, e)) < 0)
            return err;
    } else {
        struct block *b = find(v, e->addr);
        if (!b->used) {
            v->c.unknown_frees++;
            return 0;
        }
        end_block(v, b, true);
    }
    if (v->phase != INSIDE)
        return 0;
    maybe_peak(v);
    return point(v);
}

/* ---- the process's values ---------------------------------------------------- */

int heap_views_new(struct heap_views **out, const struct heap_proc *p, const struct heap_window *w)
{
    struct heap_views *v = calloc(1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    v->p = p;
    v->w = *w;
    v->peak = -1;
    v->mask = 63;
    v->tab = calloc(v->mask + 1, sizeof(*v->tab));
    v->acc = calloc(p->nstacks + 1, sizeof(*v->acc));
    if (!v->tab || !v->acc) {
        heap_views_free(v);
        return -ENOMEM;
    }
    *out = v;
    return 0;
}

void heap_views_free(struct heap_views *v)
{
    if (!v)
        return;
    free(v->tab);
    free(v->acc);
    free(v);
}

int heap_views_finish(struct heap_views *v, int64_t **out, struct heap_counts *c)
{
    if (v->phase != AFTER)
        close_window(v);
    int err = flush(v);
    if (err)
        return err;
    uint64_t n = v->p->nstacks;
    int64_t *w = calloc((n + 1) * HEAP_VALUES, sizeof(*w));
    if (!w)
        return -ENOMEM;
    for (uint64_t s = 0; s < n; s++) {
        struct acc *a = &v->acc[s];
        a->v[HEAP_LEAKED] = a->live_bytes;
        for (int k = 0; k < HEAP_VALUES; k++)
            w[s * HEAP_VALUES + k] = llround(a->v[k]);
    }
    *out = w;
    *c = v->c;
    return 0;
}
