/*
 * perf_order.h - the perf.data reader's time order (library-internal):
 * perf_data_order.c queues a round's records and delivers them in perf's
 * order at each FINISHED_ROUND; perf_data_rounds.c frames rounds on the
 * reading thread and sorts them on threads of their own (-j 2 and more),
 * for the queue to merge and deliver in the same order.
 * Invariants: what a queue or a round holds is pinned in the stream's
 * chunks (or copied); every record is delivered once, in the order one
 * thread pushing them one by one gives.
 */
#ifndef EMBER_READ_PERF_ORDER_H
#define EMBER_READ_PERF_ORDER_H

#include "read/perf/perf_data.h"

/* ---- time order (perf_data_order.c) ------------------------------------- */

/* chunk of a record copied into its queue's or round's bytes */
#define PD_COPIED UINT64_MAX

/* A timed record waiting for its turn. */
struct pd_queued {
    uint64_t time, seq, offset;
    uint64_t chunk; /* the stream's chunk it is pinned in, or PD_COPIED */
    union {
        const uint8_t *data; /* in the chunk */
        size_t at;           /* in the queue's (or round's) bytes */
    } u;
    uint32_t type, size;
    uint16_t misc;
};

/* A natural merge sort's room, reused from sort to sort. */
struct pd_sort_room {
    struct pd_queued *tmp;
    size_t tcap;
    size_t *runs;
    size_t rcap;
};

/* ev[0, n) in time order, ties in seq order (ev[0, sorted) already are):
 * 0 or -ENOMEM. */
int pd_queue_sort(struct pd_queued *ev, size_t n, size_t sorted, struct pd_sort_room *room);
void pd_sort_room_release(struct pd_sort_room *room);

/* A sample's record handed over held (pd_reader_tool.sample_records):
 * its bytes (header first), its file offset, and the stream's pin on it. */
struct pd_held_record {
    const uint8_t *data;
    uint64_t offset;
    uint64_t hold;
};

/* Where a flush delivers: each record to fn, and runs of samples' pinned
 * records to held where it takes them (1; 0: each goes to fn; its pins
 * become the taker's). */
struct pd_sink {
    int (*fn)(void *ctx, const struct pd_record *r);
    int (*held)(void *ctx, const struct pd_held_record *recs, size_t n);
    void *ctx;
};

/* A round of the data (perf_data_rounds.c): its kernel records as framed,
 * in file order (copies' bytes in bytes), then, once sorted, those
 * without a time in imm (delivered at once, as perf does) and the timed
 * ones in ev[0, ntimed) in time order; and what ended it. */
enum pd_round_end {
    PD_ROUND_FLUSH, /* a FINISHED_ROUND, last */
    PD_ROUND_USER,  /* another of perf's own records, last (taken once all before it are) */
    PD_ROUND_EOF,   /* the data's end */
    PD_ROUND_ERROR, /* the framing's error, err and diag */
};
struct pd_stretch { /* records framed in one chunk, from frame[first] */
    size_t first;
    const uint8_t *p; /* one of them, at file offset offset */
    uint64_t offset, chunk;
};
struct pd_copy { /* a record framed as a copy (frame NULL) */
    size_t at;
    uint64_t offset;
};
struct pd_frame_run { /* n frames in a row: at ext, or the round's own from frame[first] */
    const struct pd_frame *ext;
    size_t first, n;
};
struct pd_round {
    /* as framed: each kernel record, numbered from seq, n in all, in runs:
     * framed ahead, where the chunk's frames are (pinned with its records),
     * or framed here (its time read while its bytes are in the reading
     * thread's caches), into frame[0, nown) */
    struct pd_frame *frame;
    size_t n, nown, fcap;
    struct pd_frame_run *run;
    size_t nruns, rcap;
    uint64_t seq;
    struct pd_stretch *stretch;
    size_t nstretches, stcap;
    struct pd_copy *copy;
    size_t ncopies, ccap;
    /* as sorted */
    struct pd_queued *ev, *imm;
    size_t ntimed, nimm, cap, icap;
    /* once sorted: each timed record as the sink's held takes it, and
     * which of them it cannot (not a sample, or a copy), in order */
    struct pd_held_record *held;
    size_t *special;
    size_t nspecial, hcap, spcap;
    uint8_t *bytes;
    size_t used, bcap;
    uint64_t max_time;
    enum pd_round_end end;
    struct pd_record last; /* FLUSH: its data in bytes at last_at; USER: the stream's */
    size_t last_at;
    int err; /* ERROR: the framing's; else the sorting's (-ENOMEM) */
    struct ember_diag diag;
};

/* The next round framed from s into rd, up to and with the record that
 * ends it (rd->end; an error of the data's is kept in it, to be met in
 * order): 0 or -ENOMEM. seq numbers its records. */
int pd_round_frame(struct pd_round *rd, struct pd_file *f, struct pd_stream *s, uint64_t *seq,
                   struct ember_diag *d);
/* The framer of a file's chunks read ahead (ctx: its struct pd_file):
 * every record's frame as pd_round_frame makes it. */
void pd_round_frame_ahead(const void *ctx, const uint8_t *p, size_t len, uint64_t at,
                          struct pd_chain *c, struct pd_frames *out);
/* Rounds sorted on up to threads threads of their own (4 at most; none:
 * the reading thread sorts them): 0 or -ENOMEM. */
struct pd_rounds;
int pd_rounds_new(struct pd_rounds **rs, unsigned threads);
void pd_rounds_free(struct pd_rounds *rs);
/* The next round to frame, or NULL while every slot waits (deliver the
 * oldest first); framed, submitted to be sorted. */
struct pd_round *pd_rounds_open(struct pd_rounds *rs);
void pd_rounds_submit(struct pd_rounds *rs);
/* The oldest round not delivered once sorted: NULL when there is none,
 * or (wait false) it is not sorted yet; with wait, sorted here when no
 * thread has taken it. Delivered: pd_rounds_done frees the slots before
 * it, and its own unless kept (the queue holds its rest: pd_queue.pending). */
struct pd_round *pd_rounds_oldest(struct pd_rounds *rs, bool wait);
void pd_rounds_done(struct pd_rounds *rs, bool kept);

/* perf's ordered events: records of a round are queued, and each
 * FINISHED_ROUND delivers those not later than the newest of the round
 * before, in time order (ties in file order). */
struct pd_queue {
    struct pd_stream *stream; /* where records are pinned, or NULL: copied */
    struct pd_queued *ev;
    size_t n, cap, sorted; /* the first sorted are in time order */
    uint8_t *bytes;
    size_t used, bcap;
    /* kept across rounds: the bytes' next buffer, the sort's, a run of held
     * records */
    uint8_t *spare;
    size_t scap;
    struct pd_sort_room room;
    /* or (and then nothing else) the rest of the last round flushed,
     * pending->ev[pending_i, ntimed) */
    const struct pd_round *pending;
    size_t pending_i;
    bool refused; /* the sink's held took none: fn takes each */
    uint64_t seq, max_time, next_flush;
};

/* What a flush delivers: what is due (a FINISHED_ROUND), everything (the
 * data's end), nothing (a round before one of perf's own records). */
enum pd_flush { PD_FLUSH_DUE, PD_FLUSH_ALL, PD_FLUSH_NONE };

void pd_queue_init(struct pd_queue *q, struct pd_stream *s);
void pd_queue_release(struct pd_queue *q);
int pd_queue_push(struct pd_queue *q, const struct pd_record *r, uint64_t time);
/* A round ended: its timed records (round's ev[0, ntimed), sorted; or
 * those pushed, round NULL) join the queue, and what is due is delivered
 * to sink. */
int pd_queue_flush(struct pd_queue *q, const struct pd_round *round, enum pd_flush how,
                   const struct pd_sink *sink);
/* One record to sink's fn, data its bytes (e's own, or where it was
 * copied); its pin, if any, let go after. */
int pd_queue_emit(struct pd_queue *q, const struct pd_queued *e, const uint8_t *data,
                  const struct pd_sink *sink);

#endif
