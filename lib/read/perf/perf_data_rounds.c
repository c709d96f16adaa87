/*
 * perf_data_rounds.c - the time queue's rounds sorted on threads of their
 * own (-j 2 and more): ordering records cost the reading thread more than
 * anything else it did with an fp recording's samples (pushing each into
 * the queue, sorting, handing each over: about 30 ns a record), and a
 * round's sorting needs nothing but the round. So the reading thread only
 * frames the records (each one's header and time read, a 24-byte entry
 * written; or, where the threads that read the file framed its chunks
 * ahead, pd_round_frame_ahead and perf_data_ahead.c, the round points at
 * their entries, which the chunk keeps while its records are pinned),
 * rounds are sorted wherever a thread is free, and the reading thread
 * delivers them in order (perf_reader.c), merging each with what the
 * queue kept and handing runs of samples over as they are
 * (perf_data_order.c).
 *
 * Rounds wait in a ring of RING slots: the reading thread frames into the
 * next free one (pd_rounds_open) and submits it; a thread sorts the
 * oldest submitted round not yet taken; the reading thread delivers the
 * oldest round once sorted (sorting it itself when no thread has taken
 * it) and frees its slot, unless the queue keeps the round's rest.
 * Invariants: rounds are taken, sorted and delivered in the order they
 * were framed; sorting reads only the round's entries (not the records'
 * bytes, nor the file), which stay where they are till it is delivered
 * (its records pin their chunks, whose frames go with them); the reading
 * thread alone touches the stream and the queue; a record's sequence
 * number is its place in the file, as one thread pushing records numbers
 * them.
 */
#include "read/perf/perf_order.h"
#include "base/vec.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

/* A sleeping thread is woken once WAKE rounds wait to be sorted, or a
 * round of BIG records: waking one costs microseconds, an fp round's
 * sorting tens. A round of fewer than SMALL records is sorted by the
 * reading thread at once where none waits before it: a DWARF recording's
 * rounds are a few records of 8 KiB each, which would otherwise stay
 * pinned (and in memory) till a thread is woken. */
enum { SORTERS = 4, RING = 2 * SORTERS + 4, WAKE = 4, BIG = 4096, SMALL = 64 };

struct pd_rounds {
    struct pd_round ring[RING];
    bool sorted[RING];
    struct pd_sort_room room; /* the reading thread's */
    uint64_t head;            /* the oldest round whose slot is not free */
    uint64_t delivered;       /* rounds before it are delivered */
    uint64_t submitted;       /* rounds before it are framed */
    uint64_t taken;           /* rounds before it are taken to be sorted */
    struct sorter {
        struct pd_rounds *rs;
        struct pd_sort_room room;
        pthread_t thread;
    } sorter[SORTERS];
    size_t nthreads;
    pthread_mutex_t mu;
    pthread_cond_t work; /* a round submitted, or stop */
    pthread_cond_t done; /* a round sorted */
    bool stop;
};

/* ---- framing ------------------------------------------------------------ */

/* The round's copy of n bytes at p: their offset in its bytes. */
static int copy_bytes(struct pd_round *rd, const uint8_t *p, size_t n, size_t *at)
{
    if (EMBER_VEC_RESERVE(rd->bytes, rd->bcap, rd->used + n) < 0)
        return -ENOMEM;
    memcpy(rd->bytes + rd->used, p, n);
    *at = rd->used;
    rd->used += n;
    return 0;
}

/* Record i (the next) lies pinned in chunk at p, file offset offset: a
 * new stretch where the chunk changes (within one, offsets follow the
 * bytes). */
static int add_pinned(struct pd_round *rd, const uint8_t *p, uint64_t offset, uint64_t chunk)
{
    if (rd->nstretches && rd->stretch[rd->nstretches - 1].chunk == chunk)
        return 0;
    if (EMBER_VEC_RESERVE(rd->stretch, rd->stcap, rd->nstretches + 1) < 0)
        return -ENOMEM;
    rd->stretch[rd->nstretches++] = (struct pd_stretch){rd->n, p, offset, chunk};
    return 0;
}

/* The next record's frame, framed here. */
static int add_own(struct pd_round *rd, struct pd_frame fr)
{
    bool more = rd->nruns && !rd->run[rd->nruns - 1].ext; /* one more in the last run */
    if (EMBER_VEC_RESERVE(rd->frame, rd->fcap, rd->nown + 1) < 0 ||
        (!more && EMBER_VEC_RESERVE(rd->run, rd->rcap, rd->nruns + 1) < 0))
        return -ENOMEM;
    if (more)
        rd->run[rd->nruns - 1].n++;
    else
        rd->run[rd->nruns++] = (struct pd_frame_run){NULL, rd->nown, 1};
    rd->frame[rd->nown++] = fr;
    rd->n++;
    return 0;
}

/* The next k records' frames, framed ahead at fr. */
static int add_run(struct pd_round *rd, const struct pd_frame *fr, size_t k)
{
    if (EMBER_VEC_RESERVE(rd->run, rd->rcap, rd->nruns + 1) < 0)
        return -ENOMEM;
    rd->run[rd->nruns++] = (struct pd_frame_run){fr, 0, k};
    rd->n += k;
    return 0;
}

/* A kernel record into the round, pinned where it is (or copied). */
static int add_record(struct pd_round *rd, const struct pd_file *f, struct pd_stream *s,
                      const struct pd_record *r)
{
    uint64_t chunk;
    struct pd_frame fr = {r->data, pd_file_time_of(f, r), r->type, (uint16_t)r->size, r->misc};
    if (pd_stream_pin(s, r->data, r->size, &chunk)) {
        int err = add_pinned(rd, r->data, r->offset, chunk); /* from this record on */
        return err ? err : add_own(rd, fr);
    }
    if (EMBER_VEC_RESERVE(rd->copy, rd->ccap, rd->ncopies + 1) < 0)
        return -ENOMEM;
    struct pd_copy *c = &rd->copy[rd->ncopies++];
    c->offset = r->offset;
    fr.p = NULL;
    int err = add_own(rd, fr);
    return err ? err : copy_bytes(rd, r->data, r->size, &c->at);
}

/* Where a sample's time is, in words after its header, where the file
 * has one event (pd_file_time_of, without looking its event up); -1: a
 * sample's time takes pd_file_time_of. */
static int sample_time_word(const struct pd_file *f)
{
    uint64_t t = f->nattrs == 1 ? f->attrs[0].sample_type : 0;
    if (!(t & PERF_SAMPLE_TIME))
        return -1;
    return !!(t & PERF_SAMPLE_IDENTIFIER) + !!(t & PERF_SAMPLE_IP) + !!(t & PERF_SAMPLE_TID);
}

/* A record's time as pd_file_time_of gives it (word: sample_time_word). */
static inline uint64_t time_at(const struct pd_file *f, int word, const uint8_t *p, uint32_t type,
                               uint16_t size)
{
    if (type != PERF_RECORD_SAMPLE || word < 0) {
        struct pd_record r = {p, type, size, pd_u16(p + 4), 0, 0};
        return pd_file_time_of(f, &r);
    }
    return (size_t)word < (size_t)(size - 8) / 8 ? pd_u64(p + 8 + 8 * word) : 0;
}

/* A record's frame: where it is, its header, and its time (perf's own
 * records: 0). */
static struct pd_frame frame_of(const struct pd_file *f, int word, const uint8_t *h, uint32_t type,
                                uint16_t size)
{
    uint64_t t = type < PD_RECORD_HEADER_ATTR ? time_at(f, word, h, type, size) : 0;
    return (struct pd_frame){h, t, type, size, pd_u16(h + 4)};
}

/* Whether records after one of type are framed ahead: not after those of
 * perf's own records that change how later ones are read (an event's
 * attributes and ids, pd_file_user_record) or have bytes after them. */
static bool passable(uint32_t type)
{
    return type != PD_RECORD_HEADER_ATTR && type != PD_RECORD_HEADER_FEATURE &&
           type != PD_RECORD_AUXTRACE && type != PD_RECORD_HEADER_TRACING_DATA;
}

/* The record whose header is at h (c->next, in the data) followed; into
 * out where it lies wholly in the len bytes at p (its offset there: used):
 * false where the chain stops at it. */
static bool follow(const struct pd_file *f, int word, const uint8_t *h, struct pd_chain *c,
                   size_t len, size_t used, struct pd_frames *out)
{
    uint32_t type = pd_u32(h);
    uint16_t size = pd_u16(h + 6);
    if (size < 8 || !passable(type) || size > f->data_offset + f->data_size - c->next)
        return !(c->stop = true);
    if (out && size <= len - used) {
        bool own = type >= PD_RECORD_HEADER_ATTR;
        if (EMBER_VEC_RESERVE(out->at, out->cap, out->n + 1) < 0 ||
            (own && EMBER_VEC_RESERVE(out->own, out->ocap, out->nown + 1) < 0))
            return !(c->stop = true); /* the reading thread frames the rest */
        if (own)
            out->own[out->nown++] = out->n;
        out->at[out->n++] = frame_of(f, word, h, type, size);
    }
    c->next += size;
    return true;
}

void pd_round_frame_ahead(const void *ctx, const uint8_t *p, size_t len, uint64_t at,
                          struct pd_chain *c, struct pd_frames *out)
{
    const struct pd_file *f = ctx;
    if (out)
        out->n = out->nown = 0;
    if (c->stop)
        return; /* f may be the reading thread's again */
    uint64_t end = f->data_offset + f->data_size;
    int word = sample_time_word(f);
    if (c->ntail) { /* the chunks before cut a header */
        size_t need = 8 - c->ntail, take = len < need ? len : need;
        memcpy(c->tail + c->ntail, p, take);
        c->ntail = (uint8_t)(c->ntail + take);
        if (c->ntail < 8)
            return;
        c->ntail = 0;
        if (!follow(f, word, c->tail, c, 0, 0, NULL))
            return;
    }
    while (c->next < end && c->next - at < len) {
        size_t used = (size_t)(c->next - at);
        if (len - used < 8) {
            memcpy(c->tail, p + used, len - used);
            c->ntail = (uint8_t)(len - used);
            return;
        }
        if (!follow(f, word, p + used, c, len, used, out))
            return;
    }
    c->stop = c->next >= end;
}

/* The k kernel records framed ahead from p on (up to one of perf's own):
 * the round points at their frames, as it does at their bytes. */
static int take_framed(struct pd_round *rd, struct pd_stream *s, const uint8_t *p, uint64_t chunk,
                       const struct pd_frame *fr, size_t k)
{
    if (!k)
        return 0;
    if (add_pinned(rd, p, s->offset, chunk) < 0 || add_run(rd, fr, k) < 0)
        return -ENOMEM;
    pd_stream_take_framed(s, (size_t)(fr[k - 1].p + fr[k - 1].size - p), k);
    return 0;
}

/* The kernel records wholly in the stream's chunk, framed where they are
 * (the reading thread's only work with most records: their headers read,
 * their places written; or their frames copied, framed ahead), up to one
 * the general path must read: perf's own, one across the chunk's end or
 * the data's, or a broken size. */
static int frame_at_hand(struct pd_round *rd, const struct pd_file *f, struct pd_stream *s)
{
    size_t n, used = 0, first = rd->n;
    int word = sample_time_word(f);
    uint64_t chunk;
    const uint8_t *p = pd_stream_at_hand(s, &n, &chunk);
    uint64_t left = f->data_offset + f->data_size - s->offset;
    if (!p || n < 8)
        return 0;
    size_t nframed;
    const struct pd_frame *ahead = pd_stream_framed(s, p, &nframed);
    if (ahead)
        return take_framed(rd, s, p, chunk, ahead, nframed);
    n = n < left ? n : (size_t)left;
    if (add_pinned(rd, p, s->offset, chunk) < 0)
        return -ENOMEM;
    while (n - used >= 8) {
        const uint8_t *h = p + used;
        uint32_t type = pd_u32(h);
        uint16_t size = pd_u16(h + 6);
        if (type >= PD_RECORD_HEADER_ATTR || size < 8 || size > n - used)
            break;
        if (add_own(rd, frame_of(f, word, h, type, size)) < 0)
            return -ENOMEM;
        used += size;
    }
    if (rd->n == first && rd->stretch[rd->nstretches - 1].first == first)
        rd->nstretches--; /* a stretch of none: the next record may start one */
    pd_stream_take(s, used, rd->n - first);
    return 0;
}

/* Why the round ends at r, one of perf's own records (FINISHED_ROUND's
 * kept for the reader's callback). */
static int end_at(struct pd_round *rd, const struct pd_record *r)
{
    rd->last = *r;
    if (r->type != PD_RECORD_FINISHED_ROUND) {
        rd->end = PD_ROUND_USER;
        return 0;
    }
    rd->end = PD_ROUND_FLUSH;
    rd->last.chunk1 = 0;
    return copy_bytes(rd, r->data, r->size, &rd->last_at);
}

int pd_round_frame(struct pd_round *rd, struct pd_file *f, struct pd_stream *s, uint64_t *seq,
                   struct ember_diag *d)
{
    rd->n = rd->nown = rd->nruns = 0;
    rd->ntimed = rd->nimm = rd->used = rd->nstretches = rd->ncopies = 0;
    rd->max_time = 0;
    rd->err = 0;
    rd->seq = *seq;
    struct pd_record r;
    int got = 0;
    while (got == 0) {
        if (!f->pipe && frame_at_hand(rd, f, s) < 0)
            return -ENOMEM;
        got = pd_file_next_record(f, s, &r, d);
        if (got == 0 && r.type >= PD_RECORD_HEADER_ATTR) {
            *seq += rd->n;
            return end_at(rd, &r);
        }
        if (got == 0 && add_record(rd, f, s, &r) < 0)
            return -ENOMEM;
    }
    *seq += rd->n;
    rd->end = got == 1 ? PD_ROUND_EOF : PD_ROUND_ERROR;
    if (got < 0) {
        rd->err = got;
        rd->diag = *d;
    }
    return 0;
}

/* ---- sorting -------------------------------------------------------------- */

/* The sorted records as the sink's held takes them, and those it cannot:
 * the reading thread hands runs of samples over as they are. */
static int held_records(struct pd_round *rd)
{
    rd->nspecial = 0;
    if (EMBER_VEC_RESERVE(rd->held, rd->hcap, rd->ntimed) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < rd->ntimed; i++) {
        const struct pd_queued *e = &rd->ev[i];
        bool copied = e->chunk == PD_COPIED;
        rd->held[i] =
            (struct pd_held_record){copied ? rd->bytes + e->u.at : e->u.data, e->offset, e->chunk};
        if (!copied && e->type == PERF_RECORD_SAMPLE)
            continue;
        if (EMBER_VEC_RESERVE(rd->special, rd->spcap, rd->nspecial + 1) < 0)
            return -ENOMEM;
        rd->special[rd->nspecial++] = i;
    }
    return 0;
}

/* Record i as framed (fr): where it is, its place, its header and time
 * (its bytes not read again). */
static struct pd_queued framed(const struct pd_round *rd, const struct pd_frame *fr, size_t i,
                               size_t *st, size_t *cp)
{
    struct pd_queued e = {fr->time, rd->seq + i, 0, PD_COPIED, {0}, fr->type, fr->size, fr->misc};
    if (fr->p) {
        while (*st + 1 < rd->nstretches && rd->stretch[*st + 1].first <= i)
            ++*st;
        const struct pd_stretch *sr = &rd->stretch[*st];
        e.u.data = fr->p;
        e.chunk = sr->chunk;
        e.offset = sr->offset + (uint64_t)(fr->p - sr->p);
    } else {
        const struct pd_copy *c = &rd->copy[(*cp)++];
        e.u.at = c->at;
        e.offset = c->offset;
    }
    return e;
}

/* Each record's time; those without one to imm, in file order, the timed
 * ones sorted. */
static int sort_round(struct pd_round *rd, struct pd_sort_room *room)
{
    size_t w = 0, st = 0, cp = 0, i = 0;
    if (EMBER_VEC_RESERVE(rd->ev, rd->cap, rd->n) < 0)
        return -ENOMEM;
    for (size_t r = 0; r < rd->nruns; r++) {
        const struct pd_frame_run *run = &rd->run[r];
        const struct pd_frame *at = run->ext ? run->ext : rd->frame + run->first;
        for (size_t k = 0; k < run->n; k++, i++) {
            struct pd_queued e = framed(rd, &at[k], i, &st, &cp);
            if (e.time == 0 || e.time == UINT64_MAX) { /* untimed (synthesized): at once */
                if (EMBER_VEC_RESERVE(rd->imm, rd->icap, rd->nimm + 1) < 0)
                    return -ENOMEM;
                rd->imm[rd->nimm++] = e;
                continue;
            }
            if (e.time > rd->max_time)
                rd->max_time = e.time;
            rd->ev[w++] = e;
        }
    }
    rd->ntimed = w;
    int err = pd_queue_sort(rd->ev, w, 0, room);
    return err ? err : held_records(rd);
}

/* Round k sorted by whoever took it (room its), rs->mu not held. */
static void sort_taken(struct pd_rounds *rs, uint64_t k, struct pd_sort_room *room)
{
    struct pd_round *rd = &rs->ring[k % RING];
    int err = sort_round(rd, room);
    if (err && !rd->err)
        rd->err = err;
    pthread_mutex_lock(&rs->mu);
    rs->sorted[k % RING] = true;
    pthread_cond_broadcast(&rs->done);
    pthread_mutex_unlock(&rs->mu);
}

static void *sorter_main(void *arg)
{
    struct sorter *me = arg;
    struct pd_rounds *rs = me->rs;
    pthread_mutex_lock(&rs->mu);
    for (;;) {
        while (!rs->stop && rs->taken == rs->submitted)
            pthread_cond_wait(&rs->work, &rs->mu);
        if (rs->stop)
            break;
        uint64_t k = rs->taken++;
        pthread_mutex_unlock(&rs->mu);
        sort_taken(rs, k, &me->room);
        pthread_mutex_lock(&rs->mu);
    }
    pthread_mutex_unlock(&rs->mu);
    return NULL;
}

/* ---- the ring --------------------------------------------------------------- */

int pd_rounds_new(struct pd_rounds **out, unsigned threads)
{
    struct pd_rounds *rs = calloc(1, sizeof(*rs));
    if (!rs)
        return -ENOMEM;
    pthread_mutex_init(&rs->mu, NULL);
    pthread_cond_init(&rs->work, NULL);
    pthread_cond_init(&rs->done, NULL);
    size_t want = threads < SORTERS ? threads : SORTERS;
    while (rs->nthreads < want) {
        struct sorter *sr = &rs->sorter[rs->nthreads];
        sr->rs = rs;
        if (pthread_create(&sr->thread, NULL, sorter_main, sr) != 0)
            break; /* fewer threads: the reading thread sorts what none takes */
        rs->nthreads++;
    }
    *out = rs;
    return 0;
}

void pd_rounds_free(struct pd_rounds *rs)
{
    if (!rs)
        return;
    pthread_mutex_lock(&rs->mu);
    rs->stop = true;
    pthread_cond_broadcast(&rs->work);
    pthread_mutex_unlock(&rs->mu);
    for (size_t i = 0; i < rs->nthreads; i++) {
        pthread_join(rs->sorter[i].thread, NULL);
        pd_sort_room_release(&rs->sorter[i].room);
    }
    for (size_t i = 0; i < RING; i++) {
        free(rs->ring[i].ev);
        free(rs->ring[i].imm);
        free(rs->ring[i].bytes);
        free(rs->ring[i].held);
        free(rs->ring[i].frame);
        free(rs->ring[i].run);
        free(rs->ring[i].stretch);
        free(rs->ring[i].copy);
        free(rs->ring[i].special);
    }
    pd_sort_room_release(&rs->room);
    pthread_cond_destroy(&rs->done);
    pthread_cond_destroy(&rs->work);
    pthread_mutex_destroy(&rs->mu);
    free(rs);
}

struct pd_round *pd_rounds_open(struct pd_rounds *rs)
{
    return rs->submitted - rs->head < RING ? &rs->ring[rs->submitted % RING] : NULL;
}

void pd_rounds_submit(struct pd_rounds *rs)
{
    uint64_t k = rs->submitted;
    size_t n = rs->ring[k % RING].n;
    pthread_mutex_lock(&rs->mu);
    bool mine = n < SMALL && rs->taken == k;
    rs->sorted[k % RING] = false;
    rs->submitted++;
    if (mine)
        rs->taken++;
    else if (rs->submitted - rs->taken >= WAKE || n >= BIG)
        pthread_cond_signal(&rs->work);
    pthread_mutex_unlock(&rs->mu);
    if (mine)
        sort_taken(rs, k, &rs->room);
}

struct pd_round *pd_rounds_oldest(struct pd_rounds *rs, bool wait)
{
    uint64_t k = rs->delivered;
    if (k == rs->submitted)
        return NULL;
    pthread_mutex_lock(&rs->mu);
    bool mine = wait && rs->taken == k; /* none has taken it: sorted here */
    if (mine)
        rs->taken++;
    while (wait && !mine && !rs->sorted[k % RING])
        pthread_cond_wait(&rs->done, &rs->mu);
    bool sorted = rs->sorted[k % RING];
    pthread_mutex_unlock(&rs->mu);
    if (mine)
        sort_taken(rs, k, &rs->room);
    return mine || sorted ? &rs->ring[k % RING] : NULL;
}

void pd_rounds_done(struct pd_rounds *rs, bool kept)
{
    rs->delivered++;
    rs->head = kept ? rs->delivered - 1 : rs->delivered;
}
