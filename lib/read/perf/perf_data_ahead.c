/*
 * perf_data_ahead.c - the perf.data reader's input read ahead on threads
 * of their own (-j 2 and more): read() copying the file out of the page
 * cache is about a third of reading a DWARF recording, and one thread
 * doing it all would be the serial part that caps every core added; the
 * copy scales with cores, so up to AHEAD_READERS threads share it while
 * the records are ordered, unwound and counted on the stream's thread.
 *
 * The rest of the input, from the stream's position (base), is cut into
 * chunks of AHEAD_CHUNK bytes: chunk k is read by ember_input_pread at
 * base + k * AHEAD_CHUNK by whichever thread takes it, into slot k % nslots
 * of a ring; the stream takes them strictly in order (pd_ahead_next),
 * giving back its last chunk's buffer for a thread to fill again. Only an
 * input that can be read at any offset is read so (a regular file or
 * memory, not gzip: ember_input_seekable), and its sequential position is
 * never moved: from base on, the stream's bytes all come from here.
 * Invariants: the chunks taken are the input's bytes from base, in order,
 * as one read() after another would give them; the first chunk short of
 * AHEAD_CHUNK (the input's end) or failing is the last one read and taken
 * (end), its error reaching the stream in its place; threads only pread
 * the input, the stream's thread alone marks it consumed and calls the
 * progress callback (once per chunk, in order); the threads are joined by
 * pd_ahead_stop, after which the stream's thread reads the next chunks
 * itself, so the stream goes on seeing the same bytes.
 *
 * With a framer, each chunk's records are framed there too (the reading
 * thread's other serial work: an fp sample's header and time cost it a
 * cache miss on bytes another core read, 20 ns): in chunk order, as a
 * chunk's first record is where its predecessor's last one ends, by the
 * thread that finds the next chunk to frame read (its own, just read and
 * in its caches, when chunks come in order), one thread at a time.
 * Invariants: chunks before fnext are framed, the chain says where
 * chunk fnext's records start; the stream takes a chunk once framed, or
 * unframed (none of its records framed) once the threads are joined.
 */
#include "read/perf/perf_data.h"
#include "read/read_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

enum {
    AHEAD_CHUNK = PD_CHUNK,
    AHEAD_READERS = 4, /* at most: copying being a third of the work, 4 let it go 12x */
    AHEAD_SLOTS = AHEAD_READERS + 2,
    /* the stream wakes a reader once this many slots are free, and each
     * reader woken wakes the next while there is room: a wake-up cost the
     * stream's thread 10-15 us in a VM, and one per chunk taken was 1-2%
     * of a DWARF read's work at -j 4, serial; the slots less AHEAD_WAKE
     * (1 at -j 2, 4 from -j 5 on) still hold chunks read when the
     * readers start again */
    AHEAD_WAKE = 2,
};

struct ahead_slot {
    struct ember_chunk c;
    int r; /* 1: bytes read, 0: none (the input's end), < 0: error (d) */
    bool full, framed;
    struct pd_frames fr;
    struct ember_diag d;
};

struct pd_ahead {
    struct ember_input *in;
    void (*progress)(void *ctx);
    void *ctx;
    uint64_t base; /* the input offset of chunk 0 */
    pthread_t thread[AHEAD_READERS];
    size_t nthreads, nslots;
    pthread_mutex_t mu;
    pthread_cond_t room;   /* a slot given back, or stop: for the threads */
    pthread_cond_t filled; /* a slot filled: for the stream */
    struct ahead_slot slot[AHEAD_SLOTS];
    uint64_t head; /* the chunk the stream takes next */
    uint64_t next; /* the chunk a thread reads next */
    uint64_t end;  /* no chunk from this one on is read or taken */
    bool stop;
    struct pd_framer framer; /* frame NULL: none */
    struct pd_chain chain;   /* at chunk fnext */
    uint64_t fnext;          /* the next chunk to frame */
    bool framing;            /* a thread frames fnext */
};

/* Reads chunk k into its slot: whether it is the last one (short, empty
 * or failed). */
static bool read_slot(struct pd_ahead *a, struct ahead_slot *s, uint64_t k)
{
    size_t got = 0;
    s->c.len = s->fr.n = 0;
    s->framed = false;
    s->r = ember_chunk_reserve(&s->c, AHEAD_CHUNK);
    if (s->r == 0)
        s->r = ember_input_pread(a->in, s->c.data, AHEAD_CHUNK, a->base + k * AHEAD_CHUNK, &got,
                                 &s->d);
    if (s->r == 0) {
        s->c.len = got;
        s->r = got > 0;
    }
    return s->r <= 0 || got < AHEAD_CHUNK;
}

/* Chunk k read (a->mu held, or no thread left): the stream told; the
 * first last chunk ends the reading (one with bytes is taken first). */
static void filled(struct pd_ahead *a, struct ahead_slot *s, uint64_t k, bool last)
{
    s->full = true;
    uint64_t end = k + (s->r != 0);
    if (last && end < a->end)
        a->end = end;
    pthread_cond_signal(&a->filled);
}

/* Frames the chunks read from fnext on, in order, while no other thread
 * does (a->mu held, let go while framing). */
static void frame_read(struct pd_ahead *a)
{
    while (a->framer.frame && !a->framing && a->fnext < a->next) {
        struct ahead_slot *s = &a->slot[a->fnext % a->nslots];
        if (!s->full)
            return; /* its reader frames it */
        a->framing = true;
        pthread_mutex_unlock(&a->mu);
        if (s->r > 0)
            a->framer.frame(a->framer.ctx, (const uint8_t *)s->c.data, s->c.len,
                            a->base + a->fnext * AHEAD_CHUNK, &a->chain, &s->fr);
        pthread_mutex_lock(&a->mu);
        s->framed = true;
        a->fnext++;
        a->framing = false;
        pthread_cond_signal(&a->filled);
    }
}

static void *ahead_main(void *arg)
{
    struct pd_ahead *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!a->stop && a->next < a->end && a->next >= a->head + a->nslots)
            pthread_cond_wait(&a->room, &a->mu);
        if (a->stop || a->next >= a->end)
            break;
        uint64_t k = a->next++;
        struct ahead_slot *s = &a->slot[k % a->nslots];
        bool more = a->next < a->head + a->nslots;
        pthread_mutex_unlock(&a->mu);
        if (more) /* the next reader woken by this one, not the stream */
            pthread_cond_signal(&a->room);
        bool last = read_slot(a, s, k);
        pthread_mutex_lock(&a->mu);
        filled(a, s, k, last);
        frame_read(a);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

int pd_ahead_start(struct pd_ahead **out, struct ember_input *in, uint64_t base, unsigned readers,
                   const struct pd_framer *framer, const struct pd_chain *chain,
                   void (*progress)(void *ctx), void *ctx)
{
    *out = NULL;
    struct pd_ahead *a = malloc(sizeof(*a));
    if (!a)
        return -ENOMEM;
    *a = (struct pd_ahead){.in = in, .progress = progress, .ctx = ctx, .base = base};
    if (framer && !chain->stop) {
        a->framer = *framer;
        a->chain = *chain;
    }
    a->end = UINT64_MAX;
    size_t want = readers < AHEAD_READERS ? readers : AHEAD_READERS;
    a->nslots = want + 2; /* each thread's being read, the stream's next, one spare */
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->room, NULL);
    pthread_cond_init(&a->filled, NULL);
    while (a->nthreads < want && pthread_create(&a->thread[a->nthreads], NULL, ahead_main, a) == 0)
        a->nthreads++;
    if (a->nthreads == 0) {
        pd_ahead_free(a);
        return 0; /* no thread: the caller reads as with one */
    }
    *out = a;
    return 0;
}

/* The slot of chunk head once it is read and framed (by the stream's
 * thread itself, unframed, after the threads are stopped), or NULL at the
 * end. */
static struct ahead_slot *wait_head(struct pd_ahead *a)
{
    struct ahead_slot *s = &a->slot[a->head % a->nslots];
    pthread_mutex_lock(&a->mu);
    while (a->head < a->end && !(s->full && (s->framed || !a->framer.frame)) && a->nthreads)
        pthread_cond_wait(&a->filled, &a->mu);
    bool at_end = a->head >= a->end, full = s->full;
    pthread_mutex_unlock(&a->mu);
    if (at_end || full)
        return at_end ? NULL : s;
    /* stopped, and no thread took this chunk: none is left to */
    a->next = a->head + 1;
    filled(a, s, a->head, read_slot(a, s, a->head));
    return a->head < a->end ? s : NULL;
}

int pd_ahead_next(struct pd_ahead *a, struct ember_chunk *c, struct pd_frames *fr,
                  struct ember_diag *d)
{
    struct ahead_slot *s = wait_head(a);
    if (!s)
        return 0;
    if (s->r < 0) { /* the reading has ended: this slot stays, the next again */
        *d = s->d;
        return s->r;
    }
    struct ember_chunk mine = *c; /* its buffers are filled again by a thread */
    *c = s->c;
    s->c = mine;
    struct pd_frames frames = *fr;
    *fr = s->fr;
    s->fr = frames;
    pthread_mutex_lock(&a->mu);
    s->full = false;
    a->head++;
    bool wake = a->head + a->nslots - a->next >= AHEAD_WAKE;
    pthread_mutex_unlock(&a->mu);
    if (wake) /* after the mutex is let go: the reader woken takes it at once */
        pthread_cond_signal(&a->room);
    ember_input_mark_consumed(a->in, a->base + (a->head - 1) * AHEAD_CHUNK + c->len);
    if (a->progress)
        a->progress(a->ctx);
    return 1;
}

void pd_ahead_stop(struct pd_ahead *a)
{
    if (!a || !a->nthreads)
        return;
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_broadcast(&a->room);
    pthread_mutex_unlock(&a->mu);
    for (size_t i = 0; i < a->nthreads; i++)
        pthread_join(a->thread[i], NULL);
    a->nthreads = 0;
    /* the buffers no chunk still to be taken is in are let go now: the
     * perf.data reader stops the threads after the file's last section,
     * before placing the profile raises the peak of its memory */
    for (size_t i = 0; i < a->nslots; i++) {
        uint64_t k = a->head + (i + a->nslots - a->head % a->nslots) % a->nslots;
        if (k >= a->next || k >= a->end) {
            ember_chunk_release(&a->slot[i].c);
            a->slot[i].full = false;
        }
        if (!a->slot[i].full) /* and the frames of chunks not taken framed */
            pd_frames_free(&a->slot[i].fr);
    }
}

void pd_ahead_free(struct pd_ahead *a)
{
    if (!a)
        return;
    pd_ahead_stop(a);
    for (size_t i = 0; i < AHEAD_SLOTS; i++) {
        ember_chunk_release(&a->slot[i].c);
        pd_frames_free(&a->slot[i].fr);
    }
    pthread_cond_destroy(&a->filled);
    pthread_cond_destroy(&a->room);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
