/*
 * perf_data_stream.c - the input of the perf.data reader as bytes at
 * offsets: read once, front to back, chunk by chunk (a file, standard
 * input, gzip), each record handed out whole and contiguous.
 * Invariants: a pointer handed out stays valid until the next call on the
 * stream; bytes that straddle two chunks are copied into join, which is
 * handed out first; offset is always the file offset of the next byte; a
 * read past the end is a truncation error naming what was being read.
 * A chunk with pinned records is set aside at the next refill, with its
 * records' frames (rounds point into both), and its buffer and frames
 * read into again once the last of them is unpinned; pins name a chunk
 * by its number, which grows with each chunk read.
 */
#include "read/perf/perf_data.h"
#include "read/read_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

void pd_stream_init(struct pd_stream *s, struct ember_input *in)
{
    memset(s, 0, sizeof(*s));
    s->in = in;
    s->name = ember_input_name(in);
}

static size_t avail(const struct pd_stream *s);

int pd_stream_read_ahead(struct pd_stream *s, unsigned readers, const struct pd_framer *framer,
                         void (*progress)(void *ctx), void *ctx)
{
    /* the input's next byte is the one after the stream's last chunk,
     * where the input holds none back (its count of bytes read says so;
     * none is after a chunk of EMBER_CUT_BYTES): the threads go on there */
    uint64_t at = s->offset + (s->jlen - s->jdrop) + avail(s);
    if (s->ahead || s->eof || !readers || !ember_input_seekable(s->in) ||
        ember_input_consumed(s->in) != at)
        return 0;
    /* the records from the stream's offset on, through the bytes it holds
     * (none gathered: a record starts there), to the threads' first */
    struct pd_chain chain = {.next = s->offset, .stop = !framer || s->jlen};
    if (!chain.stop)
        framer->frame(framer->ctx, (const uint8_t *)s->chunk.data + s->pos, avail(s), s->offset,
                      &chain, NULL);
    return pd_ahead_start(&s->ahead, s->in, at, readers, framer, &chain, progress, ctx);
}

void pd_stream_stop_ahead(struct pd_stream *s)
{
    pd_ahead_stop(s->ahead);
    pd_frames_free(&s->framed); /* the rest of this chunk is framed here */
    s->fcur = s->ocur = 0;
}

void pd_frames_free(struct pd_frames *fr)
{
    free(fr->at);
    free(fr->own);
    *fr = (struct pd_frames){0};
}

/* A chunk set aside while records point into it (and rounds into its
 * frames). */
struct pd_held {
    struct pd_buffer b;
    uint64_t id;
    size_t pins;
};

static void buffer_release(struct pd_buffer *b)
{
    ember_chunk_release(&b->c);
    pd_frames_free(&b->fr);
}

void pd_stream_drop_spare(struct pd_stream *s)
{
    for (size_t i = 0; i < s->nspare; i++)
        buffer_release(&s->spare[i]);
    s->nspare = 0; /* the array stays: room for every held chunk */
}

void pd_stream_release(struct pd_stream *s)
{
    pd_ahead_free(s->ahead);
    ember_chunk_release(&s->chunk);
    free(s->join);
    for (size_t i = 0; i < s->nheld; i++)
        buffer_release(&s->held[i].b);
    free(s->held);
    pd_stream_drop_spare(s);
    free(s->spare);
    pd_frames_free(&s->framed);
}

bool pd_stream_pin(struct pd_stream *s, const uint8_t *p, size_t n, uint64_t *chunk)
{
    const uint8_t *c = (const uint8_t *)s->chunk.data;
    if (!c || p < c || n > s->chunk.len || p > c + s->chunk.len - n)
        return false;
    s->chunk_pins++;
    *chunk = s->chunk_id;
    return true;
}

/* The held chunk numbered id: they are in the order of their numbers. */
static size_t held_index(const struct pd_stream *s, uint64_t id)
{
    size_t lo = 0, hi = s->nheld;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->held[mid].id <= id)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void pd_stream_repin(struct pd_stream *s, uint64_t chunk)
{
    if (chunk == s->chunk_id)
        s->chunk_pins++;
    else
        s->held[held_index(s, chunk)].pins++;
}

void pd_stream_unpin(struct pd_stream *s, uint64_t chunk, size_t n)
{
    if (chunk == s->chunk_id) {
        s->chunk_pins -= n;
        return;
    }
    size_t i = held_index(s, chunk);
    if ((s->held[i].pins -= n) > 0)
        return;
    s->spare[s->nspare++] = s->held[i].b; /* room was made when it was held */
    memmove(s->held + i, s->held + i + 1, (s->nheld - i - 1) * sizeof(*s->held));
    s->nheld--;
}

/* Sets the current chunk aside when records point into it, its place
 * taken by a spare buffer (or none: the read makes one). */
static int hold_chunk(struct pd_stream *s)
{
    if (s->chunk_pins && (EMBER_VEC_RESERVE(s->held, s->hcap, s->nheld + 1) < 0 ||
                          EMBER_VEC_RESERVE(s->spare, s->spcap, s->nspare + s->nheld + 1) < 0))
        return -ENOMEM;
    size_t pins = s->chunk_pins;
    s->chunk_pins = 0;
    if (!pins) {
        s->chunk_id++;
        return 0;
    }
    s->held[s->nheld++] = (struct pd_held){{s->chunk, s->framed}, s->chunk_id++, pins};
    struct pd_buffer b = s->nspare ? s->spare[--s->nspare] : (struct pd_buffer){0};
    s->chunk = b.c;
    s->framed = b.fr;
    return 0;
}

static size_t avail(const struct pd_stream *s)
{
    return s->chunk.len - s->pos;
}

/* Reads the next chunk when the current one is used up: 1, 0 at the end. */
static int refill(struct pd_stream *s, struct ember_diag *d)
{
    if (s->eof)
        return 0;
    if (hold_chunk(s) < 0)
        return -ENOMEM;
    s->framed.n = s->framed.nown = s->fcur = s->ocur = 0;
    int r = s->ahead ? pd_ahead_next(s->ahead, &s->chunk, &s->framed, d)
                     : ember_input_read_chunk_upto(s->in, &s->chunk, EMBER_CUT_BYTES, PD_CHUNK, d);
    s->pos = 0;
    if (r <= 0) {
        s->chunk.len = 0;
        s->eof = r == 0;
    }
    return r;
}

static int truncated(struct pd_stream *s, uint64_t at, size_t n, const char *inside,
                     struct ember_diag *d)
{
    return ember_format_truncated(
        d, s->name, 0, inside, "%zu bytes at offset %llu (the input ends at offset %llu)", n,
        (unsigned long long)at, (unsigned long long)(s->offset + s->jlen + avail(s)));
}

static void drop_joined(struct pd_stream *s);

int pd_stream_peek(struct pd_stream *s, size_t n, const uint8_t **p, const char *inside,
                   struct ember_diag *d)
{
    drop_joined(s);
    if (s->jlen == 0 && avail(s) >= n) {
        *p = (const uint8_t *)s->chunk.data + s->pos;
        return 0;
    }
    /* the bytes straddle chunks: gather them in join */
    if (EMBER_VEC_RESERVE(s->join, s->jcap, n) < 0)
        return -ENOMEM;
    while (s->jlen < n) {
        if (avail(s) == 0) {
            int r = refill(s, d);
            if (r < 0)
                return r;
            if (r == 0)
                return truncated(s, s->offset, n, inside, d);
        }
        size_t take = n - s->jlen < avail(s) ? n - s->jlen : avail(s);
        memcpy(s->join + s->jlen, s->chunk.data + s->pos, take);
        s->jlen += take;
        s->pos += take;
    }
    *p = s->join;
    return 0;
}

/* Drops what the last read handed out of join (its pointer was valid
 * until this call). */
static void drop_joined(struct pd_stream *s)
{
    if (!s->jdrop)
        return;
    memmove(s->join, s->join + s->jdrop, s->jlen - s->jdrop);
    s->jlen -= s->jdrop;
    s->jdrop = 0;
}

int pd_stream_read(struct pd_stream *s, size_t n, const uint8_t **p, const char *inside,
                   struct ember_diag *d)
{
    int err = pd_stream_peek(s, n, p, inside, d);
    if (err)
        return err;
    if (s->jlen)
        s->jdrop = n;
    else
        s->pos += n;
    s->offset += n;
    return 0;
}

const uint8_t *pd_stream_at_hand(struct pd_stream *s, size_t *n, uint64_t *chunk)
{
    drop_joined(s);
    if (s->jlen || !avail(s))
        return NULL;
    *n = avail(s);
    *chunk = s->chunk_id;
    return (const uint8_t *)s->chunk.data + s->pos;
}

void pd_stream_take(struct pd_stream *s, size_t n, size_t pins)
{
    s->pos += n;
    s->offset += n;
    s->chunk_pins += pins;
}

const struct pd_frame *pd_stream_framed(struct pd_stream *s, const uint8_t *p, size_t *n)
{
    const struct pd_frames *fr = &s->framed;
    while (s->fcur < fr->n && fr->at[s->fcur].p < p) /* p only moves on */
        s->fcur++;
    if (s->fcur == fr->n || fr->at[s->fcur].p != p)
        return NULL;
    while (s->ocur < fr->nown && fr->own[s->ocur] < s->fcur)
        s->ocur++;
    *n = (s->ocur < fr->nown ? fr->own[s->ocur] : fr->n) - s->fcur;
    return fr->at + s->fcur;
}

void pd_stream_take_framed(struct pd_stream *s, size_t n, size_t k)
{
    pd_stream_take(s, n, k);
    s->fcur += k;
}

int pd_stream_at_end(struct pd_stream *s, struct ember_diag *d)
{
    drop_joined(s);
    if (s->jlen || avail(s))
        return 0;
    int r = refill(s, d);
    return r < 0 ? r : r == 0;
}

int pd_stream_skip(struct pd_stream *s, uint64_t n, const char *inside, struct ember_diag *d)
{
    uint64_t at = s->offset;
    drop_joined(s);
    while (n > 0) {
        size_t take;
        if (s->jlen) {
            take = n < s->jlen ? (size_t)n : s->jlen;
            s->jdrop = take;
            drop_joined(s);
        } else {
            if (avail(s) == 0) {
                int r = refill(s, d);
                if (r < 0)
                    return r;
                if (r == 0)
                    return truncated(s, at, (size_t)(s->offset - at + n), inside, d);
            }
            take = n < avail(s) ? (size_t)n : avail(s);
            s->pos += take;
        }
        s->offset += take;
        n -= take;
    }
    return 0;
}
