/*
 * perf_script_threads.c - reading `perf script` text with several threads:
 * each worker parses whole samples into a profile of its own, and the
 * profiles are merged as one thread would have built its own
 * (model/profile_merge.c), on as many threads.
 *
 * A file (or memory) is cut into byte ranges of `range` bytes, handed out in
 * order; each worker reads its ranges itself (perf_script_ranges.c), so
 * that the lock is held only to take the next range's number. A pipe or a
 * gzip stream is read in chunks of whole samples under the lock
 * (EMBER_CUT_SAMPLE), the chunks handed out in order.
 *
 * The serial part, measured (thread CPU time per phase, summed, against
 * the CPU time of the whole read at -j 1) on 650 MB of `perf script` of a
 * frame-pointer recording (4.9 M samples, 2,577 distinct stacks): holding
 * the lock 0.0013-0.0023 s (when each worker read, searched and counted
 * its chunk under it: 0.10-0.14 s), the merge 0.0007-0.0011 s, starting
 * the threads up to 0.0008 s (-j 16), of 1.25-1.40 s: 0.2-0.3% (it was
 * 8-10%). The merge's nodes grow with distinct stacks times threads, and
 * are merged on the workers' count of threads: on 300 MB of gen_perf
 * --uniform 300 100000 (963 k distinct nodes, nearly all of them in every
 * worker's profile) its serial part (frames, numbering, the nodes left
 * for the caller to place) is 4-13 ms, where merging the nodes one after
 * the other took 0.27-0.33 s.
 *
 * Invariants: every worker applies the same event filter (the one given, or
 * the input's first event); of several errors, the one earliest in the
 * input is reported (pieces after a failed one are not handed out); a
 * worker's pieces come in increasing order.
 */
#include "read/perf/perf_script_impl.h"
#include "model/profile_merge.h"
#include "base/diag.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- threads ---------------------------------------------------------- */

struct pool {
    pthread_mutex_t lock;
    struct ember_input *in;
    const struct ember_read_opts *o;
    const char *filter;
    bool ranges;     /* read by byte ranges (a seekable input), else by chunks */
    uint64_t size;   /* ranges: the input's size */
    uint64_t range;  /* ranges: their size */
    uint64_t next;   /* the next piece's number (range or chunk) */
    uint64_t parsed; /* ranges: bytes parsed, for progress */
    bool done;
    int err;
    uint64_t err_at; /* the failed piece's number */
    struct ember_diag d;
};

struct worker {
    struct pool *pool;
    struct ember_profile *p;
    struct ember_read_stats st;
    /* where st.other_event was seen: the input's first wins */
    uint64_t other_origin, other_line;
    struct ember_piece_marks marks; /* its profile after each piece */
    bool weighed;
    pthread_t tid;
};

/* The next piece for a worker, under the lock so that pieces go out in
 * the input's order: 1 with *at its number (and c filled, for chunks), 0
 * at the end or after an error, < 0 if reading fails. `parsed`: the bytes
 * the worker parsed since it last asked, for progress. */
static int take(struct pool *pl, struct ember_chunk *c, uint64_t parsed, uint64_t *at,
                struct ember_diag *d)
{
    const struct ember_read_opts *o = pl->o;
    pthread_mutex_lock(&pl->lock);
    int r = 0;
    if (!pl->done && !pl->err) {
        *at = pl->next++;
        if (pl->ranges)
            r = *at < (pl->size + pl->range - 1) / pl->range;
        else
            r = ember_input_read_chunk(pl->in, c, EMBER_CUT_SAMPLE, d);
    }
    if (r <= 0)
        pl->done = true;
    if (pl->ranges) {
        pl->parsed += parsed;
        ember_input_mark_consumed(pl->in, pl->parsed);
    }
    if (o->progress && (pl->ranges ? parsed > 0 : r > 0))
        o->progress(o->progress_ctx, pl->in);
    pthread_mutex_unlock(&pl->lock);
    return r;
}

/* Keeps the error of the piece earliest in the input. */
static void fail(struct pool *pl, int err, uint64_t at, const struct ember_diag *d)
{
    pthread_mutex_lock(&pl->lock);
    if (!pl->err || at < pl->err_at) {
        pl->err = err;
        pl->err_at = at;
        pl->d = *d;
    }
    pthread_mutex_unlock(&pl->lock);
}

static int parse_piece(struct pool *pl, struct perf_parser *ps, struct perf_ranges *rr,
                       const struct ember_chunk *c, uint64_t at, uint64_t *parsed)
{
    if (pl->ranges)
        return ember_perf_parse_range(rr, ps, at * pl->range, (at + 1) * pl->range, parsed);
    int err = ember_perf_parse_chunk(ps, c);
    return err ? err : ember_perf_parser_finish(ps);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct pool *pl = w->pool;
    struct ember_read_opts o = *pl->o;
    ember_read_opts_set(&o, "event-filter", pl->filter); /* every worker the same one */
    struct perf_parser ps;
    struct perf_ranges rr;
    struct ember_chunk c = {0};
    struct ember_diag d;
    ember_diag_clear(&d);
    ember_perf_ranges_init(&rr, pl->in);
    uint64_t at = 0, parsed = 0;
    int err = ember_perf_parser_init(&ps, w->p, &o, &w->st, ember_input_name(pl->in), &d);
    while (!err) {
        int r = take(pl, &c, parsed, &at, &d);
        if (r <= 0) {
            err = r;
            break;
        }
        err = parse_piece(pl, &ps, &rr, &c, at, &parsed);
        if (!err)
            err = ember_profile_mark_piece(&w->marks, at, w->p);
    }
    w->weighed = ps.weighed;
    w->other_origin = ps.other_origin;
    w->other_line = ps.other_line;
    ember_perf_parser_release(&ps);
    ember_perf_ranges_release(&rr);
    ember_chunk_release(&c);
    if (err)
        fail(pl, err, at, &d);
    return NULL;
}

/* The first event named in the input decides the default filter: find it in
 * the first bytes so that every thread applies the same one. */
bool ember_perf_first_event(struct ember_input *in, char *out, size_t cap, struct ember_diag *d)
{
    const char *data;
    size_t len;
    if (ember_input_peek(in, &data, &len, d) < 0)
        return false;
    const char *p = data, *end = data + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return false;
        struct event_head ev;
        const char *e;
        size_t el;
        int64_t per;
        size_t n = (size_t)(nl - p);
        if (p[0] != '#' && ember_perf_event_head(p, n, &ev)) {
            const char *frame = ember_perf_combined_split(&ev);
            if (ember_perf_event_name(p, frame ? (size_t)(frame - p) : n, &e, &el, &per)) {
                ember_perf_copy_name(out, cap, e, el);
                return true;
            }
        }
        p = nl + 1;
    }
    return false;
}

/* The workers' profiles into p, in the input's order, and their counts
 * into st; frees them. */
static int gather(struct ember_profile *p, struct worker *w, unsigned n,
                  struct ember_read_stats *st, bool *weighed)
{
    struct ember_profile **src = calloc(n + 1, sizeof(*src));
    struct ember_piece_marks *marks = calloc(n + 1, sizeof(*marks));
    int err = src && marks ? 0 : -ENOMEM;
    uint64_t other_origin = 0, other_line = 0;
    for (unsigned i = 0; i < n; i++) {
        *weighed |= w[i].weighed;
        st->samples += w[i].st.samples;
        st->skipped += w[i].st.skipped;
        st->filtered += w[i].st.filtered;
        /* the first other event of the input, whichever worker read it */
        if (w[i].st.other_event[0] &&
            (!st->other_event[0] || w[i].other_origin < other_origin ||
             (w[i].other_origin == other_origin && w[i].other_line < other_line))) {
            memcpy(st->other_event, w[i].st.other_event, sizeof(st->other_event));
            other_origin = w[i].other_origin;
            other_line = w[i].other_line;
        }
        if (!err) {
            src[i] = w[i].p;
            marks[i] = w[i].marks;
        }
    }
    if (!err)
        err = ember_profile_merge_pieces(p, src, marks, n, n);
    for (unsigned i = 0; i < n; i++) {
        ember_profile_free(w[i].p);
        free(w[i].marks.v);
    }
    free(src);
    free(marks);
    return err;
}

int ember_perf_read_threaded(struct ember_profile *p, struct ember_input *in,
                             const struct ember_read_opts *o, struct ember_read_stats *st,
                             struct ember_diag *d, const char *filter, uint64_t range)
{
    unsigned n = o->threads;
    struct pool pl = {
        .in = in, .o = o, .filter = filter, .ranges = ember_input_seekable(in), .range = range};
    pl.size = pl.ranges ? (uint64_t)ember_input_size(in) : 0;
    struct worker *w = calloc(n, sizeof(*w));
    int err = w ? 0 : -ENOMEM;
    pthread_mutex_init(&pl.lock, NULL);
    ember_diag_clear(&pl.d);
    unsigned started = 0;
    for (; started < n && !err; started++) {
        w[started].pool = &pl;
        w[started].p = ember_profile_new();
        if (!w[started].p || pthread_create(&w[started].tid, NULL, worker_main, &w[started])) {
            ember_profile_free(w[started].p);
            err = -ENOMEM;
            break;
        }
    }
    for (unsigned i = 0; i < started; i++)
        pthread_join(w[i].tid, NULL);
    bool weighed = false;
    if (w) {
        /* after an error the profile is not used: merged or not */
        int merged = gather(p, w, started, st, &weighed);
        err = err ? err : merged;
    }
    ember_perf_copy_name(st->kept_event, sizeof(st->kept_event), filter, strlen(filter));
    ember_perf_set_unit(p, st->kept_event, weighed);
    pthread_mutex_destroy(&pl.lock);
    free(w);
    if (pl.err) {
        if (d)
            *d = pl.d;
        return pl.err;
    }
    return err;
}
