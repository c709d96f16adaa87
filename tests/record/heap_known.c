/*
 * heap_known.c - a program whose heap has known answers, for the heap
 * recorders' tests (tests/golden/heap_truth.py): every allocation site is a
 * function of its own (noinline) that calls the allocator itself, with
 * counts and sizes fixed by the constants below; `--truth` prints, per
 * site, what a heap profiler must find, computed from those constants (by
 * construction: nothing is measured).
 *
 * usage: heap_known [--threads] [--truth]
 *
 * Build with -O1 -g -fno-omit-frame-pointer. What a site's numbers mean
 * (heaptrack's definitions, src/analyze/accumulatedtracedata.cpp):
 *   allocations, bytes  - calls to an allocator and the bytes they asked
 *                         for (calloc: n * size; realloc: the new size, and
 *                         the old block counts as freed);
 *   peak                - bytes the site holds at the first moment the
 *                         whole heap is at its largest;
 *   leaked              - bytes (and blocks) never freed;
 *   temporary           - frees that come right after the allocation of the
 *                         block they free, with no allocation in between.
 * heaptrack tests the last one by (size, stack) rather than by block: a
 * free right after an allocation of the same size from the same stack
 * counts even when it frees another block. Invariant of the plan below:
 * the first free after any allocation frees either that very block or a
 * block of another size, so both readings give the same count.
 *
 * Invariants: the run mode calls no libc function that allocates (no
 * stdio) so that the sites below are the program's only allocations;
 * every site's sizes are its own (a size names its site in heaptrack's
 * size histogram, the one place heaptrack 1.4 prints bytes allocated);
 * the global peak is reached once, by peak_big's last block, and strictly
 * exceeds every other moment.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* leak_site: blocks never freed */
#define LEAK_N    1000
#define LEAK_SIZE 1000
/* temp_site: malloc + free, each temporary */
#define TEMP_N    50000
#define TEMP_SIZE 24
/* churn_site: rounds of CHURN_N blocks, freed first in first out */
#define CHURN_ROUNDS  10
#define CHURN_N       2000
#define CHURN_SIZE(i) (40 + 8 * ((i) % 4))
/* realloc_site: chains of STEPS reallocs from NULL, sizes STEP_SIZE(1..STEPS) */
#define CHAINS       100
#define STEPS        32
#define STEP_SIZE(k) (128 * (k))
/* calloc_site: calloc(7, 11); memalign_site: posix_memalign(64, 200);
 * peak_small; peak_big, whose last block makes the peak: all held at it */
#define CALLOC_N    500
#define CALLOC_SIZE (7 * 11)
#define ALIGN_N     300
#define ALIGN_SIZE  200
#define SMALL_N     10000
#define SMALL_SIZE  100
#define BIG_N       4
#define BIG_SIZE    (1 << 20)
/* --threads: thread_alloc in each of THREADS threads */
#define THREADS           4
#define THREAD_N          5000
#define THREAD_SIZE(t, i) (48 + 16 * (t) + 8 * ((i) % 2))

static void *leaks[LEAK_N], *churn[CHURN_N], *kept_chain, *calloced[CALLOC_N];
static void *aligned[ALIGN_N], *small[SMALL_N], *big[BIG_N];
static void *blocks[THREADS][THREAD_N];
static volatile unsigned char sink;

/* Every block is written, so that neither the compiler nor the allocator
 * can drop it. */
static void use(void *p)
{
    if (!p)
        abort();
    *(volatile unsigned char *)p = 1;
    sink += *(unsigned char *)p;
}

__attribute__((noinline)) void leak_site(void)
{
    for (int i = 0; i < LEAK_N; i++)
        use(leaks[i] = malloc(LEAK_SIZE));
}

__attribute__((noinline)) void temp_site(void)
{
    for (int i = 0; i < TEMP_N; i++) {
        void *p = malloc(TEMP_SIZE);
        use(p);
        free(p);
    }
}

/* The first free of a round (churn[0], 40 B) follows the allocation of
 * churn[CHURN_N - 1] (64 B): not temporary by either reading. */
__attribute__((noinline)) void churn_site(void)
{
    for (int r = 0; r < CHURN_ROUNDS; r++) {
        for (int i = 0; i < CHURN_N; i++)
            use(churn[i] = malloc(CHURN_SIZE(i)));
        for (int i = 0; i < CHURN_N; i++)
            free(churn[i]);
    }
}

/* Each realloc frees the block allocated just before it (temporary), and
 * so does each chain's final free but the last chain's, whose block is
 * held until after the peak. */
__attribute__((noinline)) void realloc_site(void)
{
    for (int c = 0; c < CHAINS; c++) {
        void *p = realloc(NULL, STEP_SIZE(1));
        use(p);
        for (int k = 2; k <= STEPS; k++) {
            p = realloc(p, STEP_SIZE(k));
            use(p);
        }
        if (c < CHAINS - 1)
            free(p);
        else
            kept_chain = p;
    }
}

__attribute__((noinline)) void calloc_site(void)
{
    for (int i = 0; i < CALLOC_N; i++)
        use(calloced[i] = calloc(7, 11));
}

__attribute__((noinline)) void memalign_site(void)
{
    for (int i = 0; i < ALIGN_N; i++) {
        if (posix_memalign(&aligned[i], 64, ALIGN_SIZE) != 0)
            abort();
        use(aligned[i]);
    }
}

__attribute__((noinline)) void peak_small(void)
{
    for (int i = 0; i < SMALL_N; i++)
        use(small[i] = malloc(SMALL_SIZE));
}

__attribute__((noinline)) void peak_big(void)
{
    for (int i = 0; i < BIG_N; i++)
        use(big[i] = malloc(BIG_SIZE));
}

/* After the peak: the first free (a 100 B block) follows a 1 MiB
 * allocation, so no free here is temporary. */
static void release(void)
{
    for (int i = 0; i < SMALL_N; i++)
        free(small[i]);
    for (int i = 0; i < BIG_N; i++)
        free(big[i]);
    for (int i = 0; i < CALLOC_N; i++)
        free(calloced[i]);
    for (int i = 0; i < ALIGN_N; i++)
        free(aligned[i]);
    free(kept_chain);
}

/* Threads: each allocates its share; once all are joined (the peak is the
 * last of their allocations), each thread frees the next one's blocks. A
 * thread's first and last blocks differ in size, so the first free after
 * the last allocation is not temporary by either reading. */
__attribute__((noinline)) void thread_alloc(int t)
{
    for (int i = 0; i < THREAD_N; i++)
        use(blocks[t][i] = malloc(THREAD_SIZE(t, i)));
}

static void *producer(void *arg)
{
    thread_alloc((int)(long)arg);
    return NULL;
}

static void *consumer(void *arg)
{
    int t = ((int)(long)arg + 1) % THREADS;
    for (int i = 0; i < THREAD_N; i++)
        free(blocks[t][i]);
    return NULL;
}

static void run_threads(void *(*fn)(void *))
{
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        if (pthread_create(&th[t], NULL, fn, (void *)t) != 0)
            abort();
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
}

/* ---- the truth, from the constants above */

struct site {
    const char *name;
    long allocations, bytes, peak, leaked, leaked_count, temporary;
    long sizes[STEPS][2]; /* {size, count}, up to STEPS distinct sizes */
};

static void print_site(const struct site *s, int last)
{
    printf("    \"%s\": {\"allocations\": %ld, \"bytes\": %ld, \"peak\": %ld, "
           "\"leaked\": %ld, \"leaked_count\": %ld, \"temporary\": %ld, \"sizes\": {",
           s->name, s->allocations, s->bytes, s->peak, s->leaked, s->leaked_count, s->temporary);
    for (int i = 0; i < STEPS && s->sizes[i][1]; i++)
        printf("%s\"%ld\": %ld", i ? ", " : "", s->sizes[i][0], s->sizes[i][1]);
    printf("}}%s\n", last ? "" : ",");
}

static void print_truth(const struct site *sites, int n)
{
    long total[6] = {0};
    printf("{\n  \"sites\": {\n");
    for (int i = 0; i < n; i++) {
        print_site(&sites[i], i == n - 1);
        long v[6] = {sites[i].allocations, sites[i].bytes,        sites[i].peak,
                     sites[i].leaked,      sites[i].leaked_count, sites[i].temporary};
        for (int j = 0; j < 6; j++)
            total[j] += v[j];
    }
    printf("  },\n  \"total\": {\"allocations\": %ld, \"bytes\": %ld, \"peak\": %ld, "
           "\"leaked\": %ld, \"leaked_count\": %ld, \"temporary\": %ld}\n}\n",
           total[0], total[1], total[2], total[3], total[4], total[5]);
}

/* A site of one size: N blocks, HELD of them at the peak, LEAKED never
 * freed, TEMPORARY of them freed at once. */
static struct site uniform(const char *name, long n, long size, long held, long leaked,
                           long temporary)
{
    struct site s = {name, n, n * size, held * size, leaked * size, leaked, temporary, {{size, n}}};
    return s;
}

static void truth_plain(void)
{
    struct site s[] = {
        uniform("leak_site", LEAK_N, LEAK_SIZE, LEAK_N, LEAK_N, 0),
        uniform("temp_site", TEMP_N, TEMP_SIZE, 0, 0, TEMP_N),
        {"churn_site", CHURN_ROUNDS * CHURN_N, 0, 0, 0, 0, 0, {{0}}},
        /* held at the peak: the last chain's last block */
        {"realloc_site", CHAINS * STEPS, 0, STEP_SIZE(STEPS), 0, 0, CHAINS * STEPS - 1, {{0}}},
        uniform("calloc_site", CALLOC_N, CALLOC_SIZE, CALLOC_N, 0, 0),
        uniform("memalign_site", ALIGN_N, ALIGN_SIZE, ALIGN_N, 0, 0),
        uniform("peak_small", SMALL_N, SMALL_SIZE, SMALL_N, 0, 0),
        uniform("peak_big", BIG_N, BIG_SIZE, BIG_N, 0, 0),
    };
    for (int i = 0; i < 4; i++) {
        s[2].sizes[i][0] = CHURN_SIZE(i);
        s[2].sizes[i][1] = CHURN_ROUNDS * CHURN_N / 4;
        s[2].bytes += s[2].sizes[i][0] * s[2].sizes[i][1];
    }
    for (int k = 1; k <= STEPS; k++) {
        s[3].sizes[k - 1][0] = STEP_SIZE(k);
        s[3].sizes[k - 1][1] = CHAINS;
        s[3].bytes += (long)STEP_SIZE(k) * CHAINS;
    }
    print_truth(s, sizeof s / sizeof s[0]);
}

static void truth_threads(void)
{
    struct site s = {"thread_alloc", THREADS * THREAD_N, 0, 0, 0, 0, 0, {{0}}};
    for (int t = 0; t < THREADS; t++)
        for (int odd = 0; odd < 2; odd++) {
            long size = THREAD_SIZE(t, odd), count = THREAD_N / 2;
            s.sizes[2 * t + odd][0] = size;
            s.sizes[2 * t + odd][1] = count;
            s.bytes += size * count;
        }
    s.peak = s.bytes; /* everything is held when the last thread is joined */
    print_truth(&s, 1);
}

int main(int argc, char **argv)
{
    int threads = 0, truth = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0)
            threads = 1;
        else if (strcmp(argv[i], "--truth") == 0)
            truth = 1;
        else
            return 2;
    }
    if (truth) {
        threads ? truth_threads() : truth_plain();
        return 0;
    }
    if (threads) {
        run_threads(producer);
        run_threads(consumer);
        return 0;
    }
    leak_site();
    temp_site();
    churn_site();
    realloc_site();
    calloc_site();
    memalign_site();
    peak_small();
    peak_big();
    release();
    return 0;
}
