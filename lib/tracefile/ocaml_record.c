/*
 * ocaml_record.c - recording an OCaml runtime_events file while following
 * it (ember trace record): the words read intact are spooled, then laid
 * out as a runtime_events file of their own.
 *
 * Invariants: the file written is one OCaml's consumer reads: its rings
 * large enough for all that was read (no message straddles a ring's end),
 * the words lost marked by padding messages of id LOST_ID.
 */
#include "tracefile/ocaml_events.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* While following, the words read intact go to a spool, {u32 ring, u32
 * words, u64 position} + the words, in the order read; at the end they are
 * laid out as a runtime_events file whose rings hold them all (a power of
 * two of words at least the source's, so that no message straddles a ring's
 * end there either), each ring's head where its first word read was, the
 * gaps filled with LOST_ID padding. */
struct recorder {
    struct ember_trace_recorder r;
    struct ember_trace *t;
    int fd, scratch;
    uint64_t spooled; /* bytes in the spool */
    struct ember_cursor *cs;
    unsigned ncs;
};

int ember_ocaml_spool(struct recorder *rec, struct ember_cursor *c)
{
    struct cursor *k = c->state;
    if (k->k <= k->from)
        return 0;
    uint64_t pos = k->cpos + k->from;
    uint32_t hdr[4] = {c->ring, (uint32_t)(k->k - k->from), (uint32_t)pos, (uint32_t)(pos >> 32)};
    int err = ember_write_at(rec->scratch, hdr, sizeof(hdr), rec->spooled);
    if (!err)
        err = ember_write_at(rec->scratch, k->buf + k->from, (k->k - k->from) * 8,
                             rec->spooled + sizeof(hdr));
    if (err)
        return err;
    rec->spooled += sizeof(hdr) + (k->k - k->from) * 8;
    k->from = k->k;
    return 0;
}

static int record_poll(struct ember_trace_recorder *r, bool final)
{
    (void) final; /* the writer commits each message whole */
    struct recorder *rec = (struct recorder *)r;
    struct ember_trace *t = rec->t;
    ember_diag_clear(&t->err);
    unsigned had = rec->ncs;
    int err = ember_ocaml_refresh(t);
    if (!err)
        err = ember_source_grow_cursors(t, &rec->cs, &rec->ncs);
    for (unsigned i = had; i < rec->ncs && !err; i++)
        ((struct cursor *)rec->cs[i].state)->rec = rec;
    int n = 0, got = 0;
    for (unsigned i = 0; i < rec->ncs && !err; i++) {
        while ((got = ember_ocaml_cursor_next(t, &rec->cs[i])) > 0)
            n += n < INT32_MAX;
        err = got < 0 ? got : ember_ocaml_spool(rec, &rec->cs[i]);
    }
    return err ? err : n;
}

/* Where each ring's words go in the file being laid out. */
struct layout {
    uint64_t R, data, names, size;
    unsigned rings;
    uint64_t *first, *end; /* per ring: the first word recorded, the next to come */
};

/* Padding that stands for the words of [from, to) of ring i: lost. */
static int mark_lost(struct recorder *rec, const struct layout *lay, unsigned i, uint64_t from,
                     uint64_t to)
{
    while (from < to) {
        uint64_t slot = from & (lay->R - 1), len = to - from;
        len = len < MAX_MSG - 1 ? len : MAX_MSG - 1;
        len = len < lay->R - slot ? len : lay->R - slot;
        uint64_t hdr = len << 54 | (uint64_t)LOST_ID << 36;
        int err = ember_write_at(rec->fd, &hdr, 8, lay->data + (i * lay->R + slot) * 8);
        if (err)
            return err;
        from += len;
    }
    return 0;
}

/* Copies the spool's words into the rings, marking the gaps between. */
static int lay_words(struct recorder *rec, const struct layout *lay)
{
    uint64_t *next = calloc(lay->rings, sizeof(*next)), off = 0;
    uint64_t *words = malloc((size_t)CHUNK * 8);
    int err = next && words ? 0 : -ENOMEM;
    for (unsigned i = 0; i < lay->rings && !err; i++)
        next[i] = lay->first[i];
    while (!err && off < rec->spooled) {
        uint32_t hdr[4];
        if ((err = ember_read_at(rec->scratch, hdr, sizeof(hdr), off)) != 0)
            break;
        uint64_t pos = hdr[2] | (uint64_t)hdr[3] << 32, n = hdr[1];
        if (hdr[0] >= lay->rings || n > CHUNK ||
            (err = ember_read_at(rec->scratch, words, (size_t)n * 8, off + sizeof(hdr))) != 0) {
            err = err ? err : -EIO;
            break;
        }
        off += sizeof(hdr) + n * 8;
        err = mark_lost(rec, lay, hdr[0], next[hdr[0]], pos);
        for (uint64_t w = 0; w < n && !err;) {
            uint64_t slot = (pos + w) & (lay->R - 1), m = n - w;
            m = m < lay->R - slot ? m : lay->R - slot;
            err = ember_write_at(rec->fd, words + w, (size_t)m * 8,
                                 lay->data + (hdr[0] * lay->R + slot) * 8);
            w += m;
        }
        next[hdr[0]] = pos + n;
    }
    for (unsigned i = 0; i < lay->rings && !err; i++)
        err = mark_lost(rec, lay, i, next[i], lay->end[i]);
    free(next);
    free(words);
    return err;
}

/* The rings' extents: from the spool's first record of each to where its
 * cursor stopped. */
static int plan(struct recorder *rec, struct layout *lay)
{
    struct backend *b = be(rec->t);
    lay->rings = rec->ncs ? rec->ncs : 1;
    lay->first = calloc(lay->rings, sizeof(*lay->first));
    lay->end = calloc(lay->rings, sizeof(*lay->end));
    bool *seen = calloc(lay->rings, sizeof(*seen));
    int err = lay->first && lay->end && seen ? 0 : -ENOMEM;
    for (unsigned i = 0; i < rec->ncs && !err; i++) {
        struct cursor *k = rec->cs[i].state;
        lay->first[i] = lay->end[i] = k->cpos + k->k;
    }
    for (uint64_t off = 0; !err && off < rec->spooled;) {
        uint32_t hdr[4];
        if ((err = ember_read_at(rec->scratch, hdr, sizeof(hdr), off)) != 0 || hdr[0] >= lay->rings)
            break;
        if (!seen[hdr[0]])
            lay->first[hdr[0]] = hdr[2] | (uint64_t)hdr[3] << 32, seen[hdr[0]] = true;
        off += sizeof(hdr) + (uint64_t)hdr[1] * 8;
    }
    free(seen);
    uint64_t most = 0;
    for (unsigned i = 0; i < lay->rings && !err; i++)
        most = lay->end[i] - lay->first[i] > most ? lay->end[i] - lay->first[i] : most;
    lay->R = b->L.ring_size_elements;
    while (lay->R < most && lay->R < (1ull << 32))
        lay->R <<= 1;
    if (!err && most > lay->R)
        err = -EFBIG;
    lay->data = HEADER_BYTES + (uint64_t)lay->rings * 80;
    lay->names = lay->data + (uint64_t)lay->rings * lay->R * 8;
    lay->size = lay->names + (uint64_t)NAMES * NAME_BYTES;
    return err;
}

static int write_tables(struct recorder *rec, const struct layout *lay)
{
    uint64_t h[8] = {1, lay->rings, 80, lay->R * 8, lay->R, HEADER_BYTES, lay->data, lay->names};
    int err = ember_write_at(rec->fd, h, sizeof(h), 0);
    for (unsigned i = 0; i < lay->rings && !err; i++) {
        uint64_t ring[10] = {lay->first[i], lay->end[i]};
        err = ember_write_at(rec->fd, ring, sizeof(ring), HEADER_BYTES + (uint64_t)i * 80);
    }
    for (unsigned id = 0; id < NAMES && !err; id++) {
        const char *name = ember_ocaml_user_name(rec->t, id);
        if (name && name[0])
            err = ember_write_at(rec->fd, name, strlen(name) + 1,
                                 lay->names + (uint64_t)id * NAME_BYTES);
    }
    return err;
}

static int record_finish(struct ember_trace_recorder *r, int fd)
{
    struct recorder *rec = (struct recorder *)r;
    if (fd >= 0)
        rec->fd = fd;
    struct layout lay = {0};
    int err = plan(rec, &lay);
    if (!err && ftruncate(rec->fd, (off_t)lay.size) < 0)
        err = -errno;
    if (!err)
        err = lay_words(rec, &lay);
    if (!err)
        err = write_tables(rec, &lay);
    free(lay.first);
    free(lay.end);
    return err;
}

static void record_free(struct ember_trace_recorder *r)
{
    struct recorder *rec = (struct recorder *)r;
    ember_source_free_cursors(rec->t, rec->cs, rec->ncs);
    free(rec);
}

int ember_ocaml_recorder_new(struct ember_trace_recorder **out, struct ember_trace *t, int fd,
                             int scratch)
{
    if (scratch < 0)
        return -EINVAL;
    struct recorder *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    rec->r = (struct ember_trace_recorder){record_poll, record_finish, record_free};
    rec->t = t;
    rec->fd = fd;
    rec->scratch = scratch;
    *out = &rec->r;
    return 0;
}
