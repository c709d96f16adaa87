/*
 * heap_sites.c - programs with known allocations for tests/record/heap.py
 * (ember record --heap and libember-heap.so), one per mode (argv[1]):
 * each allocating function is its own call site (noinline), and what it
 * allocates, frees and leaves is written in the test beside its name.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SITE __attribute__((noinline))

SITE static void *site_a(size_t n)
{
    return malloc(n);
}

SITE static void *site_b(size_t n)
{
    return calloc(n, 10);
}

SITE static void *site_grow(void *p, size_t n)
{
    return realloc(p, n);
}

/* exactly 3 mallocs, nothing else (no stdio) */
static int three(void)
{
    void *a = site_a(100), *b = site_a(200), *c = site_b(30);
    free(a);
    (void)b;
    (void)c;
    return 0;
}

/* site_a: 1000 x 100 B freed; site_b: 10 x 1000 B leaked; site_grow: a
 * chain 1 -> 2 -> ... -> 50 x 64 B, then freed */
static int sites(void)
{
    for (int i = 0; i < 1000; i++)
        free(site_a(100));
    for (int i = 0; i < 10; i++)
        (void)site_b(100);
    void *p = NULL;
    for (int i = 1; i <= 50; i++)
        p = site_grow(p, (size_t)i * 64);
    free(p);
    return 0;
}

/* glibc's results and errno for the aligned and array functions, printed
 * (alignment: only a power of two's, the others depend on the address) */
static void show(const char *what, void *p, int rc, size_t align)
{
    int e = errno;
    bool pow2 = align && !(align & (align - 1));
    printf("%s: %s rc=%d errno=%d aligned=%d\n", what, p ? "ptr" : "null", rc, e,
           p && pow2 ? (int)((uintptr_t)p % align == 0) : -1);
}

static int aligned(void)
{
    size_t aligns[] = {0, 1, 3, 8, 16, 24, 64, 4096, (size_t)1 << 62};
    for (size_t i = 0; i < sizeof(aligns) / sizeof(*aligns); i++) {
        void *p = NULL;
        errno = 0;
        int rc = posix_memalign(&p, aligns[i], 100);
        show("posix_memalign", rc ? NULL : p, rc, aligns[i]);
        free(rc ? NULL : p);
        errno = 0;
        show("aligned_alloc", p = aligned_alloc(aligns[i], 128), 0, aligns[i]);
        free(p);
        errno = 0;
        show("memalign", p = memalign(aligns[i], 100), 0, aligns[i]);
        free(p);
    }
    errno = 0;
    void *p = NULL;
    show("posix_memalign huge", NULL, posix_memalign(&p, 64, SIZE_MAX - 10), 64);
    errno = 0;
    show("valloc", p = valloc(100), 0, 4096);
    free(p);
    errno = 0;
    show("pvalloc", p = pvalloc(100), 0, 4096);
    free(p);
    errno = 0;
    show("reallocarray overflow", reallocarray(NULL, SIZE_MAX / 2, 3), 0, 0);
    errno = 0;
    show("reallocarray", p = reallocarray(NULL, 10, 10), 0, 16);
    errno = 0;
    show("reallocarray grow", p = reallocarray(p, 20, 10), 0, 16);
    free(p);
    errno = 0;
    show("malloc huge", malloc(SIZE_MAX - 100), 0, 0);
    errno = 0;
    show("calloc overflow", calloc(SIZE_MAX / 2, 3), 0, 0);
    errno = 0;
    show("realloc huge", realloc(NULL, SIZE_MAX - 100), 0, 0);
    return 0;
}

enum { THREADS = 4, PER_THREAD = 1000, KEEP = 7 };
static void *blocks[THREADS][PER_THREAD];
static pthread_barrier_t barrier;

/* Each thread allocates its row, then frees the next thread's row but its
 * last KEEP blocks: THREADS * KEEP blocks of 48 B live at the end. */
SITE static void *thread_main(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int i = 0; i < PER_THREAD; i++)
        blocks[me][i] = site_a(48);
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < PER_THREAD - KEEP; i++)
        free(blocks[(me + 1) % THREADS][i]);
    return NULL;
}

static int threads(void)
{
    pthread_t t[THREADS];
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    return 0;
}

/* 200 threads one after another, each allocating and freeing 100 B */
SITE static void *short_main(void *arg)
{
    free(site_a(100));
    return arg;
}

static int short_threads(void)
{
    for (int i = 0; i < 200; i++) {
        pthread_t t;
        pthread_create(&t, NULL, short_main, NULL);
        pthread_join(t, NULL);
    }
    return 0;
}

/* The parent: 3 x 300 B (site_a), one before the fork; the child: 7 x 70 B
 * (site_b: calloc(n, 10)) and frees one parent block (a free its own
 * file has no allocation for). */
static int forks(char *self, bool exec)
{
    void *keep = site_a(300);
    pid_t pid = fork();
    if (pid == 0) {
        if (exec)
            execv(self, (char *[]){self, "three", NULL});
        for (int i = 0; i < 7; i++)
            (void)site_b(7);
        free(keep);
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    (void)site_a(300);
    (void)site_a(300);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* vfork and exec (the child shares the parent's memory, the recorder's
 * included, until it execs): site_a 300 B before and after */
static int vforks(char *self)
{
    (void)site_a(300);
    pid_t pid = vfork();
    if (pid == 0) {
        execv(self, (char *[]){self, "three", NULL});
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    (void)site_a(300);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* 5000 allocations of 32 B, then SIGKILL */
static int killed(void)
{
    for (int i = 0; i < 5000; i++)
        (void)site_a(32);
    raise(SIGKILL);
    return 1;
}

/* Sampled mode: site_a 20000 x 1000 B, site_b 2000 x 5000 B (calloc(500,
 * 10)), site_grow 100000 x 16 B (as malloc: realloc of NULL), all freed. */
static int sampled(void)
{
    for (int i = 0; i < 20000; i++)
        free(site_a(1000));
    for (int i = 0; i < 2000; i++)
        free(site_b(500));
    for (int i = 0; i < 100000; i++)
        free(site_grow(NULL, 16));
    return 0;
}

/* Closes every descriptor above 2 and puts its own file (path) under
 * each number, as daemons do, then 300000 x 64 B freed (records enough
 * for several chunks): the recorder must neither lose them nor write into
 * the program's file. */
static int closer(const char *path)
{
    for (int fd = 3; fd < 4096; fd++)
        close(fd);
    int mine = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    for (int fd = 3; fd < 4096; fd++)
        if (fd != mine)
            dup2(mine, fd);
    if (mine < 0 || write(mine, "mine\n", 5) != 5)
        return 1;
    for (int i = 0; i < 300000; i++)
        free(site_a(64));
    return 0;
}

/* 10 x 64 B, "ready" on stdout, then waits to be stopped */
static int wait_stop(void)
{
    for (int i = 0; i < 10; i++)
        (void)site_a(64);
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "three") == 0)
        return three();
    if (strcmp(mode, "sites") == 0)
        return sites();
    if (strcmp(mode, "aligned") == 0)
        return aligned();
    if (strcmp(mode, "threads") == 0)
        return threads();
    if (strcmp(mode, "short-threads") == 0)
        return short_threads();
    if (strcmp(mode, "fork") == 0 || strcmp(mode, "forkexec") == 0)
        return forks(argv[0], strcmp(mode, "forkexec") == 0);
    if (strcmp(mode, "vfork") == 0)
        return vforks(argv[0]);
    if (strcmp(mode, "kill") == 0)
        return killed();
    if (strcmp(mode, "sampled") == 0)
        return sampled();
    if (strcmp(mode, "wait") == 0)
        return wait_stop();
    if (strcmp(mode, "closer") == 0 && argc > 2)
        return closer(argv[2]);
    fprintf(stderr, "usage: heap_sites "
                    "three|sites|aligned|threads|short-threads|fork|forkexec|vfork|kill|sampled|"
                    "wait|closer FILE\n");
    return 2;
}
