/*
 * folded_threads.c - folded stacks read by several threads: a file (or
 * memory) cut into byte ranges, each range's lines parsed by whichever
 * thread takes it into that thread's profile, the profiles merged as one
 * thread reading it all would have built its own, on as many threads
 * (model/profile_merge.c). Collapsed profiles, where nearly every line is
 * a new stack, spend their time building nodes: one thread building them
 * all behind the parsers left about 90% of the work serial.
 *
 * A range [r, e) owns the lines that start in it: its text is
 * [start(r), start(e)), where start(x) is 0 for 0, else the offset after
 * the first '\n' at x - 1 or later (the input's size if none), so the
 * ranges' texts tile the input and a line longer than a range is read
 * whole by the range where it starts.
 *
 * What changes the profile's values or ends the read at a line (a
 * differential line, a fraction, a count that does not fit, a cut last
 * line, an overflow) stops the threads, and the input is read again on
 * one thread (ember_folded_read_ranges returns 1): that reader's
 * messages and numbers are then exactly its own. Lines without a count
 * are counted per range, and the warning one thread gives at the input's
 * end is made from the first range that has one.
 *
 * Invariants: ranges are handed out in order, under the lock, which is
 * held for nothing else but progress; a thread's pieces (its marks) come
 * in increasing order; after a stop no range is handed out.
 */
#include "read/read_impl.h"
#include "model/profile_merge.h"
#include "base/chunk.h"
#include "base/diag.h"
#include "base/text.h"
#include "base/vec.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { WINDOW = 4 << 10 }; /* looked through for a range's start, at first */

/* What a range had beyond its stacks: its lines, and those without a
 * count (the first of them: its line in the range, and its text). */
struct range_info {
    uint64_t lines, skipped, first;
    char text[200];
};

struct pool {
    pthread_mutex_t lock;
    struct ember_input *in;
    const struct ember_read_opts *o;
    uint64_t size, range, nranges;
    uint64_t next, parsed; /* the next range; bytes parsed, for progress */
    bool stop;             /* a thread failed or met the one-thread path */
    struct range_info *ranges;
};

struct worker {
    struct pool *pool;
    struct ember_profile *p;
    struct ember_stack_text *t;
    struct ember_piece_marks marks;
    uint64_t samples;
    char *buf;
    size_t cap;
    int err; /* < 0: failed (in d); 1: the one-thread path */
    struct ember_diag d;
    pthread_t tid;
};

/* The next range for w (after it parsed `parsed` bytes): false at the end
 * or after a stop. */
static bool take(struct pool *pl, uint64_t parsed, uint64_t *at)
{
    pthread_mutex_lock(&pl->lock);
    bool more = !pl->stop && pl->next < pl->nranges;
    if (more)
        *at = pl->next++;
    pl->parsed += parsed;
    ember_input_mark_consumed(pl->in, pl->parsed);
    if (pl->o->progress && parsed)
        pl->o->progress(pl->o->progress_ctx, pl->in);
    pthread_mutex_unlock(&pl->lock);
    return more;
}

static void stop(struct pool *pl)
{
    pthread_mutex_lock(&pl->lock);
    pl->stop = true;
    pthread_mutex_unlock(&pl->lock);
}

/* Reads [at, at + n) into w->buf; *got < n only at the input's end. */
static int read_at(struct worker *w, uint64_t at, size_t n, size_t *got)
{
    if (EMBER_VEC_RESERVE(w->buf, w->cap, n + 1) < 0)
        return ember_diag_set(&w->d, -ENOMEM, ember_input_name(w->pool->in), 0, "out of memory");
    return ember_input_pread(w->pool->in, w->buf, n, at, got, &w->d);
}

/* start(x) (above), looking through windows that double up to 1 MiB. */
static int range_start(struct worker *w, uint64_t x, uint64_t *out)
{
    *out = x == 0 ? 0 : w->pool->size;
    size_t want = WINDOW, got;
    for (uint64_t at = x - 1; x > 0 && at < w->pool->size; at += got) {
        int err = read_at(w, at, want, &got);
        if (err)
            return err;
        const char *nl = memchr(w->buf, '\n', got);
        if (nl) {
            *out = at + (uint64_t)(nl - w->buf) + 1;
            return 0;
        }
        if (got < want)
            break; /* the input's end */
        want = want < (1 << 20) ? want * 2 : want;
    }
    return 0;
}

/* A line without a count: counted, and the first one kept. */
static void skip(struct range_info *ri, const struct ember_folded_parsed *p, uint64_t line)
{
    if (ri->skipped++ == 0) {
        ri->first = line;
        ember_quote(ri->text, sizeof(ri->text), p->s, p->n, 120);
    }
}

/* One line into w's profile: 1 where one thread must read the input. */
static int add_line(struct worker *w, const struct ember_folded_parsed *p)
{
    if (p->l.diff || p->l.count.digits)
        return 1; /* the profile's values change */
    uint32_t leaf;
    int err = ember_stack_text_add(w->t, p->l.stack, p->l.len, p->l.hash, &leaf);
    if (!err)
        err = ember_profile_add(w->p, leaf, 0, p->l.count.mant);
    if (err == -ERANGE)
        return 1; /* one thread says at which line */
    if (err)
        return ember_diag_set(&w->d, err, ember_input_name(w->pool->in), 0, "out of memory");
    w->samples++;
    return 0;
}

/* The lines of text [s, s + n), the input's last when `last`. */
static int parse_text(struct worker *w, const char *s, size_t n, bool last, struct range_info *ri)
{
    const char *end = s + n;
    for (; s < end; ri->lines++) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);
        struct ember_folded_parsed p;
        ember_folded_parse_line(s, len, !nl && last, &p);
        int err = 0;
        if (p.kind == EMBER_LINE_SKIPPED)
            skip(ri, &p, ri->lines + 1);
        else if (p.kind == EMBER_LINE_COUNTED)
            err = add_line(w, &p);
        else if (p.kind != EMBER_LINE_BLANK)
            err = 1; /* a cut line, a huge count: one thread's message */
        if (err)
            return err;
        s += len + 1;
    }
    return 0;
}

/* Range `at`'s lines into w's profile; *read: its text's bytes. */
static int parse_range(struct worker *w, uint64_t at, uint64_t *read)
{
    struct pool *pl = w->pool;
    uint64_t pos, stop;
    *read = 0;
    int err = range_start(w, at * pl->range, &pos);
    if (!err)
        err = range_start(w, (at + 1) * pl->range, &stop);
    if (err || pos >= stop)
        return err;
    if (stop - pos > EMBER_MAX_LINE)
        return 1; /* a line longer than one thread reads */
    size_t got;
    if ((err = read_at(w, pos, (size_t)(stop - pos), &got)) != 0)
        return err;
    if (got < stop - pos)
        return 1; /* the file was cut while read */
    *read = got;
    return parse_text(w, w->buf, got, stop == pl->size, &pl->ranges[at]);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct pool *pl = w->pool;
    uint64_t at, read = 0;
    ember_diag_clear(&w->d);
    while (!w->err && take(pl, read, &at)) {
        w->err = parse_range(w, at, &read);
        if (!w->err)
            w->err = ember_profile_mark_piece(&w->marks, at, w->p);
    }
    if (w->err)
        stop(pl);
    return NULL;
}

/* The warning one thread gives at the input's end, from the ranges. */
static void warn_skipped(const struct pool *pl, struct ember_read_stats *st)
{
    uint64_t n = 0, line = 0, before = 0;
    const char *text = NULL;
    for (uint64_t i = 0; i < pl->nranges; i++) {
        const struct range_info *ri = &pl->ranges[i];
        if (ri->skipped && !text) {
            line = before + ri->first;
            text = ri->text;
        }
        n += ri->skipped;
        before += ri->lines;
    }
    st->skipped += n;
    ember_folded_warn_skipped(pl->o, pl->in, n, line, text);
}

static int worker_init(struct worker *w, struct pool *pl)
{
    w->pool = pl;
    w->p = ember_profile_new();
    if (!w->p || ember_stack_text_new(w->p, ';', &w->t) < 0)
        return -ENOMEM;
    return 0;
}

static void worker_release(struct worker *w)
{
    ember_stack_text_free(w->t);
    ember_profile_free(w->p);
    free(w->marks.v);
    free(w->buf);
}

/* The workers' profiles into p (merged apart and swapped in, so that p is
 * as it was where one thread must read the input), or their first
 * failure. */
static int gather(struct ember_profile *p, struct worker *w, unsigned n, struct pool *pl,
                  struct ember_read_stats *st, struct ember_diag *d)
{
    for (unsigned i = 0; i < n; i++)
        if (w[i].err < 0) {
            if (d)
                *d = w[i].d;
            return w[i].err;
        }
    for (unsigned i = 0; i < n; i++)
        if (w[i].err)
            return 1;
    struct ember_profile **src = calloc(n, sizeof(*src)), *q = ember_profile_new();
    struct ember_piece_marks *marks = calloc(n, sizeof(*marks));
    int err = src && marks && q ? 0 : -ENOMEM;
    for (unsigned i = 0; i < n && !err; i++) {
        ember_stack_text_free(w[i].t); /* memory the merge needs more */
        w[i].t = NULL;
        src[i] = w[i].p;
        marks[i] = w[i].marks;
    }
    if (!err)
        err = ember_profile_merge_pieces(q, src, marks, n, n);
    if (err == -ERANGE)
        err = 1; /* an overflow: one thread says at which line */
    else if (err)
        err = ember_diag_set(d, err, ember_input_name(pl->in), 0, "out of memory");
    if (!err) {
        ember_profile_swap(p, q);
        for (unsigned i = 0; i < n; i++)
            st->samples += w[i].samples;
        warn_skipped(pl, st);
    }
    ember_profile_free(q);
    free(src);
    free(marks);
    return err;
}

/* Whether p is as ember_profile_new made it: what the threads' profiles
 * are merged into must weigh lines as theirs did. */
static bool fresh(const struct ember_profile *p)
{
    return ember_profile_node_count(p) == 1 && ember_profile_values(p) == 1 &&
           !strcmp(ember_profile_value_type(p, 0), "samples") &&
           !strcmp(ember_profile_value_unit(p, 0), "count") && ember_profile_decimals(p) == 0 &&
           !ember_profile_is_differential(p) && !ember_profile_has_sequence(p);
}

int ember_folded_read_ranges(struct ember_profile *p, struct ember_input *in,
                             const struct ember_read_opts *o, struct ember_read_stats *st,
                             struct ember_diag *d, uint64_t range)
{
    if (!ember_input_seekable(in) || !fresh(p) || range == 0)
        return 1;
    unsigned n = o->threads ? o->threads : 1;
    struct pool pl = {.in = in, .o = o, .size = (uint64_t)ember_input_size(in), .range = range};
    pl.nranges = (pl.size + range - 1) / range;
    pl.ranges = calloc(pl.nranges + 1, sizeof(*pl.ranges));
    struct worker *w = calloc(n, sizeof(*w));
    if (!pl.ranges || !w) {
        free(pl.ranges);
        free(w);
        return ember_diag_set(d, -ENOMEM, ember_input_name(in), 0, "out of memory");
    }
    pthread_mutex_init(&pl.lock, NULL);
    unsigned started = 0;
    int err = 0;
    for (; started < n && !err; started++)
        if (worker_init(&w[started], &pl) < 0 ||
            pthread_create(&w[started].tid, NULL, worker_main, &w[started]) != 0) {
            worker_release(&w[started]);
            err = 1; /* one thread reads it, if it can */
            stop(&pl);
            break;
        }
    for (unsigned i = 0; i < started; i++)
        pthread_join(w[i].tid, NULL);
    if (!err)
        err = gather(p, w, started, &pl, st, d);
    for (unsigned i = 0; i < started; i++)
        worker_release(&w[i]);
    pthread_mutex_destroy(&pl.lock);
    free(pl.ranges);
    free(w);
    return err;
}
