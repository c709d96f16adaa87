/*
 * ocaml_cursor.c - reading an OCaml runtime_events ring: the cursor, which
 * copies a chunk of the ring's words and keeps those the writer cannot
 * have overwritten meanwhile (ocaml_events.c tells how), and the sites its
 * messages are of, made as they are first met.
 *
 * Invariants: a message is decoded only once its header passed every
 * check (or was met before: the header cache); the common case, a known
 * header wholly in the chunk, is decoded inline without a call.
 */
#include "tracefile/ocaml_events.h"
#include "tracefile/ocaml_names.h"
#include "base/diag.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- sites -------------------------------------------------------------- */

static const char *intern(struct backend *b, const char *s)
{
    size_t n = strlen(s);
    char *p = ember_strmap_get(&b->interned, s, n);
    if (p)
        return p;
    p = ember_arena_strndup(&b->interned.arena, s, n);
    return p && ember_strmap_put(&b->interned, s, n, p) == 0 ? p : NULL;
}

/* The user-event name table, read once: names are written before the
 * events that use them (OCaml registers an event before writing it). */
const char *ember_ocaml_user_name(struct ember_trace *t, unsigned id)
{
    struct backend *b = be(t);
    if (!b->names) {
        b->names = calloc(NAMES, NAME_BYTES);
        if (!b->names)
            return NULL;
        ember_read_at(t->fd, b->names, (size_t)NAMES * NAME_BYTES, b->L.custom_events_offset);
        for (unsigned i = 0; i < NAMES; i++)
            b->names[i * NAME_BYTES + NAME_BYTES - 1] = '\0';
    }
    return id < NAMES ? b->names + (size_t)id * NAME_BYTES : "";
}

static int row_of(unsigned user, unsigned type, unsigned len)
{
    if (!user && type == 1 && len == 2)
        return ROW_LIFECYCLE_BARE; /* ring_stop has no payload word */
    return (int)(user * 8 + (type & 7));
}

/* The site of a message: made when first met. */
static struct ember_trace_site *make_site(struct ember_trace *t, unsigned user, unsigned type,
                                          unsigned id, unsigned len)
{
    struct backend *b = be(t);
    struct ember_trace_site *s = ember_arena_alloc(&b->arena, sizeof(*s));
    if (!s)
        return NULL;
    memset(s, 0, sizeof(*s));
    s->origin = user ? EMBER_ORIGIN_OCAML_USER : EMBER_ORIGIN_OCAML_RUNTIME;
    s->raw_type = (int)type;
    s->raw_id = (int)id;
    /* numbered as made, from 1: views index their per-site tables by id */
    s->id = t->nsites + 1;
    char fallback[64];
    const char *name = NULL;
    if (user) {
        const char *u = ember_ocaml_user_name(t, id);
        snprintf(fallback, sizeof(fallback), "user_event_%u", id);
        name = u && u[0] ? u : fallback;
        static const int kinds[] = {EMBER_EV_INSTANT, EMBER_EV_COUNTER, EMBER_EV_BEGIN,
                                    EMBER_EV_END, EMBER_EV_EVENT};
        s->kind = kinds[type];
    } else if (type == EMBER_OCAML_BEGIN || type == EMBER_OCAML_EXIT) {
        snprintf(fallback, sizeof(fallback), "phase_%u", id);
        name = ember_ocaml_phase_name(t->ocaml_names, id);
        s->kind = type == EMBER_OCAML_BEGIN ? EMBER_EV_BEGIN : EMBER_EV_END;
    } else if (type == EMBER_OCAML_COUNTER) {
        snprintf(fallback, sizeof(fallback), "counter_%u", id);
        name = ember_ocaml_counter_name(t->ocaml_names, id);
        s->kind = EMBER_EV_COUNTER;
    } else if (type == EMBER_OCAML_LIFECYCLE) {
        snprintf(fallback, sizeof(fallback), "lifecycle_%u", id);
        name = ember_ocaml_lifecycle_name(id);
        s->kind = EMBER_EV_INSTANT;
    } else {
        name = "alloc";
        s->kind = EMBER_EV_EVENT;
    }
    if (!(s->name = intern(b, name ? name : fallback)))
        return NULL;
    static const char *const field[] = {"value", "data", "buckets"};
    int ft = EMBER_FT_I64, fi = 0;
    if ((user && type == EMBER_OCAML_USER_CUSTOM) || (!user && type == EMBER_OCAML_ALLOC))
        ft = EMBER_FT_BYTES, fi = user ? 1 : 2;
    else if (!user && type == EMBER_OCAML_LIFECYCLE)
        fi = 1;
    bool has_field = user ? type == EMBER_OCAML_USER_INT || type == EMBER_OCAML_USER_CUSTOM
                          : type == EMBER_OCAML_COUNTER || type == EMBER_OCAML_ALLOC ||
                                (type == EMBER_OCAML_LIFECYCLE && len > 2);
    if (has_field) {
        s->nfields = 1;
        s->field_names[0] = field[fi];
        s->field_types[0] = ft;
    }
    return ember_source_add_site(t, s) == 0 ? s : NULL;
}

static const struct ember_trace_site *site_of(struct ember_trace *t, unsigned user, unsigned type,
                                              unsigned id, unsigned len)
{
    struct backend *b = be(t);
    int row = row_of(user, type, len);
    if (!b->rows[row] && !(b->rows[row] = calloc(8192, sizeof(*b->rows[row]))))
        return NULL;
    struct ember_trace_site **slot = &b->rows[row][id];
    if (!*slot)
        *slot = make_site(t, user, type, id, len);
    return *slot;
}

/* ---- the cursor ---------------------------------------------------------- */

int ember_ocaml_cursor_init(struct ember_trace *t, struct ember_cursor *c)
{
    struct backend *b = be(t);
    struct cursor *k = calloc(1, sizeof(*k));
    size_t words = b->L.ring_size_elements < CHUNK ? (size_t)b->L.ring_size_elements : CHUNK;
    if (!k || !(k->buf = malloc(words * 8))) {
        free(k);
        return -ENOMEM;
    }
    c->state = k;
    c->e.ring = c->e.tid = c->ring; /* a cursor reads one ring */
    return 0;
}

void ember_ocaml_cursor_free(struct ember_trace *t, struct ember_cursor *c)
{
    (void)t;
    struct cursor *k = c->state;
    if (k)
        free(k->buf);
    free(k);
    c->state = NULL;
}

static int bad_message(struct ember_trace *t, unsigned ring, uint64_t pos, uint64_t hdr,
                       const char *what)
{
    return ember_source_corrupt(t, "ring %u, word %llu (header 0x%016llx): %s", ring,
                                (unsigned long long)pos, (unsigned long long)hdr, what);
}

/* Lost words: counted in the ring and told before the next event. */
static void lose(struct ember_trace *t, struct ember_cursor *c, uint64_t words)
{
    t->rings[c->ring].lost_words += words;
    c->lost_words += words;
}

/* Copies the ring's words from pos to its end (as last read), a chunk at
 * most, keeping those the writer cannot have overwritten meanwhile: 1, 0
 * when there is nothing to read, < 0 on error. */
static int fetch(struct ember_trace *t, struct ember_cursor *c, uint64_t pos)
{
    struct backend *b = be(t);
    struct cursor *k = c->state;
    uint64_t end = b->rings[c->ring].tail, head;
    size_t cap = b->L.ring_size_elements < CHUNK ? (size_t)b->L.ring_size_elements : CHUNK;
    int err = k->rec ? ember_ocaml_spool(k->rec, c) : 0; /* before the chunk is replaced */
    if (err)
        return err;
    for (;;) {
        k->n = k->k = k->from = 0;
        k->cpos = pos;
        if (ember_ocaml_load_ring(t, c->ring, &head, NULL) < 0)
            return ember_source_corrupt(t, "cannot read the header of ring %u", c->ring);
        if (head > pos) {
            lose(t, c, head - pos);
            k->cpos = pos = head;
        }
        if (pos >= end)
            return 0;
        /* a chunk stops at the ring's end: a message in it lies in the ring */
        uint64_t slot = pos & b->mask, ring = b->L.data_offset + c->ring * b->L.ring_size_bytes;
        size_t n = end - pos < cap ? (size_t)(end - pos) : cap;
        n = n < b->L.ring_size_elements - slot ? n : (size_t)(b->L.ring_size_elements - slot);
        if (ember_read_at(t->fd, k->buf, n * 8, ring + slot * 8) < 0)
            return ember_diag_set(&t->err, -EIO, t->name, 0, "cannot read ring %u", c->ring);
        /* as OCaml's consumer: the copy is done before head is read again */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (ember_ocaml_load_ring(t, c->ring, &head, NULL) < 0)
            return ember_source_corrupt(t, "cannot read the header of ring %u", c->ring);
        if (head >= pos + n) { /* all of it overwritten meanwhile: again */
            lose(t, c, head - pos);
            pos = head;
            continue;
        }
        k->n = n;
        if (head > pos) {
            lose(t, c, head - pos);
            k->k = k->from = (size_t)(head - pos);
        }
        return 1;
    }
}

/* The message's length checked against what its type carries. */
static const char *length_error(unsigned user, unsigned type, unsigned len)
{
    if (user) {
        if (type > EMBER_OCAML_USER_CUSTOM)
            return "an unknown user message type";
        if (type == EMBER_OCAML_USER_INT)
            return len == 3 ? NULL : "an int user event is 3 words long";
        if (type == EMBER_OCAML_USER_CUSTOM)
            return len >= 3 ? NULL : "a custom user event has a payload";
        return len == 2 ? NULL : "a unit or span user event is 2 words long";
    }
    switch (type) {
    case EMBER_OCAML_LIFECYCLE:
        return len == 2 || len == 3 ? NULL : "a lifecycle event is 2 or 3 words long";
    case EMBER_OCAML_BEGIN:
    case EMBER_OCAML_EXIT:
        return len == 2 ? NULL : "a phase begin or end is 2 words long";
    case EMBER_OCAML_COUNTER:
        return len == 3 ? NULL : "a counter is 3 words long";
    case EMBER_OCAML_ALLOC:
        return len == 2 + ALLOC_BUCKETS ? NULL : "an allocation event is 22 words long";
    default:
        return "an unknown runtime message type";
    }
}

static struct hslot *hslot_of(struct backend *b, uint64_t hdr)
{
    return &b->hcache[((uint32_t)(hdr >> 36) * 0x9e3779b1u) >> 24];
}

/* The header's site and payload kind, remembered (its checks passed). */
static int hslot_fill(struct ember_trace *t, uint64_t hdr, struct hslot *h)
{
    unsigned user = MSG_USER(hdr), type = MSG_TYPE(hdr), len = MSG_LEN(hdr);
    const struct ember_trace_site *s = site_of(t, user, type, MSG_ID(hdr), len);
    if (!s)
        return -ENOMEM;
    h->site = s;
    h->payload = s->nfields == 0                     ? PAYLOAD_NONE
                 : s->field_types[0] == EMBER_FT_I64 ? PAYLOAD_I64
                 : user                              ? PAYLOAD_CUSTOM
                                                     : PAYLOAD_ALLOC;
    h->key = (uint32_t)(hdr >> 36) | HKEY_VALID;
    return 0;
}

/* Fills c->e with the message m (its header's checks passed, h its
 * slot) but its payload. */
static inline void decode_head(struct ember_trace *t, struct ember_cursor *c, struct cursor *k,
                               const struct hslot *h, const uint64_t *m)
{
    struct ember_trace_event *e = &c->e;
    e->site = h->site;
    e->ticks = m[1];
    e->ns = (int64_t)(m[1] - t->base_ticks);
    e->seq = k->seq++;
    c->key = m[1];
}

/* Decodes the message m (len words, its header's checks passed, h its
 * slot) into c->e: -EINVAL when a custom payload's padding count is
 * wrong. */
static int decode(struct ember_trace *t, struct ember_cursor *c, const struct hslot *h,
                  const uint64_t *m, unsigned len)
{
    decode_head(t, c, c->state, h, m);
    if (h->payload == PAYLOAD_NONE)
        return 0;
    if (h->payload == PAYLOAD_I64) {
        c->e.v[0] = (struct ember_trace_value){.i = (int64_t)m[2]};
        return 0;
    }
    const char *bytes = (const char *)(m + 2);
    size_t n = (size_t)(len - 2) * 8;
    if (h->payload == PAYLOAD_CUSTOM) { /* the last byte counts the padding bytes before it */
        unsigned pad = (unsigned char)bytes[n - 1];
        if (pad > n - 1)
            return -EINVAL;
        n -= 1 + pad;
    }
    c->e.v[0] = (struct ember_trace_value){.s = bytes, .len = n};
    return 0;
}

/* The next message, whatever it is: a new chunk, padding, a header not
 * met yet (checked), a custom payload, a message across the chunk's end,
 * an error. */
static __attribute__((noinline)) int cursor_next_slow(struct ember_trace *t, struct ember_cursor *c)
{
    struct backend *b = be(t);
    struct cursor *k = c->state;
    for (;;) {
        if (k->k >= k->n) {
            int got = fetch(t, c, k->cpos + k->n);
            if (got <= 0)
                return got;
            continue;
        }
        uint64_t pos = k->cpos + k->k, hdr = k->buf[k->k];
        unsigned len = MSG_LEN(hdr), user = MSG_USER(hdr), type = MSG_TYPE(hdr);
        if (len == 0)
            return bad_message(t, c->ring, pos, hdr, "length 0");
        if ((pos & b->mask) + len > b->L.ring_size_elements)
            return bad_message(t, c->ring, pos, hdr, "runs past the end of the ring");
        if (k->k + len > k->n) {
            if (k->cpos + k->n >= b->rings[c->ring].tail)
                return bad_message(t, c->ring, pos, hdr, "runs past the ring's tail");
            int got = fetch(t, c, pos); /* the chunk ends inside it */
            if (got <= 0)
                return got;
            continue;
        }
        const uint64_t *m = k->buf + k->k;
        k->k += len;
        if (!user && type == 0) { /* padding to the ring's end, or words lost */
            if (MSG_ID(hdr) == LOST_ID)
                lose(t, c, len);
            continue;
        }
        const char *why = length_error(user, type, len);
        if (why)
            return bad_message(t, c->ring, pos, hdr, why);
        struct hslot *h = hslot_of(b, hdr);
        int err = h->key == ((uint32_t)(hdr >> 36) | HKEY_VALID) ? 0 : hslot_fill(t, hdr, h);
        if (!err)
            err = decode(t, c, h, m, len);
        if (err)
            return err == -EINVAL
                       ? bad_message(t, c->ring, pos, hdr, "its padding count exceeds its payload")
                       : err;
        t->rings[c->ring].events++;
        return 1;
    }
}

/* The common case inline: a message whose header was met (and checked)
 * before, wholly in the chunk (which lies in the ring), with a payload of
 * none or one word. */
int ember_ocaml_cursor_next(struct ember_trace *t, struct ember_cursor *c)
{
    struct cursor *k = c->state;
    if (k->k < k->n) {
        uint64_t hdr = k->buf[k->k];
        const struct hslot *h = hslot_of(be(t), hdr);
        size_t len = MSG_LEN(hdr);
        if (h->key == ((uint32_t)(hdr >> 36) | HKEY_VALID) && k->k + len <= k->n &&
            h->payload <= PAYLOAD_I64) {
            const uint64_t *m = k->buf + k->k;
            decode_head(t, c, k, h, m);
            if (h->payload == PAYLOAD_I64)
                c->e.v[0] = (struct ember_trace_value){.i = (int64_t)m[2]};
            k->k += len;
            t->rings[c->ring].events++;
            return 1;
        }
    }
    return cursor_next_slow(t, c);
}
