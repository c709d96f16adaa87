/*
 * perf_reader.c - the perf.data reader: the file read once, front to
 * back, and its records handed to a table of callbacks (perf_reader.h) in
 * the order perf script sees them.
 *
 * The header and the events come first (perf_data_file.c), then the data
 * section's records: perf's own (types from 64) are taken by the file as
 * read (FINISHED_ROUND ends a round of the time queue), kernel records
 * with a time are queued and delivered in time order (perf_data_order.c),
 * those without one at once; then the feature sections after the data.
 * With threads (-j 2 and more, not a pipe) the rounds are framed here and
 * sorted on threads (perf_data_rounds.c), then delivered in the same order.
 * Invariants: no kernel record is delivered before an event is described
 * (a file with one is corrupt); a sample is decoded before its sample
 * callback sees it, and a sample that cannot be is an error whatever the
 * client (one the client takes as a record, sample_record or
 * sample_records, is the client's to decode).
 */
#include "read/perf/perf_reader.h"
#include "base/diag.h"

#include <errno.h>
#include <stdlib.h>

struct pd_reader {
    struct ember_input *in;
    struct pd_stream s;
    struct pd_file f;
    struct pd_queue q;
    const struct pd_reader_tool *tool;
    void *ctx;
    struct pd_sink sink; /* deliver, and the tool's sample_records */
    struct ember_diag *d;
    uint64_t last_time; /* the latest timed record's */
    uint64_t records;
    unsigned threads; /* -j: above 1, the data read ahead and its rounds sorted on threads */
    struct pd_rounds *rounds;
};

int pd_reader_new(struct pd_reader **out, struct ember_input *in)
{
    struct pd_reader *rd = calloc(1, sizeof(*rd));
    if (!rd)
        return -ENOMEM;
    rd->in = in;
    pd_stream_init(&rd->s, in);
    pd_file_init(&rd->f, ember_input_name(in));
    pd_queue_init(&rd->q, &rd->s);
    *out = rd;
    return 0;
}

void pd_reader_free(struct pd_reader *rd)
{
    if (!rd)
        return;
    pd_stream_release(&rd->s);
    pd_file_release(&rd->f);
    pd_queue_release(&rd->q);
    pd_rounds_free(rd->rounds);
    free(rd);
}

void pd_reader_threads(struct pd_reader *rd, unsigned threads)
{
    rd->threads = threads;
}

const struct pd_file *pd_reader_file(const struct pd_reader *rd)
{
    return &rd->f;
}

bool pd_reader_hold(struct pd_reader *rd, const struct pd_record *r, uint64_t *hold)
{
    if (!r->chunk1)
        return false;
    pd_stream_repin(&rd->s, r->chunk1 - 1);
    *hold = r->chunk1 - 1;
    return true;
}

void pd_reader_let_go(struct pd_reader *rd, uint64_t hold, size_t n)
{
    pd_stream_unpin(&rd->s, hold, n);
}

uint64_t pd_reader_last_time(const struct pd_reader *rd)
{
    return rd->last_time;
}

/* A kernel record to its callback cb, with its sample_id. */
static int call(pd_record_cb cb, struct pd_reader *rd, const struct pd_record *r)
{
    if (!cb)
        return 0;
    struct pd_sample_id id = {.attr = pd_file_attr_of(&rd->f, r),
                              .time = pd_file_time_of(&rd->f, r)};
    id.has_tid = pd_file_tid_of(&rd->f, r, &id.pid, &id.tid);
    return cb(rd->ctx, r, &id);
}

/* Samples are the hot path: kept out of the queue's flush, where GCC's
 * growth limits would leave their decoding a call of its own (1.5% more
 * instructions reading an fp perf.data). */
__attribute__((noinline)) static int on_sample(struct pd_reader *rd, const struct pd_record *r)
{
    const struct pd_reader_tool *t = rd->tool;
    int taken = t->sample_record ? t->sample_record(rd->ctx, r) : 0;
    if (taken || !t->sample)
        return taken < 0 ? taken : 0;
    int ai = pd_file_attr_of(&rd->f, r);
    if (ai < 0)
        return t->sample(rd->ctx, r, -1, NULL);
    struct pd_sample s;
    int err = pd_file_parse_sample(&rd->f, &rd->f.attrs[ai], r, &s, rd->d);
    return err ? err : t->sample(rd->ctx, r, ai, &s);
}

/* A kernel record, in time order: to its callback. */
static int deliver(void *ctx, const struct pd_record *r)
{
    struct pd_reader *rd = ctx;
    const struct pd_reader_tool *t = rd->tool;
    switch (r->type) {
    case PERF_RECORD_SAMPLE:
        return on_sample(rd, r);
    case PERF_RECORD_MMAP:
    case PERF_RECORD_MMAP2:
        return call(t->mmap, rd, r);
    case PERF_RECORD_COMM:
        return call(t->comm, rd, r);
    case PERF_RECORD_FORK:
        return call(t->fork, rd, r);
    case PERF_RECORD_EXIT:
        return call(t->exit, rd, r);
    case PERF_RECORD_SWITCH:
    case PERF_RECORD_SWITCH_CPU_WIDE:
        return call(t->context_switch, rd, r);
    case PERF_RECORD_LOST:
        return call(t->lost, rd, r);
    case PERF_RECORD_THROTTLE:
    case PERF_RECORD_UNTHROTTLE:
        return call(t->throttle, rd, r);
    default:
        return call(t->other, rd, r);
    }
}

static int on_held(void *ctx, const struct pd_held_record *recs, size_t n)
{
    struct pd_reader *rd = ctx;
    return rd->tool->sample_records(rd->ctx, recs, n);
}

/* perf's own record: the file takes what it says of itself first. */
static int on_user_record(struct pd_reader *rd, const struct pd_record *r)
{
    const struct pd_reader_tool *t = rd->tool;
    bool round = r->type == PD_RECORD_FINISHED_ROUND;
    int err = !round && t->file_changes ? t->file_changes(rd->ctx) : 0;
    if (!err)
        err = round ? pd_queue_flush(&rd->q, NULL, PD_FLUSH_DUE, &rd->sink)
                    : pd_file_user_record(&rd->f, r, rd->d);
    if (err)
        return err;
    if (r->type == PD_RECORD_HEADER_ATTR)
        return t->attr ? t->attr(rd->ctx, r, rd->f.nattrs - 1) : 0;
    return t->user ? t->user(rd->ctx, r) : 0;
}

static int on_record(struct pd_reader *rd, const struct pd_record *r)
{
    if (++rd->records % PD_READER_PROGRESS_EVERY == 0 && rd->tool->progress && !rd->s.ahead)
        rd->tool->progress(rd->ctx);
    if (r->type >= PD_RECORD_HEADER_ATTR)
        return on_user_record(rd, r);
    if (rd->f.nattrs == 0)
        return pd_corrupt(rd->d, rd->f.name, r, "a record before any event is described");
    uint64_t time = pd_file_time_of(&rd->f, r);
    if (time == 0 || time == UINT64_MAX)
        return deliver(rd, r); /* untimed (synthesized) records: at once, as perf */
    if (time > rd->last_time)
        rd->last_time = time;
    return pd_queue_push(&rd->q, r, time);
}

/* ---- rounds sorted on threads (perf_data_rounds.c) ------------------------ */

/* A sorted round delivered as on_record and on_user_record deliver its
 * records one thread reading them: those without a time first (at once
 * there), then what its end delivers. */
static int deliver_round(struct pd_reader *rd, struct pd_round *round)
{
    int err = round->end == PD_ROUND_ERROR ? 0 : round->err;
    for (size_t i = 0; i < round->nimm && !err; i++) {
        const struct pd_queued *e = &round->imm[i];
        const uint8_t *data = e->chunk == PD_COPIED ? round->bytes + e->u.at : e->u.data;
        err = pd_queue_emit(&rd->q, e, data, &rd->sink);
    }
    if (round->max_time > rd->last_time)
        rd->last_time = round->max_time;
    if (err)
        return err;
    switch (round->end) {
    case PD_ROUND_FLUSH:
        err = pd_queue_flush(&rd->q, round, PD_FLUSH_DUE, &rd->sink);
        round->last.data = round->bytes + round->last_at;
        return err || !rd->tool->user ? err : rd->tool->user(rd->ctx, &round->last);
    case PD_ROUND_USER:
        return pd_queue_flush(&rd->q, round, PD_FLUSH_NONE, &rd->sink);
    case PD_ROUND_EOF:
        return pd_queue_flush(&rd->q, round, PD_FLUSH_ALL, &rd->sink);
    default:
        *rd->d = round->diag;
        return round->err;
    }
}

/* The oldest round delivered once sorted (wait: sorted here if no thread
 * has taken it): 1, 0 where there is none (or it is not sorted), or an
 * error. */
static int deliver_oldest(struct pd_reader *rd, bool wait)
{
    struct pd_round *round = pd_rounds_oldest(rd->rounds, wait);
    if (!round)
        return 0;
    int err = deliver_round(rd, round);
    pd_rounds_done(rd->rounds, rd->q.pending == round);
    return err ? err : 1;
}

/* The oldest rounds delivered: those sorted, or (wait) all of them. */
static int deliver_rounds(struct pd_reader *rd, bool wait)
{
    int got;
    while ((got = deliver_oldest(rd, wait)) > 0)
        ;
    return got;
}

/* The data framed round by round on this thread, the rounds sorted on
 * others, delivered in order; one of perf's own records (but
 * FINISHED_ROUND) is taken once every record before it is delivered, as
 * the events it may describe change how later ones are read. */
static int read_rounds(struct pd_reader *rd)
{
    int err = 0;
    for (;;) {
        struct pd_round *round = NULL;
        while (!err && !(round = pd_rounds_open(rd->rounds))) {
            int got = deliver_oldest(rd, true); /* every slot waits: the oldest's first */
            err = got < 0 ? got : 0;
        }
        uint64_t before = rd->q.seq;
        if (!err)
            err = pd_round_frame(round, &rd->f, &rd->s, &rd->q.seq, rd->d);
        if (err)
            return err;
        if (rd->tool->progress && !rd->s.ahead &&
            before / PD_READER_PROGRESS_EVERY != rd->q.seq / PD_READER_PROGRESS_EVERY)
            rd->tool->progress(rd->ctx);
        pd_rounds_submit(rd->rounds);
        err = deliver_rounds(rd, round->end != PD_ROUND_FLUSH);
        if (err || round->end == PD_ROUND_EOF)
            return err;
        if (round->end == PD_ROUND_USER)
            err = on_user_record(rd, &round->last);
    }
}

static int read_data(struct pd_reader *rd)
{
    if (!rd->f.pipe && rd->f.data_size == 0)
        return ember_diag_set(rd->d, -ENODATA, rd->f.name, 0,
                              "the perf.data header says its data section is empty (perf record "
                              "was stopped before it could finish the file?)");
    int err = rd->tool->header ? rd->tool->header(rd->ctx, &rd->f) : 0;
    if (err)
        return err;
    if (rd->threads > 1 && !rd->f.pipe && rd->f.nattrs) {
        err = pd_rounds_new(&rd->rounds, rd->threads - 1);
        err = err ? err : read_rounds(rd);
        pd_rounds_free(rd->rounds); /* its threads joined, as the ahead's */
        rd->rounds = NULL;
    } else {
        struct pd_record rec;
        while ((err = pd_file_next_record(&rd->f, &rd->s, &rec, rd->d)) == 0)
            if ((err = on_record(rd, &rec)) < 0)
                return err;
        if (err == 1)
            err = pd_queue_flush(&rd->q, NULL, PD_FLUSH_ALL, &rd->sink);
    }
    pd_stream_drop_spare(&rd->s);
    return err;
}

int pd_reader_run(struct pd_reader *rd, const struct pd_reader_tool *tool, void *ctx,
                  struct ember_diag *d)
{
    rd->tool = tool;
    rd->ctx = ctx;
    rd->d = d;
    rd->sink = (struct pd_sink){deliver, tool->sample_records ? on_held : NULL, rd};
    int err = pd_file_read_header(&rd->f, &rd->s, d);
    /* -j N is the caller's thread and N - 1 workers (perf_data_jobs.c);
     * copying the file is about a third of the work, so N - 1 readers
     * always keep up, and where there are just N cores one thread fewer
     * competes for them (-j 2 on 2 cores: 0.229 s wall with one reader,
     * 0.260 s with two, the same CPU). One thread reads as it goes. */
    if (!err && rd->threads > 1) {
        /* the records framed there too, where rounds are (read_data) */
        struct pd_framer framer = {pd_round_frame_ahead, &rd->f};
        bool rounds = !rd->f.pipe && rd->f.nattrs;
        err = pd_stream_read_ahead(&rd->s, rd->threads - 1, rounds ? &framer : NULL, tool->progress,
                                   ctx);
    }
    if (!err)
        err = read_data(rd);
    if (!err && tool->data_end)
        err = tool->data_end(ctx);
    if (!err)
        err = pd_file_read_features(&rd->f, &rd->s, d);
    pd_stream_stop_ahead(&rd->s); /* the input is the caller's again */
    return err;
}
