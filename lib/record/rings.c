/*
 * rings.c - records into the data section: copied from the kernel's rings
 * (or made by synth.c), counted on the way (samples, lost samples, the
 * first and last sample times) and the mapped files remembered for the
 * build-id table.
 *
 * A ring is read as the kernel's ABI says: data_head loaded with acquire,
 * the bytes from data_tail to data_head noted and written to the file from
 * the ring itself (in two pieces where they wrap around its end: a copy of
 * every byte would cost the CPU the recorded program may be waiting for),
 * then data_tail stored with release so the kernel can reuse the space.
 * Records are written whole, in the order each ring gives them; the rings
 * are not merged (perf does not either: readers sort by time, helped by
 * FINISHED_ROUND marks after each pass).
 */
#include "record/record_impl.h"
#include "base/diag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire/perf_data_format.h"

int rec_write(struct ember_recorder *r, const void *buf, size_t len, struct ember_diag *d)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(r->out, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return ember_diag_set(d, -EIO, "", 0, "cannot write the perf.data file: %s",
                                  n < 0 ? strerror(errno) : "nothing written");
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

int rec_note_dso(struct ember_recorder *r, const char *name, size_t len, const unsigned char *id,
                 unsigned idsize, bool kernel)
{
    struct rec_dso *dso = ember_strmap_get(&r->dsos, name, len);
    if (!dso) {
        dso = ember_arena_alloc(&r->dsos.arena, sizeof(*dso));
        if (!dso || ember_strmap_put(&r->dsos, name, len, dso) < 0)
            return -ENOMEM;
        memset(dso, 0, sizeof(*dso));
        dso->kernel = kernel;
    }
    if (id && idsize && idsize <= sizeof(dso->build_id) && !dso->size) {
        memcpy(dso->build_id, id, idsize);
        dso->size = (unsigned char)idsize;
    }
    return 0;
}

/* MMAP2: pid, tid, addr, len, pgoff, 24 bytes (maj/min/ino or the
 * build-id), prot, flags, then the file name. */
static int note_mmap2(struct ember_recorder *r, const unsigned char *rec, size_t size)
{
    enum { UNION = 40, NAME = 72 };
    if (size <= NAME)
        return 0;
    const char *name = (const char *)rec + NAME;
    size_t len = strnlen(name, size - NAME);
    uint16_t misc;
    memcpy(&misc, rec + 4, sizeof(misc));
    bool has_id = misc & PERF_RECORD_MISC_MMAP_BUILD_ID;
    return rec_note_dso(r, name, len, has_id ? rec + UNION + 4 : NULL, has_id ? rec[UNION] : 0,
                        (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL);
}

/* MMAP: pid, tid, start, len, pgoff, the file name. */
static int note_mmap(struct ember_recorder *r, const unsigned char *rec, size_t size)
{
    enum { NAME = 40 };
    if (size <= NAME)
        return 0;
    const char *name = (const char *)rec + NAME;
    uint16_t misc;
    memcpy(&misc, rec + 4, sizeof(misc));
    return rec_note_dso(r, name, strnlen(name, size - NAME), NULL, 0,
                        (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL);
}

static bool is_cs_id(const struct ember_recorder *r, uint64_t id)
{
    size_t lo = 0, hi = r->ncs_ids;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->cs_ids[mid] == id)
            return true;
        if (r->cs_ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* A sample: [identifier], ip, pid/tid, time (the sample_type of
 * attr_init); a context switch's is counted apart, its time as any. */
static void note_sample(struct ember_recorder *r, const unsigned char *rec, size_t size)
{
    size_t at = 8;
    bool cs = false;
    if (r->attr.sample_type & PERF_SAMPLE_IDENTIFIER) {
        cs = size >= 16 && is_cs_id(r, get_u64(rec + 8));
        at += 8;
    }
    if (cs)
        r->switches++;
    else
        r->samples++;
    at += 16; /* ip, pid/tid */
    if (size < at + 8)
        return;
    uint64_t t = get_u64(rec + at);
    if (!r->first_time || t < r->first_time)
        r->first_time = t;
    if (t > r->last_time)
        r->last_time = t;
}

static int note(struct ember_recorder *r, const unsigned char *rec, size_t size)
{
    uint32_t type;
    memcpy(&type, rec, sizeof(type));
    switch (type) {
    case PERF_RECORD_SAMPLE:
        note_sample(r, rec, size);
        return 0;
    case PERF_RECORD_LOST:
        r->lost += size >= 24 ? get_u64(rec + 16) : 0;
        return 0;
    case PERF_RECORD_LOST_SAMPLES:
        r->lost += size >= 16 ? get_u64(rec + 8) : 0;
        return 0;
    case PERF_RECORD_MMAP2:
        return note_mmap2(r, rec, size);
    case PERF_RECORD_MMAP:
        return note_mmap(r, rec, size);
    default:
        return 0;
    }
}

/* A record's size from its header, checked against the len bytes left. */
static int record_size(const unsigned char *rec, size_t at, size_t len, struct ember_diag *d)
{
    uint16_t size;
    memcpy(&size, rec + 6, sizeof(size));
    if (size < sizeof(struct perf_event_header) || size > len - at)
        return ember_diag_set(d, -EIO, "", 0,
                              "a record of %u bytes at %zu of %zu in a ring: the kernel's "
                              "records do not fit",
                              size, at, len);
    return size;
}

/* Notes each record of buf (whole records, as the kernel wrote them). */
static int note_all(struct ember_recorder *r, const unsigned char *buf, size_t len,
                    struct ember_diag *d)
{
    for (size_t off = 0; off < len;) {
        int size = record_size(buf + off, off, len, d);
        int err = size < 0 ? size : note(r, buf + off, (size_t)size);
        if (err < 0)
            return err;
        off += (size_t)size;
    }
    return 0;
}

int rec_emit(struct ember_recorder *r, const void *rec, size_t len, struct ember_diag *d)
{
    int err = note_all(r, rec, len, d);
    if (!err)
        err = rec_write(r, rec, len, d);
    if (!err)
        r->data_size += len;
    return err;
}

/* The unread bytes of a ring, read where the kernel wrote them (and
 * written out from there, as perf does): the ring's data pages (size
 * bytes), the tail's offset in them and len bytes from there, which may
 * wrap around the end. */
struct rec_span {
    const unsigned char *data;
    size_t size, off, len;
};

/* Records are 8-byte aligned and the ring's size a power of two: a header
 * never wraps, a record may. One that does is put together in r->buf, the
 * only bytes copied. */
static const unsigned char *record_at(struct ember_recorder *r, const struct rec_span *s, size_t at,
                                      size_t size)
{
    size_t off = (s->off + at) % s->size;
    if (off + size <= s->size)
        return s->data + off;
    size_t first = s->size - off;
    memcpy(r->buf, s->data + off, first);
    memcpy(r->buf + first, s->data, size - first);
    return r->buf;
}

static int note_span(struct ember_recorder *r, const struct rec_span *s, struct ember_diag *d)
{
    for (size_t at = 0; at < s->len;) {
        const unsigned char *h = s->data + (s->off + at) % s->size;
        int size = record_size(h, at, s->len, d);
        if (size < 0)
            return size;
        int err = note(r, record_at(r, s, at, (size_t)size), (size_t)size);
        if (err < 0)
            return err;
        at += (size_t)size;
    }
    return 0;
}

/* A record's most bytes (its header's size is 16 bits): r->buf's size. */
enum { REC_MAX_RECORD = 65536 };

static int drain_ring(struct ember_recorder *r, struct rec_ring *g, bool *any, struct ember_diag *d)
{
    struct perf_event_mmap_page *meta = g->base;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    struct rec_span s = {(const unsigned char *)g->base + meta->data_offset,
                         (size_t)meta->data_size, (size_t)(tail % meta->data_size),
                         (size_t)(head - tail)};
    if (!s.len)
        return 0;
    if (!r->buf && !(r->buf = malloc(REC_MAX_RECORD)))
        return -ENOMEM;
    size_t first = s.len < s.size - s.off ? s.len : s.size - s.off;
    int err = note_span(r, &s, d);
    if (!err)
        err = rec_write(r, s.data + s.off, first, d);
    if (!err && s.len > first)
        err = rec_write(r, s.data, s.len - first, d);
    if (err)
        return err;
    r->data_size += s.len;
    /* the kernel may reuse the bytes once they are in the file */
    __atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
    *any = true;
    return 0;
}

int rec_finished_round(struct ember_recorder *r, struct ember_diag *d)
{
    struct perf_event_header h = {PD_RECORD_FINISHED_ROUND, 0, sizeof(h)};
    return rec_emit(r, &h, sizeof(h), d);
}

int rec_drain(struct ember_recorder *r, struct ember_diag *d)
{
    bool any = false;
    for (size_t c = 0; c < r->ncpus; c++) {
        if (!r->rings[c].base)
            continue;
        int err = drain_ring(r, &r->rings[c], &any, d);
        if (err < 0)
            return err;
    }
    return any ? rec_finished_round(r, d) : 0;
}
