/*
 * perf_data_file.c - the perf.data file (tools/perf/Documentation/
 * perf.data-file-format.txt): its header, the events' attributes and the
 * records of the data section (the bytes: perf_data_stream.c; a sample's
 * layout: perf_data_sample.c).
 *
 * The file is read front to back, once: the header, everything up to the
 * data section (perf writes the attributes' ids and the attributes there)
 * kept in memory, then the data section as a stream of records, then the
 * feature sections that follow it (perf_data_features.c). A pipe-mode
 * file (`perf record -o -`) has a 16-byte header and describes itself
 * with records instead.
 * Invariants: a record handed out holds its whole declared size; every
 * field is read only after the bytes that hold it are known to be there;
 * a file that ends early is a truncation error naming where.
 */
#include "read/perf/perf_data.h"
#include "read/read_impl.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

enum {
    MAX_PREFIX = 256 << 20, /* bytes before the data section kept in memory */
    MAX_ATTRS = 1 << 16,
    MAX_ATTR_SIZE = 4096,
};

/* ---- errors ------------------------------------------------------------- */

const char *pd_record_name(uint32_t type)
{
    static const char *const kernel[] = {
        [PERF_RECORD_MMAP] = "MMAP",
        [PERF_RECORD_LOST] = "LOST",
        [PERF_RECORD_COMM] = "COMM",
        [PERF_RECORD_EXIT] = "EXIT",
        [PERF_RECORD_THROTTLE] = "THROTTLE",
        [PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE",
        [PERF_RECORD_FORK] = "FORK",
        [PERF_RECORD_READ] = "READ",
        [PERF_RECORD_SAMPLE] = "SAMPLE",
        [PERF_RECORD_MMAP2] = "MMAP2",
        [PERF_RECORD_AUX] = "AUX",
        [PERF_RECORD_ITRACE_START] = "ITRACE_START",
        [PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES",
        [PERF_RECORD_SWITCH] = "SWITCH",
        [PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE",
        [PERF_RECORD_NAMESPACES] = "NAMESPACES",
        [PERF_RECORD_KSYMBOL] = "KSYMBOL",
        [PERF_RECORD_BPF_EVENT] = "BPF_EVENT",
        [PERF_RECORD_CGROUP] = "CGROUP",
    };
    static const char *const perf[] = {
        [PD_RECORD_HEADER_ATTR - 64] = "HEADER_ATTR",
        [PD_RECORD_HEADER_EVENT_TYPE - 64] = "HEADER_EVENT_TYPE",
        [PD_RECORD_HEADER_TRACING_DATA - 64] = "HEADER_TRACING_DATA",
        [PD_RECORD_HEADER_BUILD_ID - 64] = "HEADER_BUILD_ID",
        [PD_RECORD_FINISHED_ROUND - 64] = "FINISHED_ROUND",
        [PD_RECORD_ID_INDEX - 64] = "ID_INDEX",
        [PD_RECORD_AUXTRACE_INFO - 64] = "AUXTRACE_INFO",
        [PD_RECORD_AUXTRACE - 64] = "AUXTRACE",
        [PD_RECORD_AUXTRACE_ERROR - 64] = "AUXTRACE_ERROR",
        [PD_RECORD_THREAD_MAP - 64] = "THREAD_MAP",
        [PD_RECORD_CPU_MAP - 64] = "CPU_MAP",
        [PD_RECORD_STAT_CONFIG - 64] = "STAT_CONFIG",
        [PD_RECORD_STAT - 64] = "STAT",
        [PD_RECORD_STAT_ROUND - 64] = "STAT_ROUND",
        [PD_RECORD_EVENT_UPDATE - 64] = "EVENT_UPDATE",
        [PD_RECORD_TIME_CONV - 64] = "TIME_CONV",
        [PD_RECORD_HEADER_FEATURE - 64] = "HEADER_FEATURE",
        [PD_RECORD_COMPRESSED - 64] = "COMPRESSED",
        [PD_RECORD_FINISHED_INIT - 64] = "FINISHED_INIT",
    };
    if (type < sizeof(kernel) / sizeof(kernel[0]) && kernel[type])
        return kernel[type];
    if (type >= 64 && type - 64 < sizeof(perf) / sizeof(perf[0]) && perf[type - 64])
        return perf[type - 64];
    return "unknown";
}

int pd_corrupt(struct ember_diag *d, const char *file, const struct pd_record *r, const char *fmt,
               ...)
{
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return ember_diag_set(d, -EINVAL, file, 0,
                          "corrupt perf.data: the %s record (type %u, %u bytes) at offset %llu: %s",
                          pd_record_name(r->type), r->type, r->size, (unsigned long long)r->offset,
                          what);
}

int pd_bad_file(struct ember_diag *d, const char *file, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return ember_diag_set(d, -EINVAL, file, 0, "corrupt perf.data: %s", what);
}

/* ---- attributes and names ----------------------------------------------- */

void pd_file_init(struct pd_file *f, const char *name)
{
    memset(f, 0, sizeof(*f));
    f->name = name;
    f->id_pos = f->is_pos = -1;
    ember_arena_init(&f->arena);
}

void pd_file_release(struct pd_file *f)
{
    free(f->attrs);
    free(f->bids);
    ember_u64map_release(&f->ids);
    ember_arena_release(&f->arena);
}

/* perf's names of the events it knows by number (evsel__name without
 * modifiers): what perf script prints when the file names none. */
static void default_name(struct pd_attr *a)
{
    static const char *const hw[] = {
        "cycles",
        "instructions",
        "cache-references",
        "cache-misses",
        "branches",
        "branch-misses",
        "bus-cycles",
        "stalled-cycles-frontend",
        "stalled-cycles-backend",
        "ref-cycles",
    };
    static const char *const sw[] = {
        "cpu-clock",        "task-clock",   "page-faults",  "context-switches",
        "cpu-migrations",   "minor-faults", "major-faults", "alignment-faults",
        "emulation-faults", "dummy",        "bpf-output",   "cgroup-switches",
    };
    const char *n = NULL;
    if (a->type == PERF_TYPE_HARDWARE && a->config < sizeof(hw) / sizeof(hw[0]))
        n = hw[a->config];
    else if (a->type == PERF_TYPE_SOFTWARE && a->config < sizeof(sw) / sizeof(sw[0]))
        n = sw[a->config];
    if (n)
        snprintf(a->name, sizeof(a->name), "%s", n);
    else if (a->type == PERF_TYPE_RAW)
        snprintf(a->name, sizeof(a->name), "r%llx", (unsigned long long)a->config);
    else
        snprintf(a->name, sizeof(a->name), "event-%u-%llx", a->type, (unsigned long long)a->config);
}

/* perf_event_attr from len bytes (fields past len are zero, as the
 * kernel's ABI versions grow). */
static void parse_attr(const uint8_t *p, size_t len, struct pd_attr *a)
{
    uint8_t buf[PERF_ATTR_SIZE_VER3] = {0};
    memcpy(buf, p, len < sizeof(buf) ? len : sizeof(buf));
    memset(a, 0, sizeof(*a));
    a->type = pd_u32(buf);
    a->config = pd_u64(buf + 8);
    a->sample_period = pd_u64(buf + 16);
    a->sample_type = pd_u64(buf + 24);
    a->read_format = pd_u64(buf + 32);
    uint64_t flags = pd_u64(buf + 40);
    a->freq = flags >> 10 & 1;
    a->sample_id_all = flags >> 18 & 1;
    a->exclude_kernel = flags >> 5 & 1;
    a->branch_sample_type = pd_u64(buf + 72);
    a->sample_regs_user = pd_u64(buf + 80);
    a->sample_stack_user = pd_u32(buf + 88);
    default_name(a);
}

static int add_attr(struct pd_file *f, const uint8_t *p, size_t len, struct pd_attr **out)
{
    if (f->nattrs >= MAX_ATTRS)
        return -E2BIG;
    if (EMBER_VEC_RESERVE(f->attrs, f->acap, f->nattrs + 1) < 0)
        return -ENOMEM;
    *out = &f->attrs[f->nattrs++];
    parse_attr(p, len, *out);
    return 0;
}

static int add_ids(struct pd_file *f, size_t attr, const uint8_t *ids, uint64_t n)
{
    if (!f->ids.slots && ember_u64map_init(&f->ids) < 0)
        return -ENOMEM;
    for (uint64_t i = 0; i < n; i++)
        if (ember_u64map_put(&f->ids, pd_u64(ids + 8 * i), (uint32_t)attr) < 0)
            return -ENOMEM;
    return 0;
}

/* perf's __evsel__calc_id_pos and __evsel__calc_is_pos: where a sample
 * carries its id (from the start) and another record (from the end). */
static int id_pos(uint64_t t)
{
    if (t & PERF_SAMPLE_IDENTIFIER)
        return 0;
    if (!(t & PERF_SAMPLE_ID))
        return -1;
    return !!(t & PERF_SAMPLE_IP) + !!(t & PERF_SAMPLE_TID) + !!(t & PERF_SAMPLE_TIME) +
           !!(t & PERF_SAMPLE_ADDR);
}

static int is_pos(uint64_t t)
{
    if (t & PERF_SAMPLE_IDENTIFIER)
        return 1;
    if (!(t & PERF_SAMPLE_ID))
        return -1;
    return 1 + !!(t & PERF_SAMPLE_CPU) + !!(t & PERF_SAMPLE_STREAM_ID);
}

/* Events must agree on where the id is, as perf requires, or a record
 * could not be told apart. */
static int settle_layout(struct pd_file *f, struct ember_diag *d)
{
    if (f->nattrs == 0)
        return 0;
    f->id_pos = id_pos(f->attrs[0].sample_type);
    f->is_pos = is_pos(f->attrs[0].sample_type);
    for (size_t i = 1; i < f->nattrs; i++) {
        if (id_pos(f->attrs[i].sample_type) != f->id_pos ||
            is_pos(f->attrs[i].sample_type) != f->is_pos ||
            f->attrs[i].sample_id_all != f->attrs[0].sample_id_all)
            return pd_bad_file(d, f->name,
                               "its %zu events place their ids differently (perf requires "
                               "PERF_SAMPLE_IDENTIFIER then)",
                               f->nattrs);
        if (f->id_pos < 0)
            return pd_bad_file(d, f->name, "%zu events, but samples carry no id to tell them apart",
                               f->nattrs);
    }
    return 0;
}

/* The attributes section: nattrs entries of attr_size bytes, each the
 * attribute and the section of its ids; both inside prefix (the bytes
 * from base to the data section). */
static int read_attrs(struct pd_file *f, const uint8_t *prefix, uint64_t base, uint64_t plen,
                      uint64_t attr_size, uint64_t off, uint64_t size, struct ember_diag *d)
{
    if (size == 0)
        return pd_bad_file(d, f->name, "no events (the attributes section is empty)");
    if (attr_size < PERF_ATTR_SIZE_VER0 + 16 || attr_size > MAX_ATTR_SIZE)
        return pd_bad_file(d, f->name, "attribute size %llu (expected %d to %d bytes)",
                           (unsigned long long)attr_size, PERF_ATTR_SIZE_VER0 + 16, MAX_ATTR_SIZE);
    if (size % attr_size)
        return pd_bad_file(d, f->name,
                           "the attributes section (%llu bytes) is not a whole number of "
                           "%llu-byte attributes",
                           (unsigned long long)size, (unsigned long long)attr_size);
    if (off < base || off - base > plen || size > plen - (off - base))
        return pd_bad_file(d, f->name,
                           "the attributes section at offset %llu (%llu bytes) is not between the "
                           "header and the data section at offset %llu",
                           (unsigned long long)off, (unsigned long long)size,
                           (unsigned long long)(base + plen));
    for (uint64_t at = off - base; at < off - base + size; at += attr_size) {
        struct pd_attr *a;
        int err = add_attr(f, prefix + at, attr_size - 16, &a);
        if (err == -E2BIG)
            return pd_bad_file(d, f->name, "more than %d events", MAX_ATTRS);
        if (err)
            return err;
        uint64_t ioff = pd_u64(prefix + at + attr_size - 16);
        uint64_t isize = pd_u64(prefix + at + attr_size - 8);
        if (isize % 8 ||
            (isize && (ioff < base || ioff - base > plen || isize > plen - (ioff - base))))
            return pd_bad_file(d, f->name,
                               "event %zu's ids at offset %llu (%llu bytes) are not between the "
                               "header and the data section",
                               f->nattrs, (unsigned long long)ioff, (unsigned long long)isize);
        if (isize && (err = add_ids(f, f->nattrs - 1, prefix + (ioff - base), isize / 8)) < 0)
            return err;
    }
    return settle_layout(f, d);
}

int pd_file_read_header(struct pd_file *f, struct pd_stream *s, struct ember_diag *d)
{
    const uint8_t *h;
    int err = pd_stream_read(s, PD_PIPE_HEADER_SIZE, &h, "the perf.data header", d);
    if (err)
        return err;
    if (memcmp(h, PD_MAGIC, PD_MAGIC_LEN) != 0) {
        if (memcmp(h, PD_MAGIC_SWAPPED, PD_MAGIC_LEN) == 0)
            return ember_diag_set(d, -EINVAL, f->name, 0,
                                  "a big-endian perf.data (recorded on another architecture): "
                                  "ember reads little-endian ones");
        return ember_diag_set(
            d, -EINVAL, f->name, 0, "not a perf.data file (expected the magic \"PERFILE2\"%s)",
            memcmp(h, PD_MAGIC_V1, PD_MAGIC_LEN) == 0 ? "; \"PERFFILE\" is perf's first "
                                                        "format, from before 2.6.37"
                                                      : "");
    }
    uint64_t hsize = pd_u64(h + 8);
    if (hsize == PD_PIPE_HEADER_SIZE) {
        f->pipe = true;
        return 0;
    }
    if (hsize < PD_HEADER_SIZE || hsize > MAX_ATTR_SIZE)
        return pd_bad_file(d, f->name, "header size %llu (expected %d)", (unsigned long long)hsize,
                           PD_HEADER_SIZE);
    if ((err = pd_stream_read(s, hsize - PD_PIPE_HEADER_SIZE, &h, "the perf.data header", d)))
        return err;
    h -= PD_PIPE_HEADER_SIZE; /* offsets below are the header's */
    uint64_t attr_size = pd_u64(h + 16), aoff = pd_u64(h + 24), asize = pd_u64(h + 32);
    f->data_offset = pd_u64(h + 40);
    f->data_size = pd_u64(h + 48);
    memcpy(f->features, h + 72, sizeof(f->features));
    if (f->data_offset < hsize || f->data_offset - hsize > MAX_PREFIX)
        return pd_bad_file(d, f->name,
                           "data section at offset %llu (expected after the %llu-byte "
                           "header, within 256 MiB)",
                           (unsigned long long)f->data_offset, (unsigned long long)hsize);
    /* what lies before the data: the attributes and their ids */
    const uint8_t *prefix;
    uint64_t plen = f->data_offset - hsize;
    if ((err = pd_stream_read(s, plen, &prefix, "the attributes before the data section", d)))
        return err;
    return read_attrs(f, prefix, hsize, plen, attr_size, aoff, asize, d);
}

/* ---- records ------------------------------------------------------------ */

int pd_file_next_record(struct pd_file *f, struct pd_stream *s, struct pd_record *r,
                        struct ember_diag *d)
{
    if (!f->pipe && s->offset - f->data_offset >= f->data_size)
        return 1;
    const uint8_t *h;
    if (f->pipe) { /* a pipe ends between records */
        int end = pd_stream_at_end(s, d);
        if (end)
            return end;
    }
    int err = pd_stream_peek(s, 8, &h, "a record's header", d);
    if (err)
        return err;
    r->type = pd_u32(h);
    r->misc = pd_u16(h + 4);
    r->size = pd_u16(h + 6);
    r->offset = s->offset;
    r->chunk1 = 0; /* delivered at once: not held */
    r->data = NULL;
    if (r->size < 8)
        return pd_corrupt(d, f->name, r, "its size is less than its 8-byte header");
    if (!f->pipe && r->size > f->data_size - (s->offset - f->data_offset))
        return pd_corrupt(d, f->name, r, "it runs past the data section's end at offset %llu",
                          (unsigned long long)(f->data_offset + f->data_size));
    char inside[64] = ""; /* named only where it may be needed: a cut record */
    if (!pd_stream_has(s, r->size))
        snprintf(inside, sizeof(inside), "the %s record", pd_record_name(r->type));
    err = pd_stream_read(s, r->size, &r->data, inside, d);
    if (err)
        return err;
    /* AUXTRACE data and pipe-mode tracing data follow their record */
    if (r->type == PD_RECORD_AUXTRACE && r->size >= 16)
        return pd_stream_skip(s, pd_u64(r->data + 8), "AUXTRACE data", d);
    if (r->type == PD_RECORD_HEADER_TRACING_DATA && f->pipe && r->size >= 12)
        return pd_stream_skip(s, pd_u32(r->data + 8), "tracing data", d);
    return 0;
}

int pd_file_user_record(struct pd_file *f, const struct pd_record *r, struct ember_diag *d)
{
    const uint8_t *p = r->data;
    size_t used;
    switch (r->type) {
    case PD_RECORD_HEADER_ATTR: {
        /* the attribute, then its ids to the end of the record */
        uint32_t asz = r->size >= 16 ? pd_u32(p + 12) : 0;
        if (asz < PERF_ATTR_SIZE_VER0 || asz > r->size - 8 || (r->size - 8 - asz) % 8)
            return pd_corrupt(d, f->name, r, "an attribute of %u bytes", asz);
        struct pd_attr *a;
        int err = add_attr(f, p + 8, asz, &a);
        if (err == -E2BIG)
            return pd_corrupt(d, f->name, r, "more than %d events", MAX_ATTRS);
        if (!err)
            err = add_ids(f, f->nattrs - 1, p + 8 + asz, (r->size - 8 - asz) / 8);
        return err ? err : settle_layout(f, d);
    }
    case PD_RECORD_HEADER_BUILD_ID: {
        int err = pd_file_build_id_entry(f, p, r->size, &used);
        return err == -EINVAL ? pd_corrupt(d, f->name, r, "a broken build-id entry") : err;
    }
    case PD_RECORD_HEADER_FEATURE:
        if (r->size < 16)
            return pd_corrupt(d, f->name, r, "no feature number");
        return pd_u64(p + 8) >= PD_FEAT_BITS
                   ? 0
                   : pd_file_feature(f, (unsigned)pd_u64(p + 8), p + 16, r->size - 16, d);
    case PD_RECORD_EVENT_UPDATE: {
        enum { UPDATE_NAME = 1 };
        if (r->size < 24 || pd_u64(p + 8) != UPDATE_NAME)
            return 0;
        uint64_t id = pd_u64(p + 16);
        uint32_t attr;
        if (f->ids.slots && ember_u64map_get(&f->ids, id, &attr))
            snprintf(f->attrs[attr].name, sizeof(f->attrs[attr].name), "%.*s",
                     (int)strnlen((const char *)p + 24, r->size - 24), (const char *)p + 24);
        return 0;
    }
    case PD_RECORD_COMPRESSED:
        return pd_corrupt(d, f->name, r,
                          "compressed records (perf record -z): ember does not read them; "
                          "`perf inject -i FILE -o PLAIN` writes them uncompressed");
    default:
        return 0;
    }
}

/* The id of a record: samples at id_pos from the start, others (with
 * sample_id_all) at is_pos from the end. */
static bool record_id(const struct pd_file *f, const struct pd_record *r, uint64_t *id)
{
    size_t words = (r->size - 8) / 8;
    if (r->type == PERF_RECORD_SAMPLE) {
        if (f->id_pos < 0 || (size_t)f->id_pos >= words)
            return false;
        *id = pd_u64(r->data + 8 + 8 * (size_t)f->id_pos);
        return true;
    }
    if (f->is_pos < 0 || (size_t)f->is_pos > words || !f->attrs[0].sample_id_all)
        return false;
    *id = pd_u64(r->data + 8 + 8 * (words - (size_t)f->is_pos));
    return true;
}

int pd_file_attr_of(const struct pd_file *f, const struct pd_record *r)
{
    uint64_t id;
    uint32_t attr;
    if (f->nattrs == 0)
        return -1;
    if (f->nattrs == 1 || !record_id(f, r, &id))
        return f->nattrs == 1 || r->type != PERF_RECORD_SAMPLE ? 0 : -1;
    if (id == 0) /* perf's synthesized records */
        return 0;
    return f->ids.slots && ember_u64map_get(&f->ids, id, &attr) ? (int)attr : -1;
}

uint64_t pd_file_time_of(const struct pd_file *f, const struct pd_record *r)
{
    int ai = pd_file_attr_of(f, r);
    if (ai < 0)
        return 0;
    const struct pd_attr *a = &f->attrs[ai];
    uint64_t t = a->sample_type;
    if (!(t & PERF_SAMPLE_TIME))
        return 0;
    size_t words = (r->size - 8) / 8, k;
    if (r->type == PERF_RECORD_SAMPLE) {
        k = !!(t & PERF_SAMPLE_IDENTIFIER) + !!(t & PERF_SAMPLE_IP) + !!(t & PERF_SAMPLE_TID);
        return k < words ? pd_u64(r->data + 8 + 8 * k) : 0;
    }
    if (!a->sample_id_all)
        return 0;
    /* the trailer, from the end: IDENTIFIER, CPU, STREAM_ID, ID, TIME */
    k = 1 + !!(t & PERF_SAMPLE_IDENTIFIER) + !!(t & PERF_SAMPLE_CPU) +
        !!(t & PERF_SAMPLE_STREAM_ID) + !!(t & PERF_SAMPLE_ID);
    return k <= words ? pd_u64(r->data + 8 + 8 * (words - k)) : 0;
}

bool pd_file_tid_of(const struct pd_file *f, const struct pd_record *r, uint32_t *pid,
                    uint32_t *tid)
{
    int ai = pd_file_attr_of(f, r);
    if (ai < 0 || r->type == PERF_RECORD_SAMPLE || !f->attrs[ai].sample_id_all)
        return false;
    uint64_t t = f->attrs[ai].sample_type;
    if (!(t & PERF_SAMPLE_TID))
        return false;
    /* the trailer, from the end: IDENTIFIER, CPU, STREAM_ID, ID, TIME, TID */
    size_t words = (r->size - 8) / 8;
    size_t k = 1 + !!(t & PERF_SAMPLE_IDENTIFIER) + !!(t & PERF_SAMPLE_CPU) +
               !!(t & PERF_SAMPLE_STREAM_ID) + !!(t & PERF_SAMPLE_ID) + !!(t & PERF_SAMPLE_TIME);
    if (k > words)
        return false;
    const uint8_t *p = r->data + 8 + 8 * (words - k);
    *pid = pd_u32(p);
    *tid = pd_u32(p + 4);
    return true;
}
