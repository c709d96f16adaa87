/*
 * memtrace_decode.c - the walk over a memtrace trace's packets and their
 * events (trace.ml's Reader.iter), from an ember_input read in chunks.
 *
 * Packets are read whole (their header says their size) into one buffer
 * that only ever holds the packet being decoded and what follows it in the
 * current chunk. What memtrace's reader skips is skipped here too, told to
 * the tool (tool->skipped): a packet of another process (written after a
 * fork), a v1/v2 packet out of order (earlier than the last event, or not
 * starting at the next allocation id), and the last packet when the input
 * ends inside it (a trace whose program was killed while writing). Anything
 * else that breaks the format is an error naming the packet, its byte
 * offset and what was expected, where memtrace would raise Bad_format.
 * Invariants: every packet has the first packet's version; event times are
 * within their packet's bounds and never go back (per domain); obj ids are
 * the running count of allocations (v3: from the packet's alloc_id_begin).
 */
#include "read/memtrace/memtrace_impl.h"
#include "read/read_impl.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

enum {
    MT_MAX_PACKET = 16 << 20, /* memtrace writes 32 KiB at most: far more is garbage */
    MT_PROGRESS_PACKETS = 16,
};

int mt_corrupt(struct mt_decoder *dec, const struct mt_cur *c, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return ember_diag_set(dec->d, -EINVAL, dec->name, 0, "memtrace packet %llu at byte %llu: %s",
                          (unsigned long long)c->packet,
                          (unsigned long long)(c->base_off + (uint64_t)(c->p - c->base)), what);
}

int mt_short(struct mt_decoder *dec, const struct mt_cur *c, const char *what)
{
    return mt_corrupt(dec, c, "expected %s, found the end of the packet's %llu bytes", what,
                      (unsigned long long)(c->end - c->base));
}

/* Makes n bytes readable at buf + pos: 1, 0 when the input ends first, or
 * an error. */
static int need(struct mt_decoder *dec, size_t n)
{
    while (dec->len - dec->pos < n) {
        if (dec->pos) {
            memmove(dec->buf, dec->buf + dec->pos, dec->len - dec->pos);
            dec->buf_off += dec->pos;
            dec->len -= dec->pos;
            dec->pos = 0;
        }
        int r = ember_input_read_chunk_upto(dec->in, &dec->chunk, EMBER_CUT_BYTES,
                                            n > (64 << 10) ? n : 64 << 10, dec->d);
        if (r <= 0)
            return r;
        if (EMBER_VEC_RESERVE(dec->buf, dec->cap, dec->len + dec->chunk.len) < 0)
            return -ENOMEM;
        memcpy(dec->buf + dec->len, dec->chunk.data, dec->chunk.len);
        dec->len += dec->chunk.len;
    }
    return 1;
}

static struct mt_cur cursor(const struct mt_decoder *dec, const struct mt_header *h, size_t at,
                            size_t n)
{
    const uint8_t *base = dec->buf + dec->pos;
    return (struct mt_cur){
        .p = base + at, .end = base + n, .base = base, .base_off = h->offset, .packet = h->number};
}

static int cut(struct mt_decoder *dec, const struct mt_header *h, uint64_t want, const char *what)
{
    char inside[96];
    snprintf(inside, sizeof(inside), "packet %llu at byte %llu", (unsigned long long)h->number,
             (unsigned long long)h->offset);
    int err = ember_format_truncated(
        dec->d, dec->name, 0, inside, "%llu bytes (%s), found %llu; %llu packets before it read",
        (unsigned long long)want, what, (unsigned long long)(dec->len - dec->pos),
        (unsigned long long)(h->number - 1));
    dec->st->skipped++;
    if (h->number == 1 || !dec->tool->skipped)
        return err;
    err = dec->tool->skipped(dec->ctx, dec->d, true);
    return err ? err : 1;
}

/* The fields of the header at buf + pos, checked. */
static int header_fields(struct mt_decoder *dec, struct mt_header *h)
{
    const uint8_t *b = dec->buf + dec->pos;
    struct mt_cur c = cursor(dec, h, 0, h->hsize);
    h->size = mt_le(b + 4, 4) / 8;
    h->time_begin = mt_le(b + 8, 8);
    h->time_end = mt_le(b + 16, 8);
    h->pid = mt_le(b + 30, 8);
    unsigned at = 38;
    if (h->version >= 3) {
        h->domain = (unsigned)mt_le(b + at, 2);
        at += 2;
    }
    h->vix = mt_le(b + at, 2);
    h->vpred = mt_le(b + at + 2, 2);
    h->vval = mt_le(b + at + 4, 8);
    h->id_begin = mt_le(b + at + 12, 8);
    h->id_end = mt_le(b + at + 20, 8);
    if (h->size < h->hsize || h->size > MT_MAX_PACKET)
        return c.p += 4,
               mt_corrupt(dec, &c, "packet size %llu bytes: expected %u (its header) to %d",
                          (unsigned long long)h->size, h->hsize, MT_MAX_PACKET);
    if (h->time_begin > h->time_end)
        return c.p += 8,
               mt_corrupt(dec, &c, "the packet ends (%llu us) before it begins (%llu us)",
                          (unsigned long long)h->time_end, (unsigned long long)h->time_begin);
    if (h->id_begin > h->id_end)
        return c.p += at + 12,
               mt_corrupt(dec, &c, "allocation ids from %llu down to %llu",
                          (unsigned long long)h->id_begin, (unsigned long long)h->id_end);
    if (h->domain >= MT_MAX_DOMAINS)
        return c.p += 38,
               mt_corrupt(dec, &c, "domain %u: expected one below %d", h->domain, MT_MAX_DOMAINS);
    return 0;
}

/* Reads the next packet's header: 1, 0 at the end of the input (or a cut
 * told to the tool), or an error. */
static int header(struct mt_decoder *dec, struct mt_header *h)
{
    h->number = dec->st->packets + 1;
    h->offset = dec->buf_off + dec->pos;
    h->domain = 0;
    h->hsize = 0;
    int r = need(dec, 30);
    if (r > 0) {
        struct mt_cur c = cursor(dec, h, 0, 30);
        const uint8_t *b = dec->buf + dec->pos;
        uint64_t magic = mt_le(b, 4);
        h->version = (unsigned)mt_le(b + 28, 2);
        if (magic != MT_MAGIC)
            return mt_corrupt(dec, &c, "expected the packet magic 0xc1fc1fc1, found 0x%08llx",
                              (unsigned long long)magic);
        c.p += 28;
        if (h->version < 1 || h->version > 3 ||
            (dec->info.version && h->version != dec->info.version))
            return mt_corrupt(dec, &c, "format version %u: expected %u", h->version,
                              dec->info.version ? dec->info.version : 2);
        h->hsize = h->version >= 3 ? MT_HEADER_V3 : MT_HEADER_V2;
        r = need(dec, h->hsize);
    }
    if (r < 0 || (r == 0 && dec->len == dec->pos && h->number > 1))
        return r;
    dec->st->packets++;
    if (r == 0)
        return cut(dec, h, h->hsize ? h->hsize : 30, "a packet header") > 0 ? 0 : -EINVAL;
    if ((r = header_fields(dec, h)) < 0)
        return r;
    if ((r = need(dec, (size_t)h->size)) < 0)
        return r;
    if (r == 0)
        return (r = cut(dec, h, h->size, "the packet's size in its header")) > 0 ? 0 : r;
    return 1;
}

/* The first packet: one trace-info event at the packet's start time. */
static int info_packet(struct mt_decoder *dec, const struct mt_header *h)
{
    struct mt_cur c = cursor(dec, h, h->hsize, (size_t)h->size);
    struct mt_info *in = &dec->info;
    uint64_t w, rate, ws, pid;
    const char *s[4] = {"", "", "", ""};
    size_t n[4] = {0, 0, 0, 0};
    if (!mt_take(&c, 4, &w))
        return mt_short(dec, &c, "the trace-info event");
    if (w >> MT_TIME_BITS != 0 || (w & MT_TIME_MASK) != (h->time_begin & MT_TIME_MASK))
        return c.p -= 4, mt_corrupt(dec, &c,
                                    "expected the trace-info event (code 0) at the packet's start "
                                    "time, found code %llu",
                                    (unsigned long long)(w >> MT_TIME_BITS));
    bool ok = mt_take(&c, 8, &rate) && mt_take(&c, 1, &ws) && mt_string(&c, &s[0], &n[0]) &&
              mt_string(&c, &s[1], &n[1]) && mt_string(&c, &s[2], &n[2]) && mt_take(&c, 8, &pid) &&
              (h->version < 2 || mt_string(&c, &s[3], &n[3]));
    if (!ok)
        return mt_short(dec, &c, "the trace-info event's fields");
    if (c.p != c.end)
        return mt_corrupt(dec, &c,
                          "expected the end of the trace-info packet, found %zu more bytes",
                          (size_t)(c.end - c.p));
    size_t total = n[0] + n[1] + n[2] + n[3] + 4;
    if (!(dec->strings = malloc(total)))
        return -ENOMEM;
    char *at = dec->strings;
    const char **dst[4] = {&in->executable_name, &in->host_name, &in->runtime_params, &in->context};
    for (int i = 0; i < 4; i++) {
        memcpy(at, s[i], n[i]);
        at[n[i]] = 0;
        *dst[i] = at;
        at += n[i] + 1;
    }
    memcpy(&in->sample_rate, &rate, sizeof(rate));
    in->word_size = (unsigned)ws;
    in->pid = pid;
    in->start_time_us = h->time_begin;
    in->version = h->version;
    return dec->tool->info ? dec->tool->info(dec->ctx, in) : 0;
}

/* A packet memtrace's reader skips: why, or NULL to read it. */
static const char *skip_reason(const struct mt_decoder *dec, const struct mt_header *h, char *buf,
                               size_t cap)
{
    const struct mt_domain *dom = dec->domains[0];
    if (h->version < 3 && dom && h->time_begin < dom->last_time)
        snprintf(buf, cap, "it begins at %llu us, before the last event (%llu us)",
                 (unsigned long long)h->time_begin, (unsigned long long)dom->last_time);
    else if (h->version < 3 && h->id_begin != dec->alloc_id)
        snprintf(buf, cap, "its allocations begin at id %llu, expected %llu",
                 (unsigned long long)h->id_begin, (unsigned long long)dec->alloc_id);
    else if (h->pid != dec->info.pid)
        snprintf(buf, cap, "it was written by process %llu, the trace is of %llu",
                 (unsigned long long)h->pid, (unsigned long long)dec->info.pid);
    else
        return NULL;
    return buf;
}

static int skip(struct mt_decoder *dec, const struct mt_header *h, const char *why)
{
    int err = ember_diag_set(dec->d, -EINVAL, dec->name, 0,
                             "memtrace packet %llu at byte %llu skipped, as memtrace does: %s",
                             (unsigned long long)h->number, (unsigned long long)h->offset, why);
    dec->st->skipped++;
    return dec->tool->skipped ? dec->tool->skipped(dec->ctx, dec->d, false) : err;
}

/* The next packet: 1 when one was read, 0 at the end, or an error. */
static int next_packet(struct mt_decoder *dec)
{
    struct mt_header h;
    int r = header(dec, &h);
    if (r <= 0)
        return r;
    char why[160];
    const char *reason = skip_reason(dec, &h, why, sizeof(why));
    struct mt_cur c = cursor(dec, &h, h.hsize, (size_t)h.size);
    r = reason ? skip(dec, &h, reason) : mt_packet_events(dec, &h, &c);
    dec->pos += (size_t)h.size;
    if (dec->tool->progress && h.number % MT_PROGRESS_PACKETS == 0)
        dec->tool->progress(dec->ctx);
    return r < 0 ? r : 1;
}

int mt_probe(const void *data, size_t len)
{
    const uint8_t *b = data;
    if (len < 30 || mt_le(b, 4) != MT_MAGIC)
        return 0;
    uint64_t version = mt_le(b + 28, 2);
    size_t hsize = version >= 3 ? MT_HEADER_V3 : MT_HEADER_V2;
    if (version < 1 || version > 3)
        return 0;
    if (len < hsize + 4) /* cut before its first event: the reader says so */
        return -1;
    if (mt_le(b + 4, 4) / 8 < hsize + 4)
        return 0;
    /* the trace-info event (code 0) at the packet's start time: 25 bits of
     * it that another CTF's packet (ember's own, whose magic is the same)
     * would match by chance once in 2^25 */
    uint64_t ev = mt_le(b + hsize, 4);
    return ev >> MT_TIME_BITS == 0 && (ev & MT_TIME_MASK) == (mt_le(b + 8, 8) & MT_TIME_MASK);
}

int mt_decode(struct ember_input *in, const struct mt_tool *tool, void *ctx, struct mt_stats *st,
              struct ember_diag *d)
{
    struct mt_decoder *dec = calloc(1, sizeof(*dec));
    if (!dec)
        return -ENOMEM;
    *st = (struct mt_stats){0};
    *dec = (struct mt_decoder){
        .in = in, .name = ember_input_name(in), .tool = tool, .ctx = ctx, .d = d, .st = st};
    struct mt_header h;
    int err = ember_u64map_init(&dec->codes);
    if (!err && (err = header(dec, &h)) == 0)
        err = ember_diag_set(d, -ENODATA, dec->name, 0, "the input is empty");
    if (err > 0 && (err = info_packet(dec, &h)) == 0) {
        dec->pos += (size_t)h.size;
        while ((err = next_packet(dec)) > 0)
            ;
    }
    ember_u64map_release(&dec->codes);
    for (unsigned i = 0; i < MT_MAX_DOMAINS; i++)
        mt_domain_free(dec->domains[i]);
    ember_chunk_release(&dec->chunk);
    free(dec->buf);
    free(dec->strings);
    free(dec);
    return err < 0 ? err : 0;
}
