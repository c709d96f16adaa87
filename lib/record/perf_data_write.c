/*
 * perf_data_write.c - the perf.data layout around the records: the file
 * header, the attr ids and the attrs section before the data, the feature
 * sections after it (perf's util/header.c writes them so; perf_data_format.h
 * has the constants).
 *
 * Layout: [header][ids: u64 per opened event, grouped by attr][per attr: the
 * attr + (offset, size) of its ids]
 * [data ...][one (offset, size) per feature bit set][the features]. The
 * header is first written with an empty data section and rewritten by
 * rec_write_tail, so a file cut short by a crash reads as empty, never as
 * half a section. Strings in features are perf's: a u32 length (NUL
 * included, padded to 64) then the bytes. Build-ids are the kernel's from
 * the mmap records, else read from the files (symbol/dso.h) when they are
 * ELF; files without one are left out, as perf does. Samples stamped with
 * CLOCK_MONOTONIC (use_clockid) get perf's HEADER_CLOCKID (the clock's
 * resolution) and HEADER_CLOCK_DATA (the clock and the wall clock read
 * together), which perf script and perf report need to read them without a
 * warning and to print wall-clock times; their HEADER_SAMPLE_TIME ends when
 * the recording did (see feat_sample_time).
 */
#include "record/record_impl.h"
#include "symbol/dso.h"
#include "base/diag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "wire/perf_data_format.h"

struct file_header {
    char magic[PD_MAGIC_LEN];
    uint64_t size;
    uint64_t attr_size;
    uint64_t attrs[2], data[2], event_types[2];
    uint64_t features[PD_FEAT_BITS / 64];
};
_Static_assert(sizeof(struct file_header) == PD_HEADER_SIZE, "perf's header is 104 bytes");
_Static_assert(sizeof(struct perf_event_attr) >= PERF_ATTR_SIZE_VER7, "attr too small");

static uint64_t ids_offset(void)
{
    return PD_HEADER_SIZE;
}

static uint64_t attrs_offset(const struct ember_recorder *r)
{
    return ids_offset() + r->nev * sizeof(uint64_t);
}

/* An attrs section entry: the attr, then where its ids are. */
static uint64_t attr_entry_size(void)
{
    return PERF_ATTR_SIZE_VER7 + 16;
}

static void fill_header(const struct ember_recorder *r, struct file_header *h, const uint64_t *feat)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->magic, PD_MAGIC, PD_MAGIC_LEN);
    h->size = PD_HEADER_SIZE;
    h->attr_size = attr_entry_size();
    h->attrs[0] = attrs_offset(r);
    h->attrs[1] = h->attr_size * r->nattrs;
    h->data[0] = r->data_offset;
    h->data[1] = feat ? r->data_size : 0;
    if (feat)
        memcpy(h->features, feat, sizeof(h->features));
}

/* Event a's ids, in the ids section; *n of them. */
static int write_ids(struct ember_recorder *r, unsigned a, uint64_t *n, struct ember_diag *d)
{
    *n = 0;
    for (size_t k = 0; k < r->nev; k++) {
        if (r->ev[k].attr != a)
            continue;
        int err = rec_write(r, &r->ev[k].id, sizeof(r->ev[k].id), d);
        if (err)
            return err;
        ++*n;
    }
    return 0;
}

/* The header (data section empty), the ids grouped by event, then each
 * event's attr and where its ids are. */
int rec_write_head(struct ember_recorder *r, struct ember_diag *d)
{
    struct file_header h;
    r->data_offset = attrs_offset(r) + attr_entry_size() * r->nattrs;
    fill_header(r, &h, NULL);
    int err = rec_write(r, &h, sizeof(h), d);
    uint64_t nids[REC_MAX_ATTRS] = {0};
    for (unsigned a = 0; !err && a < r->nattrs; a++)
        err = write_ids(r, a, &nids[a], d);
    uint64_t at = ids_offset();
    for (unsigned a = 0; !err && a < r->nattrs; a++) {
        uint64_t ids[2] = {at, nids[a] * sizeof(uint64_t)};
        err = rec_write(r, rec_attr(r, a), PERF_ATTR_SIZE_VER7, d);
        if (!err)
            err = rec_write(r, ids, sizeof(ids), d);
        at += ids[1];
    }
    return err;
}

/* ---- feature sections, made in memory ---- */

struct fbuf {
    unsigned char *p;
    size_t len, cap;
    int err;
};

static void fput(struct fbuf *b, const void *data, size_t n)
{
    if (b->err)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->err = -ENOMEM;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (data)
        memcpy(b->p + b->len, data, n);
    else
        memset(b->p + b->len, 0, n);
    b->len += n;
}

static void fput_u32(struct fbuf *b, uint32_t v)
{
    fput(b, &v, sizeof(v));
}

static void fput_u64(struct fbuf *b, uint64_t v)
{
    fput(b, &v, sizeof(v));
}

static void fput_string(struct fbuf *b, const char *s)
{
    size_t n = strlen(s) + 1;
    size_t padded = (n + PD_NAME_ALIGN - 1) / PD_NAME_ALIGN * PD_NAME_ALIGN;
    fput_u32(b, (uint32_t)padded);
    fput(b, s, n);
    fput(b, NULL, padded - n);
}

static void build_id_entry(struct fbuf *b, const char *name, size_t namelen,
                           const struct rec_dso *dso)
{
    unsigned char e[PD_BUILD_ID_ENTRY_NAME] = {0};
    size_t padded = (namelen + 1 + PD_NAME_ALIGN - 1) / PD_NAME_ALIGN * PD_NAME_ALIGN;
    uint16_t misc =
        (dso->kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER) | PD_MISC_BUILD_ID_SIZE;
    uint16_t size = (uint16_t)(sizeof(e) + padded);
    int32_t pid = PD_HOST_KERNEL_ID;
    memcpy(e + 4, &misc, sizeof(misc));
    memcpy(e + 6, &size, sizeof(size));
    memcpy(e + 8, &pid, sizeof(pid));
    memcpy(e + 12, dso->build_id, dso->size);
    e[PD_BUILD_ID_SIZE_AT] = dso->size;
    fput(b, e, sizeof(e));
    fput(b, name, namelen);
    fput(b, NULL, padded - namelen);
}

static void feat_build_ids(struct ember_recorder *r, struct fbuf *b)
{
    struct strmap_slot *slots = ember_strmap_sorted(&r->dsos);
    if (!slots) {
        b->err = r->dsos.count ? -ENOMEM : b->err;
        return;
    }
    for (size_t i = 0; i < r->dsos.count; i++) {
        struct rec_dso *dso = slots[i].value;
        char name[4096];
        if (slots[i].len >= sizeof(name))
            continue;
        memcpy(name, slots[i].key, slots[i].len);
        name[slots[i].len] = '\0';
        if (!dso->size && name[0] == '/')
            dso->size =
                (unsigned char)ember_dso_file_build_id(name, dso->build_id, sizeof(dso->build_id));
        if (dso->size)
            build_id_entry(b, name, slots[i].len, dso);
    }
    free(slots);
}

static void feat_nrcpus(struct fbuf *b)
{
    long conf = sysconf(_SC_NPROCESSORS_CONF), online = sysconf(_SC_NPROCESSORS_ONLN);
    fput_u32(b, (uint32_t)(conf > 0 ? conf : 1));
    fput_u32(b, (uint32_t)(online > 0 ? online : 1));
}

static void feat_cmdline(const struct ember_recorder *r, struct fbuf *b)
{
    uint32_t n = 0;
    for (char *const *a = r->o.cmdline; a && *a; a++)
        n++;
    fput_u32(b, n);
    for (char *const *a = r->o.cmdline; a && *a; a++)
        fput_string(b, *a);
}

/* Each event: its attr, its ids, its name. */
static void feat_event_desc(const struct ember_recorder *r, struct fbuf *b)
{
    fput_u32(b, r->nattrs);
    fput_u32(b, PERF_ATTR_SIZE_VER7);
    for (unsigned a = 0; a < r->nattrs; a++) {
        uint32_t n = 0;
        for (size_t k = 0; k < r->nev; k++)
            n += r->ev[k].attr == a;
        fput(b, rec_attr(r, a), PERF_ATTR_SIZE_VER7);
        fput_u32(b, n);
        fput_string(b, rec_attr_name(r, a));
        for (size_t k = 0; k < r->nev; k++)
            if (r->ev[k].attr == a)
                fput_u64(b, r->ev[k].id);
    }
}

/* The first sample's time, and the recording's end: the last sample's,
 * or when the samples are stamped with CLOCK_MONOTONIC, the moment the
 * events were disabled, later (a thread still off the CPU then was away
 * until then: readers close its interval there). */
static void feat_sample_time(const struct ember_recorder *r, struct fbuf *b)
{
    bool mono = r->attr.use_clockid && r->attr.clockid == CLOCK_MONOTONIC;
    fput_u64(b, r->first_time);
    fput_u64(b, mono && r->t1 > r->last_time ? r->t1 : r->last_time);
}

static void feat_clockid(struct fbuf *b)
{
    struct timespec res;
    bool known = clock_getres(CLOCK_MONOTONIC, &res) == 0;
    fput_u64(b, known ? (uint64_t)res.tv_sec * 1000000000u + (uint64_t)res.tv_nsec : 1);
}

/* perf's layout (record__init_clock): version 1, the clock, then the
 * time of day and the clock read one after the other, in ns. */
static void feat_clock_data(const struct ember_recorder *r, struct fbuf *b)
{
    struct timeval tod;
    struct timespec mono;
    gettimeofday(&tod, NULL);
    clock_gettime((clockid_t)r->attr.clockid, &mono);
    fput_u32(b, 1);
    fput_u32(b, (uint32_t)r->attr.clockid);
    fput_u64(b, (uint64_t)tod.tv_sec * 1000000000u + (uint64_t)tod.tv_usec * 1000u);
    fput_u64(b, (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec);
}

/* Feature fid's section appended to b. */
static void feature(struct ember_recorder *r, int fid, const struct utsname *u, struct fbuf *b)
{
    switch (fid) {
    case PD_FEAT_BUILD_ID:
        feat_build_ids(r, b);
        break;
    case PD_FEAT_HOSTNAME:
        fput_string(b, u->nodename);
        break;
    case PD_FEAT_OSRELEASE:
        fput_string(b, u->release);
        break;
    case PD_FEAT_VERSION:
        fput_string(b, r->o.tool_version ? r->o.tool_version : "ember");
        break;
    case PD_FEAT_ARCH:
        fput_string(b, u->machine);
        break;
    case PD_FEAT_NRCPUS:
        feat_nrcpus(b);
        break;
    case PD_FEAT_CMDLINE:
        feat_cmdline(r, b);
        break;
    case PD_FEAT_EVENT_DESC:
        feat_event_desc(r, b);
        break;
    case PD_FEAT_SAMPLE_TIME:
        feat_sample_time(r, b);
        break;
    case PD_FEAT_CLOCKID:
        feat_clockid(b);
        break;
    case PD_FEAT_CLOCK_DATA:
        feat_clock_data(r, b);
        break;
    default:
        break;
    }
}

static const int features[] = {
    PD_FEAT_BUILD_ID,    PD_FEAT_HOSTNAME, PD_FEAT_OSRELEASE,  PD_FEAT_VERSION,
    PD_FEAT_ARCH,        PD_FEAT_NRCPUS,   PD_FEAT_CMDLINE,    PD_FEAT_EVENT_DESC,
    PD_FEAT_SAMPLE_TIME, PD_FEAT_CLOCKID,  PD_FEAT_CLOCK_DATA,
};

/* The clock's sections only for samples on a chosen clock, as perf. */
static bool feature_wanted(const struct ember_recorder *r, int fid)
{
    return r->attr.use_clockid || (fid != PD_FEAT_CLOCKID && fid != PD_FEAT_CLOCK_DATA);
}
enum { NFEATURES = sizeof(features) / sizeof(features[0]) };

/* The (offset, size) table then the sections, after the data. */
static int write_features(struct ember_recorder *r, uint64_t *bits, struct ember_diag *d)
{
    struct utsname u;
    if (uname(&u) < 0)
        memset(&u, 0, sizeof(u));
    struct fbuf b = {0};
    uint64_t table[NFEATURES][2];
    size_t n = 0;
    for (size_t i = 0; i < NFEATURES; i++)
        n += feature_wanted(r, features[i]);
    uint64_t at = r->data_offset + r->data_size + n * sizeof(table[0]);
    for (size_t i = 0, k = 0; i < NFEATURES; i++) {
        if (!feature_wanted(r, features[i]))
            continue;
        size_t before = b.len;
        feature(r, features[i], &u, &b);
        table[k][0] = at + before;
        table[k++][1] = b.len - before;
        bits[features[i] / 64] |= 1ULL << (features[i] % 64);
    }
    int err = b.err ? b.err : rec_write(r, table, n * sizeof(table[0]), d);
    if (!err)
        err = rec_write(r, b.p, b.len, d);
    free(b.p);
    return err;
}

int rec_write_tail(struct ember_recorder *r, struct ember_diag *d)
{
    uint64_t bits[PD_FEAT_BITS / 64] = {0};
    int err = write_features(r, bits, d);
    if (err)
        return err;
    struct file_header h;
    fill_header(r, &h, bits);
    ssize_t n = pwrite(r->out, &h, sizeof(h), 0);
    if (n != (ssize_t)sizeof(h))
        return ember_diag_set(d, -EIO, "", 0, "cannot write the perf.data header: %s",
                              n < 0 ? strerror(errno) : "short write");
    return 0;
}
