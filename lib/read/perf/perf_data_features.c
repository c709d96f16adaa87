/*
 * perf_data_features.c - the feature sections of a perf.data file (perf's
 * util/header.c writes them after the data section, one per bit set in the
 * header; a pipe-mode file sends them as HEADER_FEATURE records): the
 * build-ids, the events' names, the architecture, the last sample's time
 * (where ember record says when it stopped). The others are skipped,
 * but must be there: a file cut inside them is a truncation error.
 *
 * Invariants: a section is read whole (at most MAX_FEATURE bytes), in
 * offset order, and every length inside it is checked against its size.
 */
#include "read/perf/perf_data.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAX_FEATURE = 256 << 20 }; /* a feature section read whole */

static int add_build_id(struct pd_file *f, const uint8_t *bits, size_t n, bool kernel,
                        const char *path, size_t plen)
{
    if (EMBER_VEC_RESERVE(f->bids, f->bcap, f->nbids + 1) < 0)
        return -ENOMEM;
    struct pd_build_id *b = &f->bids[f->nbids];
    b->path = ember_arena_strndup(&f->arena, path, plen);
    if (!b->path)
        return -ENOMEM;
    b->size = (uint8_t)(n < PD_BUILD_ID_MAX ? n : PD_BUILD_ID_MAX);
    memcpy(b->bits, bits, b->size);
    b->kernel = kernel;
    f->nbids++;
    return 0;
}

/* One build_id_event: header, pid, 24 bytes of build-id (the size in its
 * 21st byte when misc says so), the path. */
int pd_file_build_id_entry(struct pd_file *f, const uint8_t *p, size_t len, size_t *used)
{
    enum { FIXED = PD_BUILD_ID_ENTRY_NAME, MISC_BUILD_ID_SIZE = 1 << 15 };
    if (len < FIXED)
        return -EINVAL;
    uint16_t misc = pd_u16(p + 4), size = pd_u16(p + 6);
    if (size < FIXED || size > len)
        return -EINVAL;
    size_t n = misc & MISC_BUILD_ID_SIZE ? p[12 + 20] : PD_BUILD_ID_MAX;
    if (n > PD_BUILD_ID_MAX)
        n = PD_BUILD_ID_MAX;
    const char *path = (const char *)p + FIXED;
    size_t plen = strnlen(path, size - FIXED);
    uint8_t cpumode = misc & PERF_RECORD_MISC_CPUMODE_MASK;
    bool kernel = cpumode == PERF_RECORD_MISC_KERNEL || cpumode == PERF_RECORD_MISC_GUEST_KERNEL;
    *used = size;
    return add_build_id(f, p + 12, n, kernel, path, plen);
}

static int feature_build_ids(struct pd_file *f, const uint8_t *p, size_t len, struct ember_diag *d)
{
    size_t at = 0, used;
    while (at < len) {
        int err = pd_file_build_id_entry(f, p + at, len - at, &used);
        if (err == -EINVAL)
            return pd_bad_file(d, f->name,
                               "the build-id section has a broken entry at its byte %zu", at);
        if (err)
            return err;
        at += used;
    }
    return 0;
}

/* A perf_header_string: u32 length (with padding), then the bytes. */
static bool header_string(const uint8_t *p, size_t len, size_t *at, const char **s, size_t *n)
{
    if (len - *at < 4)
        return false;
    uint32_t l = pd_u32(p + *at);
    if (l > len - *at - 4)
        return false;
    *s = (const char *)p + *at + 4;
    *n = strnlen(*s, l);
    *at += 4 + (size_t)l;
    return true;
}

/* Event names: nr, attr_size, then per event its attribute, its id count,
 * its name and its ids; matched to the attributes by position. */
static int feature_event_desc(struct pd_file *f, const uint8_t *p, size_t len, struct ember_diag *d)
{
    if (len < 8)
        return pd_bad_file(d, f->name, "the event description section is cut (%zu bytes)", len);
    uint32_t nr = pd_u32(p), asz = pd_u32(p + 4);
    size_t at = 8;
    for (uint32_t i = 0; i < nr; i++) {
        const char *name;
        size_t n;
        if (asz > len - at || len - at - asz < 4)
            return pd_bad_file(d, f->name, "the description of event %u is cut", i);
        at += asz;
        uint32_t nids = pd_u32(p + at);
        at += 4;
        if (!header_string(p, len, &at, &name, &n) || nids > (len - at) / 8)
            return pd_bad_file(d, f->name, "the description of event %u is cut", i);
        at += (size_t)nids * 8;
        if (i < f->nattrs && n > 0)
            snprintf(f->attrs[i].name, sizeof(f->attrs[i].name), "%.*s", (int)n, name);
    }
    return 0;
}

static int feature_arch(struct pd_file *f, const uint8_t *p, size_t len)
{
    const char *s;
    size_t n, at = 0;
    if (header_string(p, len, &at, &s, &n))
        snprintf(f->arch, sizeof(f->arch), "%.*s", (int)n, s);
    return 0;
}

/* The first and the last time the recording holds: perf's first and last
 * sample, ember record's first sample and the moment it stopped. */
static int feature_sample_time(struct pd_file *f, const uint8_t *p, size_t len,
                               struct ember_diag *d)
{
    if (len < 16)
        return pd_bad_file(d, f->name, "the sample time section has %zu bytes (expected 16)", len);
    f->time_end = pd_u64(p + 8);
    return 0;
}

int pd_file_check_arch(const struct pd_file *f, struct ember_diag *d)
{
    if (!f->arch[0] || strcmp(f->arch, "x86_64") == 0)
        return 0;
    return ember_diag_set(d, -ENOTSUP, f->name, 0,
                          "DWARF call graphs recorded on %s (the file's HEADER_ARCH): ember "
                          "unwinds those of x86_64 only",
                          f->arch);
}

int pd_file_feature(struct pd_file *f, unsigned bit, const uint8_t *p, size_t len,
                    struct ember_diag *d)
{
    switch (bit) {
    case PD_FEAT_BUILD_ID:
        return feature_build_ids(f, p, len, d);
    case PD_FEAT_EVENT_DESC:
        return feature_event_desc(f, p, len, d);
    case PD_FEAT_ARCH:
        return feature_arch(f, p, len);
    case PD_FEAT_SAMPLE_TIME:
        return feature_sample_time(f, p, len, d);
    default:
        return 0;
    }
}

static bool wanted(unsigned bit)
{
    return bit == PD_FEAT_BUILD_ID || bit == PD_FEAT_EVENT_DESC || bit == PD_FEAT_ARCH ||
           bit == PD_FEAT_SAMPLE_TIME;
}

struct feat_ref {
    unsigned bit;
    uint64_t offset, size;
};

static int by_offset(const void *a, const void *b)
{
    const struct feat_ref *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Skips to offset end, the end of feature section bit. */
static int skip_to(struct pd_stream *s, uint64_t end, unsigned bit, struct ember_diag *d)
{
    char what[64];
    snprintf(what, sizeof(what), "feature section %u", bit);
    return pd_stream_skip(s, end - s->offset, what, d);
}

int pd_file_read_features(struct pd_file *f, struct pd_stream *s, struct ember_diag *d)
{
    if (f->pipe)
        return 0;
    struct feat_ref refs[PD_FEAT_BITS];
    unsigned n = 0;
    for (unsigned bit = 0; bit < PD_FEAT_BITS; bit++)
        if (f->features[bit / 8] >> (bit % 8) & 1)
            refs[n++].bit = bit;
    if (n == 0)
        return 0;
    const uint8_t *t;
    int err = pd_stream_read(s, (size_t)n * 16, &t, "the table of feature sections", d);
    if (err)
        return err;
    for (unsigned i = 0; i < n; i++) {
        refs[i].offset = pd_u64(t + 16 * i);
        refs[i].size = pd_u64(t + 16 * i + 8);
    }
    qsort(refs, n, sizeof(refs[0]), by_offset);
    for (unsigned i = 0; i < n; i++) {
        if (refs[i].size > UINT64_MAX - refs[i].offset)
            return pd_bad_file(d, f->name, "feature section %u's size (%llu bytes) runs past 2^64",
                               refs[i].bit, (unsigned long long)refs[i].size);
        if (!wanted(refs[i].bit)) { /* skipped, but it must be there: a cut file is an error */
            if (refs[i].offset + refs[i].size > s->offset &&
                (err = skip_to(s, refs[i].offset + refs[i].size, refs[i].bit, d)))
                return err;
            continue;
        }
        if (refs[i].offset < s->offset || refs[i].size > MAX_FEATURE)
            return pd_bad_file(d, f->name,
                               "feature section %u at offset %llu (%llu bytes) overlaps what "
                               "precedes it",
                               refs[i].bit, (unsigned long long)refs[i].offset,
                               (unsigned long long)refs[i].size);
        char what[64];
        snprintf(what, sizeof(what), "feature section %u", refs[i].bit);
        const uint8_t *p;
        if ((err = pd_stream_skip(s, refs[i].offset - s->offset, what, d)) ||
            (err = pd_stream_read(s, (size_t)refs[i].size, &p, what, d)) ||
            (err = pd_file_feature(f, refs[i].bit, p, (size_t)refs[i].size, d)))
            return err;
    }
    return 0;
}

const struct pd_build_id *pd_file_build_id(const struct pd_file *f, const char *path, bool kernel)
{
    for (size_t i = f->nbids; i-- > 0;)
        if (f->bids[i].kernel == kernel && strcmp(f->bids[i].path, path) == 0)
            return &f->bids[i];
    return NULL;
}
