/*
 * pprof.c - pprof's profile.proto as input: .pb, or .pb.gz (ember_input has
 * already un-gzipped it).
 *
 * The message is read whole (a protobuf message cannot be decoded in pieces
 * without knowing where its fields end) and decoded by protobuf-c, with the
 * code generated from proto/profile.proto. Then:
 * - each Location becomes a chain of frames, outermost caller first: its
 *   Lines are an inline chain whose last entry is the caller;
 * - each Sample's location_id list (leaf first) is walked backwards, so that
 *   stacks go root to leaf, and its value of the chosen sample type is
 *   added exactly (an int64; scaled back when ember wrote the file from a
 *   profile with decimals, which its comment says);
 * - a Function's system_name is kept, a Location's is_folded, and the
 *   first Mapping is the main program's;
 * - the Profile's meta (period, times, comments, frame filters, doc_url)
 *   and each Sample's labels go to the model too (pprof_meta.c), for the
 *   writer to give back;
 * - every string index and id is checked before use: a bad file is an error
 *   naming what was expected, never a crash.
 * When protobuf-c refuses the bytes, a walk of the wire format guided by the
 * generated descriptors says where and why (cut short, wrong wire type);
 * pprof_wire.c says which cuts can be told.
 */
#include "read/read_impl.h"
#include "base/chunk.h"
#include "read/pprof_meta.h"
#include "read/pprof_wire.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Line pb_line;

/* ---- ids: Location and Function ids to their index ---------------------- */

struct id_entry {
    uint64_t id;
    uint32_t index;
};

/* Files number their ids 1..n in order (Go does), which needs no table;
 * other files are looked up in a sorted copy. */
struct id_map {
    bool dense;
    struct id_entry *sorted;
    size_t n;
};

static int id_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct id_entry *)a)->id, y = ((const struct id_entry *)b)->id;
    return x < y ? -1 : x > y;
}

/* Fills m from ids[i] (n entries); returns the id that is 0 or repeated in
 * *bad (and -EINVAL), or -ENOMEM. */
static int id_map_build(struct id_map *m, const uint64_t *ids, size_t n, uint64_t *bad)
{
    m->n = n;
    m->dense = true;
    for (size_t i = 0; i < n && m->dense; i++)
        m->dense = ids[i] == i + 1;
    if (m->dense)
        return 0;
    m->sorted = malloc((n ? n : 1) * sizeof(*m->sorted));
    if (!m->sorted)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        m->sorted[i] = (struct id_entry){ids[i], (uint32_t)i};
    qsort(m->sorted, n, sizeof(*m->sorted), id_cmp);
    for (size_t i = 0; i < n; i++)
        if (m->sorted[i].id == 0 || (i && m->sorted[i].id == m->sorted[i - 1].id)) {
            *bad = m->sorted[i].id;
            return -EINVAL;
        }
    return 0;
}

/* The index of id, or false when no entry has it. */
static bool id_map_find(const struct id_map *m, uint64_t id, uint32_t *index)
{
    if (m->dense) {
        if (id == 0 || id > m->n)
            return false;
        *index = (uint32_t)(id - 1);
        return true;
    }
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->sorted[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == m->n || m->sorted[lo].id != id)
        return false;
    *index = m->sorted[lo].index;
    return true;
}

/* ---- the reader ---------------------------------------------------------- */

struct pprof_reader {
    struct ember_profile *p;
    const pb_profile *pb;
    const struct ember_read_opts *o;
    struct ember_read_stats *st;
    const char *file;
    struct ember_diag *d;
    size_t value;                    /* which of a sample's values is shown */
    unsigned vmap[EMBER_MAX_VALUES]; /* each sample type's value in the profile */
    unsigned digits;                 /* values are in units of 10^-digits */
    struct id_map locs, funcs, maps;
    uint32_t *modules; /* each mapping's module */
    /* location i's frames, outermost caller first: frames[first[i] .. first[i + 1]) */
    uint32_t *first, *frames;
    size_t nframes, fcap;
};

static int bad(struct pprof_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(struct pprof_reader *r, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ember_diag_set(r->d, -EINVAL, r->file, 0, "not a valid pprof profile: %s", msg);
}

/* String idx of the table; what names the field for the message. */
static int str_at(struct pprof_reader *r, int64_t idx, const char *what, const char **s,
                  size_t *len)
{
    size_t n = r->pb->n_string_table;
    if (idx < 0 || (uint64_t)idx >= n)
        return bad(r,
                   "%s is string %" PRId64 ", but string_table has %zu entries (expected an "
                   "index from 0 to %zu)",
                   what, idx, n, n ? n - 1 : 0);
    const ProtobufCBinaryData *b = &r->pb->string_table[idx];
    *s = b->data ? (const char *)b->data : "";
    *len = b->len;
    return 0;
}

static bool str_ok(const struct pprof_reader *r, int64_t idx)
{
    return idx >= 0 && (uint64_t)idx < r->pb->n_string_table;
}

static bool str_is(struct pprof_reader *r, int64_t idx, const char *want)
{
    const char *s;
    size_t len;
    return str_ok(r, idx) && str_at(r, idx, "", &s, &len) == 0 && len == strlen(want) &&
           memcmp(s, want, len) == 0;
}

/* Strings a and b are the same (a string table may repeat a string). */
static bool str_eq(struct pprof_reader *r, int64_t a, int64_t b)
{
    const ProtobufCBinaryData *t = r->pb->string_table;
    return str_ok(r, a) && str_ok(r, b) && t[a].len == t[b].len &&
           (t[a].len == 0 || memcmp(t[a].data, t[b].data, t[a].len) == 0);
}

/* A length for "%.*s" in messages: short, and never a negative int. */
static size_t cut(size_t len)
{
    return len < 60 ? len : 60;
}

/* "cpu/nanoseconds, samples/count": the sample types, for messages. */
static void list_types(struct pprof_reader *r, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->pb->n_sample_type && at < size; i++) {
        const char *t = "?", *u = "?";
        size_t tl = 1, ul = 1;
        const Perftools__Profiles__ValueType *vt = r->pb->sample_type[i];
        if (str_ok(r, vt->type) && str_ok(r, vt->unit)) {
            str_at(r, vt->type, "", &t, &tl);
            str_at(r, vt->unit, "", &u, &ul);
        }
        int k = snprintf(buf + at, size - at, "%s%.*s/%.*s", i ? ", " : "", (int)cut(tl), t,
                         (int)cut(ul), u);
        at += k > 0 ? (size_t)k : 0;
    }
}

/* Every sample type is a value of the profile, in order. */
static int declare_values(struct pprof_reader *r)
{
    size_t n = r->pb->n_sample_type;
    if (n > EMBER_MAX_VALUES)
        return bad(r, "it has %zu sample types; ember keeps %d at most", n, EMBER_MAX_VALUES);
    for (size_t i = 0; i < n; i++) {
        const Perftools__Profiles__ValueType *vt = r->pb->sample_type[i];
        const char *t, *u;
        size_t tl, ul;
        int err = str_at(r, vt->type, "sample_type.type", &t, &tl);
        if (!err)
            err = str_at(r, vt->unit, "sample_type.unit", &u, &ul);
        if (err)
            return err;
        char type[EMBER_UNIT_MAX], unit[EMBER_UNIT_MAX];
        snprintf(type, sizeof(type), "%.*s", (int)(tl < sizeof(type) ? tl : sizeof(type) - 1), t);
        snprintf(unit, sizeof(unit), "%.*s", (int)(ul < sizeof(unit) ? ul : sizeof(unit) - 1), u);
        err = ember_profile_value(r->p, type, unit, &r->vmap[i]);
        if (err)
            return err == -ENOSPC ? bad(r, "more than %d distinct sample types", EMBER_MAX_VALUES)
                                  : err;
    }
    ember_profile_select_index(r->p, r->vmap[r->value]);
    return 0;
}

/* The sample type to show: as asked (a name or an index), else
 * default_sample_type when it names one, else the last, as pprof does. */
static int pick_sample_type(struct pprof_reader *r)
{
    size_t n = r->pb->n_sample_type;
    const char *want = r->o->value;
    char types[300];
    if (n == 0)
        return r->pb->n_sample ? bad(r, "it has samples but no sample_type (expected at least one "
                                        "ValueType saying what the values measure)")
                               : 0;
    r->value = n - 1;
    if (want && want[0] >= '0' && want[0] <= '9' && strspn(want, "0123456789") == strlen(want)) {
        r->value = strtoul(want, NULL, 10);
        list_types(r, types, sizeof(types));
        if (r->value >= n)
            return ember_diag_set(r->d, -EINVAL, r->file, 0,
                                  "no sample type %s: the profile has %zu (%s), from 0", want, n,
                                  types);
    } else if (want || r->pb->default_sample_type) {
        size_t i = 0;
        while (i < n &&
               !(want ? str_is(r, r->pb->sample_type[i]->type, want)
                      : str_eq(r, r->pb->sample_type[i]->type, r->pb->default_sample_type)))
            i++;
        list_types(r, types, sizeof(types));
        if (i == n && want)
            return ember_diag_set(r->d, -EINVAL, r->file, 0,
                                  "no sample type '%s' in the profile (it has %s)", want, types);
        if (i < n)
            r->value = i;
    }
    return declare_values(r);
}

/* ember writes weights with decimals as integers, and says so in a
 * comment: "ember: values are in units of 10^-N". */
static void find_decimals(struct pprof_reader *r)
{
    static const char tag[] = EMBER_PPROF_DECIMALS_COMMENT;
    for (size_t i = 0; i < r->pb->n_comment; i++) {
        const char *s;
        size_t len;
        if (str_at(r, r->pb->comment[i], "comment", &s, &len) == 0 && len == sizeof(tag) &&
            memcmp(s, tag, sizeof(tag) - 1) == 0 && s[len - 1] >= '1' &&
            s[len - 1] <= '0' + EMBER_MAX_DECIMALS)
            r->digits = (unsigned)(s[len - 1] - '0');
    }
}

static int build_ids(struct pprof_reader *r)
{
    const pb_profile *pb = r->pb;
    size_t n = pb->n_location > pb->n_function ? pb->n_location : pb->n_function;
    uint64_t *ids = malloc((n ? n : 1) * sizeof(*ids)), badid = 0;
    if (!ids)
        return -ENOMEM;
    for (size_t i = 0; i < pb->n_location; i++)
        ids[i] = pb->location[i]->id;
    int err = id_map_build(&r->locs, ids, pb->n_location, &badid);
    const char *what = "location";
    if (!err) {
        for (size_t i = 0; i < pb->n_function; i++)
            ids[i] = pb->function[i]->id;
        err = id_map_build(&r->funcs, ids, pb->n_function, &badid);
        what = "function";
    }
    free(ids);
    if (err == -EINVAL)
        return badid ? bad(r, "two %ss have id %" PRIu64 " (expected unique ids)", what, badid)
                     : bad(r, "a %s has id 0 (expected a non-zero id)", what);
    return err;
}

/* A Line's frame: its function's name (else its mangled name), file and
 * start line, the line itself, and the location's address and mapping;
 * every line but the location's last is inlined into the one after it. */
static int line_frame(struct pprof_reader *r, const pb_location *loc, size_t j,
                      struct ember_frame *fr)
{
    const pb_line *ln = loc->line[j];
    uint32_t fi;
    if (!id_map_find(&r->funcs, ln->function_id, &fi))
        return bad(r,
                   "location %" PRIu64 " refers to function id %" PRIu64
                   ", which no function has (%zu functions)",
                   loc->id, ln->function_id, r->pb->n_function);
    const pb_function *f = r->pb->function[fi];
    int err = str_at(r, f->name, "function.name", &fr->name, &fr->name_len);
    if (!err && fr->name_len == 0) /* no name, or a name that is "": both stay "" */
        err = str_at(r, f->system_name, "function.system_name", &fr->name, &fr->name_len);
    if (!err) /* the system name, when there is one */
        err = str_at(r, f->system_name, "function.system_name", &fr->system_name,
                     &fr->system_name_len);
    if (!err && fr->system_name_len == 0)
        fr->system_name = NULL;
    if (!err)
        err = str_at(r, f->filename, "function.filename", &fr->file, &fr->file_len);
    if (err)
        return err;
    if (fr->file_len == 0)
        fr->file = NULL;
    fr->line = ln->line > 0 && ln->line <= UINT32_MAX ? (uint32_t)ln->line : 0;
    fr->column = ln->column > 0 && ln->column <= UINT32_MAX ? (uint32_t)ln->column : 0;
    fr->start_line = f->start_line > 0 && f->start_line <= UINT32_MAX ? (uint32_t)f->start_line : 0;
    fr->kind = j + 1 < loc->n_line ? EMBER_FRAME_INLINED : EMBER_FRAME_USER;
    return 0;
}

/* The module of a location's mapping (EMBER_NO_MODULE for none). */
static int location_module(struct pprof_reader *r, const pb_location *loc, uint32_t *module)
{
    *module = EMBER_NO_MODULE;
    if (!loc->mapping_id)
        return 0;
    uint32_t mi;
    if (!id_map_find(&r->maps, loc->mapping_id, &mi))
        return bad(r,
                   "location %" PRIu64 " refers to mapping id %" PRIu64
                   ", which no mapping has (%zu mappings)",
                   loc->id, loc->mapping_id, r->pb->n_mapping);
    *module = r->modules[mi];
    return 0;
}

static int push_frame(struct pprof_reader *r, uint32_t frame)
{
    if (EMBER_VEC_RESERVE(r->frames, r->fcap, r->nframes + 1) < 0)
        return -ENOMEM;
    r->frames[r->nframes++] = frame;
    return 0;
}

/* A location's frames, outermost first; one without lines (not
 * symbolized) is its address. */
static int location_frames(struct pprof_reader *r, const pb_location *loc)
{
    struct ember_frame fr = {.kind = EMBER_FRAME_USER, .folded = loc->is_folded};
    int err = location_module(r, loc, &fr.module);
    fr.address = loc->address;
    fr.has_address = loc->address != 0;
    uint32_t frame;
    if (!err && loc->n_line == 0) {
        char addr[24];
        int n = snprintf(addr, sizeof(addr), "0x%" PRIx64, loc->address);
        fr.name = addr;
        fr.name_len = (size_t)n;
        err = ember_profile_intern_frame(r->p, &fr, &frame);
        return err ? err : push_frame(r, frame);
    }
    for (size_t j = loc->n_line; j-- > 0 && !err;) {
        err = line_frame(r, loc, j, &fr);
        if (!err)
            err = ember_profile_intern_frame(r->p, &fr, &frame);
        if (!err)
            err = push_frame(r, frame);
    }
    return err;
}

/* Each Mapping as a module of the profile. */
static int build_modules(struct pprof_reader *r)
{
    const pb_profile *pb = r->pb;
    uint64_t *ids = malloc((pb->n_mapping ? pb->n_mapping : 1) * sizeof(*ids)), badid = 0;
    r->modules = malloc((pb->n_mapping ? pb->n_mapping : 1) * sizeof(*r->modules));
    if (!ids || !r->modules) {
        free(ids);
        return -ENOMEM;
    }
    for (size_t i = 0; i < pb->n_mapping; i++)
        ids[i] = pb->mapping[i]->id;
    int err = id_map_build(&r->maps, ids, pb->n_mapping, &badid);
    free(ids);
    if (err == -EINVAL)
        return badid ? bad(r, "two mappings have id %" PRIu64 " (expected unique ids)", badid)
                     : bad(r, "a mapping has id 0 (expected a non-zero id)");
    for (size_t i = 0; i < pb->n_mapping && !err; i++) {
        const Perftools__Profiles__Mapping *m = pb->mapping[i];
        const char *path, *bid;
        size_t pl, bl;
        err = str_at(r, m->filename, "mapping.filename", &path, &pl);
        if (!err)
            err = str_at(r, m->build_id, "mapping.build_id", &bid, &bl);
        if (err)
            break;
        char *p0 = strndup(path, pl), *b0 = strndup(bid, bl);
        struct ember_module mod = {
            .path = p0 && pl ? p0 : NULL,
            .build_id = b0 && bl ? b0 : NULL,
            .start = m->memory_start,
            .limit = m->memory_limit,
            .offset = m->file_offset,
            .flags = (m->has_functions ? EMBER_MODULE_FUNCTIONS : 0) |
                     (m->has_filenames ? EMBER_MODULE_FILES : 0) |
                     (m->has_line_numbers ? EMBER_MODULE_LINES : 0) |
                     (m->has_inline_frames ? EMBER_MODULE_INLINES : 0),
        };
        err = p0 && b0 ? ember_profile_module(r->p, &mod, &r->modules[i]) : -ENOMEM;
        free(p0);
        free(b0);
    }
    if (!err && pb->n_mapping) /* pprof's main binary: the first mapping */
        ember_profile_set_main_module(r->p, r->modules[0]);
    return err;
}

static int build_locations(struct pprof_reader *r)
{
    size_t n = r->pb->n_location;
    r->first = malloc((n + 1) * sizeof(*r->first));
    if (!r->first)
        return -ENOMEM;
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        r->first[i] = (uint32_t)r->nframes;
        err = location_frames(r, r->pb->location[i]);
        if (!err && r->nframes > UINT32_MAX)
            err = -ERANGE;
    }
    r->first[n] = (uint32_t)r->nframes;
    return err;
}

static int add_sample(struct pprof_reader *r, size_t k, const pb_sample *s)
{
    size_t want = r->pb->n_sample_type;
    if (s->n_value != want)
        return bad(r, "sample[%zu] has %zu values, expected %zu (one per sample_type)", k,
                   s->n_value, want);
    bool any = false;
    for (size_t i = 0; i < want; i++)
        any |= s->value[i] != 0;
    if (!any)
        return 0;
    uint32_t node = EMBER_ROOT;
    for (size_t i = s->n_location_id; i-- > 0;) {
        uint32_t li;
        if (!id_map_find(&r->locs, s->location_id[i], &li))
            return bad(r,
                       "sample[%zu] refers to location id %" PRIu64
                       ", which no location has (%zu locations)",
                       k, s->location_id[i], r->pb->n_location);
        for (uint32_t f = r->first[li]; f < r->first[li + 1]; f++) {
            int err = ember_profile_child(r->p, node, r->frames[f], &node);
            if (err)
                return err;
        }
    }
    if (node == EMBER_ROOT) {
        /* a sample without locations still counts in pprof's total: kept
         * visibly, not dropped */
        uint32_t none;
        int err = ember_profile_intern(r->p, "[no stack]", 10, &none);
        if (!err)
            err = ember_profile_child(r->p, EMBER_ROOT, none, &node);
        if (err)
            return err;
    }
    int err = 0;
    for (size_t i = 0; i < want && !err; i++)
        if (s->value[i])
            err = ember_profile_add_decimal(r->p, node, r->vmap[i],
                                            (struct ember_decimal){s->value[i], r->digits});
    if (!err)
        err = ember_pprof_read_labels(r->p, r->pb, k, node, r->vmap, r->digits, r->file, r->d);
    if (err == -ERANGE)
        return ember_diag_set(r->d, err, r->file, 0, "sample values overflow a 64-bit total");
    if (!err)
        r->st->samples++;
    return err;
}

static int convert(struct pprof_reader *r)
{
    const pb_profile *pb = r->pb;
    if (pb->n_string_table == 0 && pb->n_sample == 0)
        return 0; /* empty: "no stacks" is the caller's to say */
    if (pb->n_string_table == 0 || pb->string_table[0].len != 0)
        return bad(r, "string_table[0] must be the empty string");
    int err = pick_sample_type(r);
    if (!err)
        err = build_ids(r);
    if (!err)
        err = build_modules(r);
    if (!err)
        err = build_locations(r);
    if (!err)
        err = ember_pprof_read_meta(r->p, pb, r->file, r->d);
    find_decimals(r);
    for (size_t k = 0; k < pb->n_sample && !err; k++)
        err = add_sample(r, k, pb->sample[k]);
    return err;
}

/* The whole (decompressed) input in one buffer, read in chunks cut
 * anywhere: binary has no lines. */
static int slurp(struct ember_input *in, const struct ember_read_opts *o, uint8_t **buf,
                 size_t *len, struct ember_diag *d)
{
    struct ember_chunk c = {0};
    size_t cap = 0;
    int err;
    *buf = NULL;
    *len = 0;
    while ((err = ember_input_read_chunk(in, &c, EMBER_CUT_BYTES, d)) > 0) {
        if (EMBER_VEC_RESERVE(*buf, cap, *len + c.len) < 0) {
            err = -ENOMEM;
            break;
        }
        memcpy(*buf + *len, c.data, c.len);
        *len += c.len;
        if (o->progress)
            o->progress(o->progress_ctx, in);
    }
    ember_chunk_release(&c);
    return err;
}

static int pprof_read(struct ember_profile *p, struct ember_input *in,
                      const struct ember_read_opts *o, struct ember_read_stats *st,
                      struct ember_diag *d)
{
    struct pprof_reader r = {.p = p, .o = o, .st = st, .file = ember_input_name(in), .d = d};
    uint8_t *buf;
    size_t len;
    int err = slurp(in, o, &buf, &len, d);
    if (!err) {
        r.pb = perftools__profiles__profile__unpack(NULL, len, buf);
        if (!r.pb) {
            char why[400];
            if (ember_pprof_wire_explain(buf, len, why, sizeof(why)))
                err = ember_diag_set(d, -EINVAL, r.file, 0, "%s", why);
            else
                err = ember_diag_set(d, -EINVAL, r.file, 0, "not a valid pprof profile: %s", why);
        }
    }
    if (r.pb)
        err = convert(&r);
    if (r.pb)
        perftools__profiles__profile__free_unpacked((pb_profile *)r.pb, NULL);
    free(buf);
    free(r.locs.sorted);
    free(r.funcs.sorted);
    free(r.maps.sorted);
    free(r.modules);
    free(r.first);
    free(r.frames);
    return err;
}

const struct ember_format ember_format_pprof = {
    .name = "pprof",
    .description = "pprof's protobuf profile (.pb, .pb.gz; Go, gperftools, many profilers)",
    .probe = ember_pprof_wire_probe,
    .read = pprof_read,
};
