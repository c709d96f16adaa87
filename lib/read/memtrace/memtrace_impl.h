/*
 * memtrace_impl.h - the memtrace decoder's state, shared by its packet and
 * event walk (memtrace_decode.c) and its codecs of locations and
 * backtraces (memtrace_codec.c); private to lib/read/memtrace/.
 *
 * Invariants: a cursor never reads past its packet's end (every read is
 * checked, a short one is the error "expected ..., found the packet's
 * end"); a backtrace cache bucket is read only once a miss has filled it
 * with a code that a location event defined, so every code handed to a
 * client is a defined one.
 */
#ifndef EMBER_READ_MEMTRACE_IMPL_H
#define EMBER_READ_MEMTRACE_IMPL_H

#include "read/memtrace/memtrace_decode.h"
#include "base/chunk.h"
#include "base/u64map.h"

#include <string.h>

enum {
    MT_CACHE = 1 << 14, /* backtrace cache buckets (backtrace_codec.ml) */
    MT_MTF = 31,        /* move-to-front table entries (location_codec.ml) */
    MT_MAX_DOMAINS = 1024,
    MT_MAX_FRAMES = 1 << 20, /* a longer backtrace is garbage, not OCaml's */
    MT_TIME_BITS = 25,       /* of an event's time in its header; the code above them */
};

#define MT_TIME_MASK ((UINT64_C(1) << MT_TIME_BITS) - 1)

/* A defname move-to-front table, and the filename table whose entries each
 * own one. Slots are NULL until filled; front = most recent. */
struct mt_defnames {
    char *name[MT_MTF];
};
struct mt_files {
    char *name[MT_MTF];
    struct mt_defnames *defs[MT_MTF];
};

/* What a domain (v3; the one domain of v1 and v2) carries from packet to
 * packet. */
struct mt_domain {
    uint64_t cache_loc[MT_CACHE];
    uint16_t cache_pred[MT_CACHE];
    uint8_t filled[MT_CACHE]; /* a miss has set cache_loc */
    uint64_t *bt;             /* the previous backtrace, outermost first */
    size_t bt_len, bt_cap;
    size_t bt_shared; /* codes kept from the backtrace before */
    struct mt_files files;
    uint64_t last_time; /* µs since the epoch */
};

/* A packet header, as read. */
struct mt_header {
    uint64_t number, offset; /* 1-based; file offset of its first byte */
    uint64_t size;           /* bytes, the header included */
    uint64_t time_begin, time_end, pid;
    uint64_t vix, vpred, vval; /* the cache verifier */
    uint64_t id_begin, id_end;
    unsigned version, domain, hsize;
};

/* Reading one packet's bytes. */
struct mt_cur {
    const uint8_t *p, *end;
    const uint8_t *base; /* the packet's first byte, at file offset base_off */
    uint64_t base_off;
    uint64_t packet; /* 1-based */
};

struct mt_decoder {
    struct ember_input *in;
    const char *name;
    const struct mt_tool *tool;
    void *ctx;
    struct ember_diag *d;
    struct mt_stats *st;
    /* the input: buf[pos, len) unread, buf[0] at file offset buf_off */
    struct ember_chunk chunk;
    uint8_t *buf;
    size_t len, pos, cap;
    uint64_t buf_off;
    struct mt_info info;
    char *strings; /* the trace-info strings */
    struct mt_domain *domains[MT_MAX_DOMAINS];
    struct ember_u64map codes; /* defined location code -> hash of its locations */
    uint64_t alloc_id;         /* the next allocation's id */
    struct mt_location locs[255];
};

/* "FILE: packet N at byte OFF: MESSAGE" (-EINVAL), at the cursor. */
int mt_corrupt(struct mt_decoder *dec, const struct mt_cur *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The error of a read past the packet's end: expected what. */
int mt_short(struct mt_decoder *dec, const struct mt_cur *c, const char *what);

static inline uint64_t mt_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* n bytes little-endian at the cursor into *v; false at the packet's end. */
static inline bool mt_take(struct mt_cur *c, unsigned n, uint64_t *v)
{
    if ((size_t)(c->end - c->p) < n)
        return false;
    *v = mt_le(c->p, n);
    c->p += n;
    return true;
}

/* memtrace's vint (buf.ml): a byte below 253, or 253/254/255 then a u16,
 * u32 or u64; the u32 sign-extended as memtrace reads it (an int32), so
 * that a negative one is as implausible here as there (callers bound
 * what they take). */
static inline bool mt_vint(struct mt_cur *c, uint64_t *v)
{
    uint64_t b;
    if (!mt_take(c, 1, &b))
        return false;
    if (b < 253) {
        *v = b;
        return true;
    }
    if (!mt_take(c, b == 253 ? 2 : b == 254 ? 4 : 8, v))
        return false;
    if (b == 254)
        *v = (uint64_t)(int64_t)(int32_t)(uint32_t)*v;
    return true;
}

/* A NUL-terminated string at the cursor: false when no NUL is left. */
static inline bool mt_string(struct mt_cur *c, const char **s, size_t *n)
{
    const uint8_t *nul = memchr(c->p, 0, (size_t)(c->end - c->p));
    if (!nul)
        return false;
    *s = (const char *)c->p;
    *n = (size_t)(nul - c->p);
    c->p = nul + 1;
    return true;
}

/* The events of a whole packet at c (memtrace_events.c). */
int mt_packet_events(struct mt_decoder *dec, const struct mt_header *h, struct mt_cur *c);
/* The domain's state, made when first needed. */
int mt_domain_of(struct mt_decoder *dec, unsigned domain, struct mt_domain **out);

/* The codecs (memtrace_codec.c). */
int mt_location_event(struct mt_decoder *dec, struct mt_domain *dom, struct mt_cur *c);
int mt_backtrace(struct mt_decoder *dec, struct mt_domain *dom, struct mt_cur *c,
                 uint64_t common_prefix, unsigned nencoded);
bool mt_cache_verify(const struct mt_domain *dom, uint64_t ix, uint64_t pred, uint64_t val);
void mt_domain_free(struct mt_domain *dom);

#endif
