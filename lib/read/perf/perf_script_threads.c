/*
 * perf_script_threads.c - reading `perf script` text with several threads:
 * each worker parses whole samples into a profile of its own, and the
 * profiles are merged in the input's order of workers.
 *
 * Invariants: every worker applies the same event filter (the one given, or
 * the input's first event); the first error is the one reported.
 */
#include "read/perf/perf_script_impl.h"
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
    bool done;
    int err;
    struct ember_diag d;
};

struct worker {
    struct pool *pool;
    struct ember_profile *p;
    struct ember_read_stats st;
    uint64_t other_line; /* where st.other_event was seen: the input's first wins */
    bool weighed;
    pthread_t tid;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct pool *pl = w->pool;
    struct ember_read_opts o = *pl->o;
    ember_read_opts_set(&o, "event-filter", pl->filter); /* every worker the same one */
    struct perf_parser ps;
    struct ember_chunk c = {0};
    struct ember_diag d;
    ember_diag_clear(&d);
    int err = ember_perf_parser_init(&ps, w->p, &o, &w->st, ember_input_name(pl->in), &d);
    while (!err) {
        pthread_mutex_lock(&pl->lock);
        int r = pl->done || pl->err ? 0 : ember_input_read_chunk(pl->in, &c, EMBER_CUT_SAMPLE, &d);
        if (r <= 0)
            pl->done = true;
        if (r > 0 && o.progress)
            o.progress(o.progress_ctx, pl->in);
        pthread_mutex_unlock(&pl->lock);
        if (r < 0)
            err = r;
        if (r <= 0)
            break;
        err = ember_perf_parse_chunk(&ps, &c);
        if (!err)
            err = ember_perf_parser_finish(&ps);
    }
    w->weighed = ps.weighed;
    w->other_line = ps.other_line;
    ember_perf_parser_release(&ps);
    ember_chunk_release(&c);
    if (err) {
        pthread_mutex_lock(&pl->lock);
        if (!pl->err) {
            pl->err = err;
            pl->d = d;
        }
        pthread_mutex_unlock(&pl->lock);
    }
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

int ember_perf_read_threaded(struct ember_profile *p, struct ember_input *in,
                             const struct ember_read_opts *o, struct ember_read_stats *st,
                             struct ember_diag *d, const char *filter)
{
    unsigned n = o->threads;
    struct pool pl = {.in = in, .o = o, .filter = filter};
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
    bool weighed = false;
    uint64_t other_line = 0;
    for (unsigned i = 0; i < started; i++) {
        pthread_join(w[i].tid, NULL);
        weighed |= w[i].weighed;
        if (!err && !pl.err)
            err = ember_profile_merge(p, w[i].p);
        st->samples += w[i].st.samples;
        st->skipped += w[i].st.skipped;
        st->filtered += w[i].st.filtered;
        /* the first other event of the input, whichever worker read it */
        if (w[i].st.other_event[0] && (!st->other_event[0] || w[i].other_line < other_line)) {
            memcpy(st->other_event, w[i].st.other_event, sizeof(st->other_event));
            other_line = w[i].other_line;
        }
        ember_profile_free(w[i].p);
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
