/*
 * memtrace_events.c - the events of one memtrace packet (trace.ml's
 * iter_events_of_packet, get_alloc, get_promote, get_collect): each event
 * header's 25 bits of time completed from the packet's start, then its
 * body by event code, to the tool's callbacks.
 *
 * Invariants: the packet's bytes are consumed exactly, its allocations end
 * at the id its header says; the backtrace cache verifier is checked before
 * any event is decoded (the writer computes it from the cache as it stood
 * when the packet began); promote and collect name an allocation already
 * made.
 */
#include "read/memtrace/memtrace_impl.h"

#include <errno.h>
#include <stdlib.h>

/* Counts past this are no OCaml heap's (and their sums would overflow). */
#define MT_MAX_COUNT (UINT64_C(1) << 48)

int mt_domain_of(struct mt_decoder *dec, unsigned domain, struct mt_domain **out)
{
    if (!dec->domains[domain]) {
        struct mt_domain *dom = calloc(1, sizeof(*dom));
        if (!dom)
            return -ENOMEM;
        dom->last_time = dec->info.start_time_us;
        dec->domains[domain] = dom;
    }
    *out = dec->domains[domain];
    return 0;
}

/* An event header: its code and full time, checked against the packet's
 * bounds and the domain's last event. */
static int event_header(struct mt_decoder *dec, const struct mt_header *h, struct mt_domain *dom,
                        struct mt_cur *c, unsigned *code, uint64_t *time)
{
    uint64_t w;
    if (!mt_take(c, 4, &w))
        return mt_short(dec, c, "an event header (4 bytes)");
    uint64_t lo = w & MT_TIME_MASK;
    if (lo < (h->time_begin & MT_TIME_MASK))
        lo += UINT64_C(1) << MT_TIME_BITS;
    *time = (h->time_begin & ~MT_TIME_MASK) + lo;
    *code = (unsigned)(w >> MT_TIME_BITS);
    c->p -= 4; /* errors name the event's first byte */
    if (*time < h->time_begin || *time > h->time_end)
        return mt_corrupt(dec, c, "event time %llu us: expected one within the packet's %llu-%llu",
                          (unsigned long long)*time, (unsigned long long)h->time_begin,
                          (unsigned long long)h->time_end);
    if (*time < dom->last_time)
        return mt_corrupt(dec, c, "event time %llu us: expected none before the last, %llu",
                          (unsigned long long)*time, (unsigned long long)dom->last_time);
    c->p += 4;
    dom->last_time = *time;
    return 0;
}

static int alloc_event(struct mt_decoder *dec, struct mt_domain *dom, struct mt_cur *c,
                       unsigned code, struct mt_alloc *a)
{
    uint64_t src = 0, nenc;
    const uint8_t *at = c->p;
    bool ok;
    if (code == 2) {
        ok = mt_vint(c, &a->length) && mt_vint(c, &a->nsamples) && mt_take(c, 1, &src) &&
             mt_vint(c, &a->common_prefix) && mt_take(c, 2, &nenc);
    } else { /* short: one sample of 1-16 words in the minor heap */
        a->length = code - 100;
        a->nsamples = 1;
        ok = mt_vint(c, &a->common_prefix) && mt_take(c, 1, &nenc);
    }
    if (!ok)
        return mt_short(dec, c, "an allocation's fields");
    if (src > MT_EXTERNAL || a->length >= MT_MAX_COUNT || a->nsamples >= MT_MAX_COUNT) {
        c->p = at;
        return mt_corrupt(dec, c,
                          "allocation of %llu words, %llu samples, source %llu: expected fewer "
                          "than 2^48 and a source 0 (minor), 1 (major) or 2 (external)",
                          (unsigned long long)a->length, (unsigned long long)a->nsamples,
                          (unsigned long long)src);
    }
    a->source = (enum mt_source)src;
    int err = mt_backtrace(dec, dom, c, a->common_prefix, (unsigned)nenc);
    if (err)
        return err;
    a->backtrace = dom->bt;
    a->backtrace_len = dom->bt_len;
    a->shared = dom->bt_shared;
    return dec->tool->alloc ? dec->tool->alloc(dec->ctx, a) : 0;
}

/* Promote and collect: the allocation id as a distance back from the
 * latest. v3's collect may name one a later domain's count passed (trace.ml
 * HEAD get_collect): it takes the distance as signed. */
static int object_event(struct mt_decoder *dec, const struct mt_header *h, struct mt_cur *c,
                        unsigned code, uint64_t next_id, uint64_t *obj)
{
    uint64_t delta;
    const uint8_t *at = c->p;
    if (!mt_vint(c, &delta))
        return mt_short(dec, c, code == 3 ? "a promotion's id" : "a collection's id");
    int64_t id = (int64_t)next_id - 1 - (int64_t)delta;
    bool back = (int64_t)delta >= 0 || (h->version >= 3 && code == 4);
    if (!back || id < 0) {
        c->p = at;
        return mt_corrupt(dec, c, "%s of allocation %lld: expected one of 0-%lld made before it",
                          code == 3 ? "promotion" : "collection", (long long)id,
                          (long long)next_id - 1);
    }
    *obj = (uint64_t)id;
    return 0;
}

static int one_event(struct mt_decoder *dec, const struct mt_header *h, struct mt_domain *dom,
                     struct mt_cur *c, uint64_t *next_id)
{
    unsigned code;
    uint64_t time, obj;
    int err = event_header(dec, h, dom, c, &code, &time);
    if (err)
        return err;
    uint64_t dt = time - dec->info.start_time_us;
    if (code == 1)
        return mt_location_event(dec, dom, c);
    if (code == 2 || (code >= 101 && code <= 116)) {
        struct mt_alloc a = {.dt_us = dt, .obj_id = (*next_id)++, .domain = h->domain};
        dec->st->events++;
        dec->st->last_dt_us = dt;
        return alloc_event(dec, dom, c, code, &a);
    }
    if (code == 3 || code == 4) {
        if ((err = object_event(dec, h, c, code, *next_id, &obj)) < 0)
            return err;
        dec->st->events++;
        dec->st->last_dt_us = dt;
        if (code == 3)
            return dec->tool->promote ? dec->tool->promote(dec->ctx, dt, obj) : 0;
        return dec->tool->collect ? dec->tool->collect(dec->ctx, dt, obj) : 0;
    }
    c->p -= 4;
    return mt_corrupt(dec, c,
                      "event code %u: expected 1 (location), 2 (allocation), 3 (promotion), "
                      "4 (collection) or 101-116 (short allocation)",
                      code);
}

int mt_packet_events(struct mt_decoder *dec, const struct mt_header *h, struct mt_cur *c)
{
    struct mt_domain *dom;
    int err = mt_domain_of(dec, h->domain, &dom);
    if (err)
        return err;
    if (!mt_cache_verify(dom, h->vix, h->vpred, h->vval)) {
        c->p = c->base + (h->version >= 3 ? 40 : 38);
        return mt_corrupt(dec, c,
                          "backtrace cache verifier (bucket %llu, predecessor %llu, code 0x%llx) "
                          "does not match the cache decoded so far",
                          (unsigned long long)h->vix, (unsigned long long)h->vpred,
                          (unsigned long long)h->vval);
    }
    uint64_t next_id = h->version >= 3 ? h->id_begin : dec->alloc_id;
    while (c->p < c->end && !err)
        err = one_event(dec, h, dom, c, &next_id);
    if (err)
        return err;
    if (next_id != h->id_end)
        return mt_corrupt(dec, c,
                          "the packet's allocations end at id %llu, but its header says %llu",
                          (unsigned long long)next_id, (unsigned long long)h->id_end);
    dec->alloc_id = next_id;
    return 0;
}
