/*
 * kallsyms_read.c - a kallsyms file's text handed to its parser a piece
 * at a time, read on the parser's thread or, beside it, on a thread of
 * its own (kallsyms_impl.h).
 *
 * Why beside: the kernel prints /proc/kallsyms a page at a time as it is
 * read, 45-55 ms of system time here for 122 thousand lines, and parsing
 * them (with the page faults of the table growing) is 10-15 ms more. A
 * reader of many threads reads the file on a thread of its own from its
 * start (perf_data_kernel.c) and, on a machine with many cores, waits for
 * nothing else: with the parsing beside the printing, the table is ready
 * when the printing ends.
 * Invariants: pieces reach the parser in the file's order; a slot is
 * written by the reading thread only while it is not in [head, head +
 * filled), the ones the parser may read; an error on either side stops
 * both, and no thread runs once ks_read_pieces returns.
 */
#include "symbol/kallsyms_impl.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

/* Pieces in flight: the parser keeps up, so a few absorb the unevenness
 * of the two sides; small ones stay in the caches between them. A
 * fuzzing build's are tiny, so that its inputs' lines are cut. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
enum { KS_SLOTS = 4, KS_PIECE = 64 };
#else
enum { KS_SLOTS = 4, KS_PIECE = 256 << 10 };
#endif

/* A piece read: fills buf[0, KS_PIECE) but at the file's end (a /proc
 * file gives a page or so a call). 0, or -errno. */
static int fill(int fd, char *buf, size_t *len)
{
    for (*len = 0; *len < KS_PIECE;) {
        ssize_t got = read(fd, buf + *len, KS_PIECE - *len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -errno;
        if (got == 0)
            break;
        *len += (size_t)got;
    }
    return 0;
}

static int read_here(int fd, ks_piece_fn *piece, void *ctx)
{
    char *buf = malloc(KS_PIECE);
    if (!buf)
        return -ENOMEM;
    int err = 0;
    for (size_t len = 1; !err && len;)
        if (!(err = fill(fd, buf, &len)) && len)
            err = piece(ctx, buf, len);
    free(buf);
    return err;
}

struct ahead {
    int fd;
    char *buf[KS_SLOTS];
    size_t len[KS_SLOTS]; /* 0: the file's end, or the reading's error */
    int err;              /* the reading's */
    /* shared: the slots [head, head + filled) are read, the others free */
    pthread_mutex_t lock;
    pthread_cond_t moved;
    unsigned head, filled;
    bool stop; /* the parser failed: the reading ends */
};

static void *ahead_main(void *arg)
{
    struct ahead *a = arg;
    for (;;) {
        pthread_mutex_lock(&a->lock);
        while (a->filled == KS_SLOTS && !a->stop)
            pthread_cond_wait(&a->moved, &a->lock);
        bool stop = a->stop;
        unsigned at = (a->head + a->filled) % KS_SLOTS; /* head moves, head + filled not */
        pthread_mutex_unlock(&a->lock);
        if (stop)
            return NULL;
        int err = fill(a->fd, a->buf[at], &a->len[at]);
        if (err)
            a->len[at] = 0;
        pthread_mutex_lock(&a->lock);
        a->err = err;
        a->filled++;
        pthread_cond_signal(&a->moved);
        pthread_mutex_unlock(&a->lock);
        if (!a->len[at])
            return NULL;
    }
}

/* The parser's side: the pieces taken in order till the end, an error of
 * the reading or its own. */
static int take_all(struct ahead *a, ks_piece_fn *piece, void *ctx)
{
    for (;;) {
        pthread_mutex_lock(&a->lock);
        while (a->filled == 0)
            pthread_cond_wait(&a->moved, &a->lock);
        unsigned at = a->head;
        pthread_mutex_unlock(&a->lock);
        if (!a->len[at])
            return a->err; /* the reading thread has ended */
        int err = piece(ctx, a->buf[at], a->len[at]);
        pthread_mutex_lock(&a->lock);
        a->head = (a->head + 1) % KS_SLOTS;
        a->filled--;
        a->stop = err != 0;
        pthread_cond_signal(&a->moved);
        pthread_mutex_unlock(&a->lock);
        if (err)
            return err;
    }
}

static int read_beside(int fd, ks_piece_fn *piece, void *ctx)
{
    struct ahead *a = calloc(1, sizeof(*a));
    char *bufs = malloc((size_t)KS_SLOTS * KS_PIECE);
    if (!a || !bufs) {
        free(a);
        free(bufs);
        return -ENOMEM;
    }
    a->fd = fd;
    for (unsigned i = 0; i < KS_SLOTS; i++)
        a->buf[i] = bufs + (size_t)i * KS_PIECE;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->moved, NULL);
    pthread_t tid;
    int err;
    if (pthread_create(&tid, NULL, ahead_main, a) == 0) {
        err = take_all(a, piece, ctx);
        pthread_join(tid, NULL);
    } else {
        err = read_here(fd, piece, ctx); /* no thread: read here */
    }
    pthread_cond_destroy(&a->moved);
    pthread_mutex_destroy(&a->lock);
    free(bufs);
    free(a);
    return err;
}

int ks_read_pieces(int fd, bool beside, ks_piece_fn *piece, void *ctx)
{
    return beside ? read_beside(fd, piece, ctx) : read_here(fd, piece, ctx);
}
