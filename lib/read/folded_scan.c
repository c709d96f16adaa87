/*
 * folded_scan.c - reading folded lines, whatever is done with them (see
 * folded_scan.h; ember_folded_scan: a profile in folded.c;
 * ember_folded_scan_all: the folded diff's table, transform/stack_diff_read.c).
 *
 * The work is in three steps. Reading takes a chunk of whole lines from
 * the input. Parsing finds each line's count, or its two counts, and its
 * stack, and hashes the stack (ember_stack_text_key): work that needs
 * nothing but the line. Delivering hands the chunk's lines to fn->line in
 * order, each after showing the next one to fn->hint (so that what adding
 * it reads is on its way from memory): the work on shared tables.
 *
 * Given o->threads > 1, the inputs are read on a thread of their own, a
 * few chunks ahead of the caller's thread, which delivers, and the reader
 * goes on into the next input while the last lines of one are delivered.
 * The reading thread gives away work by how far ahead it is: with no chunk
 * waiting, the caller's thread is idle and parses the chunk itself; with
 * every slot full, the caller's thread is behind, and the reader also
 * splits the stacks of the chunk it has just parsed (fn->split, where
 * given), which the caller's thread would otherwise do for each new stack.
 * So the two even out. On the diff of two files of deep stacks
 * (bench/run_tree.sh), where BEFORE's stacks are all new and AFTER's
 * mostly seen, the wall time went from 1.7 to 2.2 times faster than
 * inferno, for some 15% more CPU time (cache lines that cross cores); a
 * flame graph of 301k stacks took 6% less wall time.
 *
 * Invariants: lines reach fn in input order, each warning or error at its
 * line, as one thread would give them, and an input's end (fn->end)
 * before the next input's lines; a chunk goes back to the reader only
 * once all its lines are delivered (a line points into its chunk); an
 * error on either side stops both, and nothing runs once the scan
 * returns (after an error, once the reading thread has its chunk: from a
 * pipe that stalls, that waits for more input or its end). The progress
 * callback runs on the reading thread (it alone moves the inputs),
 * warnings and fn's calls but split on the caller's. With one thread
 * (o->threads <= 1, or pthread_create failing) the steps alternate.
 */
#include "read/read_impl.h"
#include "ember/model.h"
#include "base/chunk.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Chunks in flight: some read ahead while one is delivered, so that
 * neither side waits on a slow line. Small chunks stay in the cache
 * between the reader's pass and the caller's. */
enum { SCAN_SLOTS = 4, SCAN_CHUNK = 256 << 10 };

/* A chunk of input src and its lines; end: the input's last (err: why it
 * ended). */
struct batch {
    size_t src;
    struct ember_chunk c;
    struct ember_folded_parsed *lines;
    size_t n, cap;
    bool end;
    int err;
    struct ember_diag d;
    bool parsed; /* lines holds the chunk's lines */
    /* fn->split's results for the lines, when the reader had time */
    size_t *ends;
    uint64_t *hashes;
    size_t nsplit, ecap, hcap;
};

struct scan {
    const struct ember_folded_source *src;
    size_t nsrc;
    const struct ember_read_opts *o;
    const struct ember_folded_calls *fn;
    struct ember_diag *d;
    struct batch slot[SCAN_SLOTS];
    /* shared: the slots [head, head + filled) are parsed, the others free */
    pthread_mutex_t lock;
    pthread_cond_t moved;
    unsigned head, filled;
    bool stop; /* the caller gave up: the reader ends */
    /* the caller's: lines without a count in the input being delivered,
     * and the first of them, said once at its end */
    uint64_t skipped, skipped_line;
    char skipped_text[200];
};

/* The reader's step: the next chunk of source i into b. */
static void read_batch(struct scan *r, size_t i, struct batch *b)
{
    struct ember_input *in = r->src[i].in;
    b->src = i;
    b->n = 0;
    b->err = 0;
    b->end = false;
    int got = ember_input_read_chunk_upto(in, &b->c, EMBER_CUT_LINE, SCAN_CHUNK, &b->d);
    b->parsed = got <= 0; /* nothing to parse */
    if (got <= 0) {
        b->end = true;
        b->err = got;
        return;
    }
    if (r->o->progress)
        r->o->progress(r->o->progress_ctx, in);
}

/* The lines of b's chunk parsed, by whichever thread has the time. */
static int parse_batch(struct scan *r, struct batch *b, struct ember_diag *d)
{
    const char *s = b->c.data, *end = s + b->c.len;
    b->n = 0;
    for (uint64_t line = b->c.first_line; s < end; line++) {
        if (EMBER_VEC_RESERVE(b->lines, b->cap, b->n + 1) < 0)
            return ember_diag_set(d, -ENOMEM, ember_input_name(r->src[b->src].in), line,
                                  "out of memory");
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        struct ember_folded_parsed *p = &b->lines[b->n++];
        ember_folded_parse_line(s, n, !nl, p);
        p->line = line;
        s += n + 1;
    }
    b->parsed = true;
    return 0;
}

/* A line without a count is skipped, as flamegraph.pl skips it, wherever
 * it is; the input's end says how many there were and which came first. */
static void skip_line(struct scan *r, const struct ember_folded_source *src,
                      const struct ember_folded_parsed *p)
{
    src->st->skipped++;
    if (r->skipped++ == 0) {
        r->skipped_line = p->line;
        ember_quote(r->skipped_text, sizeof(r->skipped_text), p->s, p->n, 120);
    }
}

void ember_folded_warn_skipped(const struct ember_read_opts *o, const struct ember_input *in,
                               uint64_t n, uint64_t line, const char *text)
{
    if (!n || !o->warn)
        return;
    struct ember_diag d;
    ember_diag_set(&d, 0, ember_input_name(in), line,
                   "ignored %llu line%s with invalid format (expected \"frame;frame COUNT\"), as "
                   "flamegraph.pl does%s \"%s\"",
                   (unsigned long long)n, n == 1 ? "" : "s",
                   n == 1 ? ":" : "; the first is this one:", text);
    o->warn(o->warn_ctx, &d);
}

static void warn_skipped(struct scan *r, const struct ember_folded_source *src)
{
    uint64_t n = r->skipped;
    r->skipped = 0;
    ember_folded_warn_skipped(r->o, src->in, n, r->skipped_line, r->skipped_text);
}

/* The last line of the input, without its newline nor a count. */
static int cut_line(struct scan *r, const struct ember_folded_source *src,
                    const struct ember_folded_parsed *p)
{
    char q[200], inside[240];
    ember_quote(q, sizeof(q), p->s, p->n, 120);
    snprintf(inside, sizeof(inside), "the line \"%s\"", q);
    return ember_format_truncated(r->d, ember_input_name(src->in), p->line, inside,
                                  "a count at the end of the line (\"frame;frame COUNT\")");
}

/* A count beyond the model's 63 bits: an error, not a line to skip. */
static int huge_line(struct scan *r, const struct ember_folded_source *src,
                     const struct ember_folded_parsed *p)
{
    char q[200];
    ember_quote(q, sizeof(q), p->s, p->n, 120);
    return ember_diag_set(r->d, -ERANGE, ember_input_name(src->in), p->line,
                          "a count does not fit 64 bits (at most 9223372036854775807): \"%s\"", q);
}

static int deliver(struct scan *r, const struct ember_folded_source *src,
                   struct ember_folded_parsed *p)
{
    if (p->kind == EMBER_LINE_CUT)
        return cut_line(r, src, p);
    if (p->kind == EMBER_LINE_HUGE)
        return huge_line(r, src, p);
    if (p->kind == EMBER_LINE_SKIPPED)
        skip_line(r, src, p);
    if (p->kind != EMBER_LINE_COUNTED)
        return 0;
    int err = r->fn->line(src->ctx, &p->l);
    if (err == -ERANGE)
        return ember_diag_set(r->d, err, ember_input_name(src->in), p->line,
                              "counts overflow a 64-bit total");
    if (!err)
        src->st->samples++;
    return err;
}

/* The reader's spare work: b's stacks split by fn->split, so that the
 * caller's thread, which is behind, has less to do. Results are placed
 * first, then pointed to (the arrays move as they grow). */
static void split_batch(struct scan *r, struct batch *b)
{
    const void *ctx = r->src[b->src].ctx;
    b->nsplit = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct ember_folded_line *l = &b->lines[i].l;
        size_t room = EMBER_FOLDED_SPLIT_ROOM(l->len);
        l->names = 0;
        if (b->lines[i].kind != EMBER_LINE_COUNTED ||
            EMBER_VEC_RESERVE(b->ends, b->ecap, b->nsplit + room) < 0 ||
            EMBER_VEC_RESERVE(b->hashes, b->hcap, b->nsplit + room) < 0)
            continue; /* the caller's thread will */
        l->names = r->fn->split(ctx, l, b->ends + b->nsplit, b->hashes + b->nsplit);
        b->lines[i].split_at = b->nsplit;
        b->nsplit += l->names;
    }
    for (size_t i = 0; i < b->n; i++) {
        struct ember_folded_line *l = &b->lines[i].l;
        l->ends = l->names ? b->ends + b->lines[i].split_at : NULL;
        l->name_hash = l->names ? b->hashes + b->lines[i].split_at : NULL;
    }
}

/* The caller's step: b's lines to fn, each after the hint of the next,
 * then b's own end, and the source's if it is its last. */
static int deliver_batch(struct scan *r, struct batch *b)
{
    const struct ember_folded_source *src = &r->src[b->src];
    int err = b->parsed ? 0 : parse_batch(r, b, r->d);
    if (err)
        return err;
    if (b->n && b->lines[0].kind == EMBER_LINE_COUNTED && r->fn->hint)
        r->fn->hint(src->ctx, &b->lines[0].l);
    for (size_t i = 0; i < b->n && !err; i++) {
        if (i + 1 < b->n && b->lines[i + 1].kind == EMBER_LINE_COUNTED && r->fn->hint)
            r->fn->hint(src->ctx, &b->lines[i + 1].l);
        err = deliver(r, src, &b->lines[i]);
    }
    if (!err && b->err) {
        *r->d = b->d;
        err = b->err;
    }
    if (!err && b->end)
        warn_skipped(r, src);
    if (!err && b->end && r->fn->end)
        err = r->fn->end(src->ctx, src->in, src->st, r->d);
    return err;
}

static void *reader_main(void *arg)
{
    struct scan *r = arg;
    for (unsigned tail = 0, i = 0;; tail = (tail + 1) % SCAN_SLOTS) {
        pthread_mutex_lock(&r->lock);
        while (r->filled == SCAN_SLOTS && !r->stop)
            pthread_cond_wait(&r->moved, &r->lock);
        bool stop = r->stop;
        pthread_mutex_unlock(&r->lock);
        if (stop)
            return NULL;
        struct batch *b = &r->slot[tail];
        read_batch(r, i, b);
        pthread_mutex_lock(&r->lock);
        unsigned queued = r->filled;
        pthread_mutex_unlock(&r->lock);
        /* the caller waiting: it parses; behind: the lines are split too */
        if (!b->parsed && queued > 0 && (b->err = parse_batch(r, b, &b->d)) < 0) {
            b->n = 0; /* the error alone */
            b->parsed = b->end = true;
        }
        if (b->parsed && !b->err && queued + 1 == SCAN_SLOTS && r->fn->split)
            split_batch(r, b);
        pthread_mutex_lock(&r->lock);
        r->filled++;
        pthread_cond_signal(&r->moved);
        pthread_mutex_unlock(&r->lock);
        if (b->end && (b->err || ++i == r->nsrc))
            return NULL;
    }
}

/* The caller's side of the two threads. */
static int deliver_all(struct scan *r)
{
    for (;;) {
        pthread_mutex_lock(&r->lock);
        while (r->filled == 0)
            pthread_cond_wait(&r->moved, &r->lock);
        struct batch *b = &r->slot[r->head];
        pthread_mutex_unlock(&r->lock);
        int err = deliver_batch(r, b);
        bool end = b->end && (b->err || b->src + 1 == r->nsrc);
        pthread_mutex_lock(&r->lock);
        r->head = (r->head + 1) % SCAN_SLOTS;
        r->filled--;
        r->stop = err != 0;
        pthread_cond_signal(&r->moved);
        pthread_mutex_unlock(&r->lock);
        if (err || end)
            return err;
    }
}

/* The sources' lines to fn, read on a thread of their own if thread. */
static int scan(const struct ember_folded_source *src, size_t n, const struct ember_read_opts *o,
                const struct ember_folded_calls *fn, struct ember_diag *d, bool thread)
{
    struct scan *r = calloc(1, sizeof(*r));
    if (!r)
        return ember_diag_set(d, -ENOMEM, n ? ember_input_name(src[0].in) : NULL, 0,
                              "out of memory");
    *r = (struct scan){.src = src, .nsrc = n, .o = o, .fn = fn, .d = d};
    int err = 0;
    pthread_t tid;
    bool sync = thread && pthread_mutex_init(&r->lock, NULL) == 0;
    if (sync && pthread_cond_init(&r->moved, NULL) != 0) {
        pthread_mutex_destroy(&r->lock);
        sync = false;
    }
    if (n && sync && pthread_create(&tid, NULL, reader_main, r) == 0) {
        err = deliver_all(r);
        pthread_join(tid, NULL);
    } else { /* one thread: read a chunk, deliver it */
        for (size_t i = 0; i < n && !err; i++)
            for (bool end = false; !end && !err;) {
                read_batch(r, i, &r->slot[0]);
                end = r->slot[0].end;
                err = deliver_batch(r, &r->slot[0]);
            }
    }
    if (sync) {
        pthread_cond_destroy(&r->moved);
        pthread_mutex_destroy(&r->lock);
    }
    for (unsigned i = 0; i < SCAN_SLOTS; i++) {
        ember_chunk_release(&r->slot[i].c);
        free(r->slot[i].lines);
        free(r->slot[i].ends);
        free(r->slot[i].hashes);
    }
    free(r);
    return err;
}

int ember_folded_scan_all(const struct ember_folded_source *src, size_t n,
                          const struct ember_read_opts *o, const struct ember_folded_calls *fn,
                          struct ember_diag *d)
{
    return scan(src, n, o, fn, d, o->threads > 1);
}

int ember_folded_scan(struct ember_input *in, const struct ember_read_opts *o,
                      struct ember_read_stats *st, struct ember_diag *d,
                      const struct ember_folded_calls *fn, void *ctx)
{
    const struct ember_folded_source src = {in, st, ctx};
    return scan(&src, 1, o, fn, d, o->threads > 1);
}
