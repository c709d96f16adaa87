/*
 * pprof_write.c - a profile as pprof's profile.proto, gzipped (what go tool
 * pprof, speedscope and pprof's web UI open).
 *
 * Protobuf merges concatenated messages (repeated fields append, scalars
 * set once here), so the file is a sequence of small Profile messages, each
 * packed by protobuf-c and holding a few fields: the sample types, then one
 * message per stack (written as the walk visits it: nothing is kept), then
 * the Function and Location of each frame in use, then the string table.
 * Streaming through zlib, memory stays that of the profile.
 *
 * Numbering (invariants the parts agree on): the frame with dense index i
 * (see ember_used_frames) is Function i + 1, and its name is
 * string_table[nfixed + i]; the strings before it are "" and the fixed
 * ones (sample types, units, comment), the strings after it the files and
 * the modules' paths and build-ids (extras). A frame of a name alone is
 * also Location i + 1, in Mapping 1 (the profile itself, "symbolized"). A
 * frame with a record starts a Location of its own numbered after those,
 * with the frames inlined into it at its address (its next frames, of kind
 * inlined, same address and module) as its Lines, innermost first; such
 * Locations are interned as the walk meets them. Module m is Mapping m + 2.
 * Values are the profile's scaled integers; with decimals, a comment says
 * so (EMBER_PPROF_DECIMALS_COMMENT), which ember's reader uses to read
 * them back exactly.
 */
#include "convert_impl.h"
#include "formats/pprof_wire.h"
#include "util/hash.h"
#include "util/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef Perftools__Profiles__Profile pb_profile;

enum { GZ_BUF = 1 << 16, STRINGS_PER_PART = 4096 };

/* protobuf-c's output buffer, compressing into the sink. */
struct gz_out {
    ProtobufCBuffer base;
    z_stream zs;
    const struct ember_sink *sink;
    int err;
    size_t len;
    uint8_t in[GZ_BUF];
    uint8_t out[GZ_BUF];
};

static void gz_deflate(struct gz_out *g, int flush)
{
    g->zs.next_in = g->in;
    g->zs.avail_in = (uInt)g->len;
    do {
        g->zs.next_out = g->out;
        g->zs.avail_out = GZ_BUF;
        int z = deflate(&g->zs, flush);
        if (z == Z_STREAM_ERROR && !g->err)
            g->err = -EIO;
        size_t n = GZ_BUF - g->zs.avail_out;
        if (n && !g->err)
            g->err = g->sink->write(g->sink->ctx, (const char *)g->out, n);
    } while (g->zs.avail_out == 0);
    g->len = 0;
}

static void gz_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    struct gz_out *g = (struct gz_out *)b;
    while (len > 0 && !g->err) {
        size_t k = GZ_BUF - g->len < len ? GZ_BUF - g->len : len;
        memcpy(g->in + g->len, data, k);
        g->len += k;
        data += k;
        len -= k;
        if (g->len == GZ_BUF)
            gz_deflate(g, Z_NO_FLUSH);
    }
}

struct pprof_out {
    struct gz_out *gz;
    const struct ember_profile *p;
    struct ember_used_frames used;
    /* the strings before the frames' names: "", the mapping's name, the
     * values' types and units, the comment */
    ProtobufCBinaryData fixed[2 * EMBER_MAX_VALUES + 4];
    size_t nfixed;
    uint64_t *ids; /* a sample's location ids */
    size_t idcap;
    /* Locations of frames with records: groups of frames, interned */
    uint32_t *grp; /* every group's frames, root-most first, end to end */
    size_t ngrp, gcap;
    struct group {
        uint32_t first, n;
    } * groups;
    size_t ngroups, gcount_cap;
    uint32_t *gslots; /* group index + 1; 0: empty */
    uint32_t gmask;
    /* strings after the names: files, modules' paths and build-ids */
    ProtobufCBinaryData *extra;
    size_t nextra, xcap;
    uint64_t *file_string; /* by dense frame: its file's string, 0 for none */
    size_t self_name;      /* Mapping 1's name: the profile's */
    const char *name;      /* the profile's name (a recorded program's) */
    bool self_used;        /* some Location is in Mapping 1 */
};

static void pack(struct pprof_out *o, const pb_profile *part)
{
    protobuf_c_message_pack_to_buffer(&part->base, &o->gz->base);
}

static size_t fixed_string(struct pprof_out *o, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < o->nfixed; i++)
        if (o->fixed[i].len == n && memcmp(o->fixed[i].data, s, n) == 0)
            return i;
    o->fixed[o->nfixed] = (ProtobufCBinaryData){n, (uint8_t *)s};
    return o->nfixed++;
}

/* Sample types (one per value), the default, the decimals comment; the
 * name of Mapping 1. */
static void put_header(struct pprof_out *o, const char *name, char *comment)
{
    const struct ember_profile *p = o->p;
    Perftools__Profiles__ValueType vt[EMBER_MAX_VALUES], *vtp[EMBER_MAX_VALUES];
    pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
    int64_t comment_idx;
    fixed_string(o, "");
    o->self_name = fixed_string(o, name);
    o->name = name;
    for (unsigned v = 0; v < ember_profile_values(p); v++) {
        perftools__profiles__value_type__init(&vt[v]);
        vt[v].type = (int64_t)fixed_string(o, ember_profile_value_type(p, v));
        vt[v].unit = (int64_t)fixed_string(o, ember_profile_value_unit(p, v));
        vtp[v] = &vt[v];
    }
    part.n_sample_type = ember_profile_values(p);
    part.sample_type = vtp;
    part.default_sample_type = vt[ember_convert_metric(p)].type;
    if (ember_profile_decimals(p)) {
        /* one digit: decimals <= EMBER_MAX_DECIMALS = 9 */
        snprintf(comment, sizeof(EMBER_PPROF_DECIMALS_COMMENT) + 1, "%s%c",
                 EMBER_PPROF_DECIMALS_COMMENT, (char)('0' + ember_profile_decimals(p)));
        comment_idx = (int64_t)fixed_string(o, comment);
        part.n_comment = 1;
        part.comment = &comment_idx;
    }
    pack(o, &part);
}

static uint64_t group_hash(const uint32_t *f, size_t n)
{
    return ember_hash_bytes(f, n * sizeof(*f), n);
}

static int group_grow(struct pprof_out *o)
{
    uint32_t nslots = o->gmask ? (o->gmask + 1) * 2 : 1024;
    uint32_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    for (size_t k = 0; k < o->ngroups; k++) {
        uint32_t i =
            (uint32_t)group_hash(o->grp + o->groups[k].first, o->groups[k].n) & (nslots - 1);
        while (slots[i])
            i = (i + 1) & (nslots - 1);
        slots[i] = (uint32_t)k + 1;
    }
    free(o->gslots);
    o->gslots = slots;
    o->gmask = nslots - 1;
    return 0;
}

/* The Location id of frames f[0..n) (a frame and the calls inlined into
 * it), interned. */
static int group_id(struct pprof_out *o, const uint32_t *f, size_t n, uint64_t *id)
{
    if ((o->ngroups + 1) * 2 > (size_t)o->gmask + 1 && group_grow(o) < 0)
        return -ENOMEM;
    uint32_t i = (uint32_t)group_hash(f, n) & o->gmask;
    for (; o->gslots[i]; i = (i + 1) & o->gmask) {
        const struct group *g = &o->groups[o->gslots[i] - 1];
        if (g->n == n && memcmp(o->grp + g->first, f, n * sizeof(*f)) == 0) {
            *id = o->used.count + o->gslots[i];
            return 0;
        }
    }
    if (EMBER_VEC_RESERVE(o->grp, o->gcap, o->ngrp + n) < 0 ||
        EMBER_VEC_RESERVE(o->groups, o->gcount_cap, o->ngroups + 1) < 0)
        return -ENOMEM;
    memcpy(o->grp + o->ngrp, f, n * sizeof(*f));
    o->groups[o->ngroups] = (struct group){(uint32_t)o->ngrp, (uint32_t)n};
    o->ngrp += n;
    o->gslots[i] = (uint32_t)++o->ngroups;
    *id = o->used.count + o->ngroups;
    return 0;
}

/* Does frame b sit inlined at frame a's address? */
static bool inlined_into(const struct ember_profile *p, uint32_t a, uint32_t b)
{
    if (!ember_profile_frame_detailed(p, b))
        return false;
    struct ember_frame la, lb;
    ember_profile_frame(p, a, &la);
    ember_profile_frame(p, b, &lb);
    return lb.kind == EMBER_FRAME_INLINED && lb.module == la.module && lb.address == la.address &&
           lb.has_address == la.has_address;
}

/* A stack's Location ids, leaf first, into o->ids; their count. */
static int stack_locations(struct pprof_out *o, const uint32_t *path, size_t depth, size_t *n)
{
    const struct ember_profile *p = o->p;
    uint32_t f[256];
    *n = 0;
    for (size_t i = 0; i < depth;) {
        uint32_t fr = ember_profile_node_frame(p, path[i]);
        struct ember_frame rec; /* a frame of a name alone has no module */
        ember_profile_frame(p, fr, &rec);
        if (rec.module == EMBER_NO_MODULE)
            o->self_used = true;
        if (!ember_profile_frame_detailed(p, fr)) {
            o->ids[(*n)++] = o->used.map[fr] + 1u;
            i++;
            continue;
        }
        size_t k = 0;
        f[k++] = fr;
        for (i++; i < depth && k < sizeof(f) / sizeof(f[0]) &&
                  inlined_into(p, fr, ember_profile_node_frame(p, path[i]));
             i++)
            f[k++] = ember_profile_node_frame(p, path[i]);
        int err = group_id(o, f, k, &o->ids[*n]);
        if (err)
            return err;
        (*n)++;
    }
    for (size_t a = 0, b = *n; a + 1 < b; a++, b--) { /* leaf first */
        uint64_t t = o->ids[a];
        o->ids[a] = o->ids[b - 1];
        o->ids[b - 1] = t;
    }
    return 0;
}

static int put_sample(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct pprof_out *o = ctx;
    size_t nids;
    if (EMBER_VEC_RESERVE(o->ids, o->idcap, depth) < 0)
        return -ENOMEM;
    int err = stack_locations(o, path, depth, &nids);
    if (err)
        return err;
    Perftools__Profiles__Sample s = PERFTOOLS__PROFILES__SAMPLE__INIT, *sp = &s;
    s.n_location_id = nids;
    s.location_id = o->ids;
    s.n_value = ember_profile_values(o->p);
    s.value = (int64_t *)self;
    pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
    part.n_sample = 1;
    part.sample = &sp;
    pack(o, &part);
    return o->gz->err;
}

/* The index in string_table of an extra string (after the names). */
static int extra_string(struct pprof_out *o, const char *str, size_t len, uint64_t *index)
{
    if (EMBER_VEC_RESERVE(o->extra, o->xcap, o->nextra + 1) < 0)
        return -ENOMEM;
    o->extra[o->nextra] = (ProtobufCBinaryData){len, (uint8_t *)str};
    *index = o->nfixed + o->used.count + o->nextra++;
    return 0;
}

/* Files' strings, each once (files are interned: equal files are one
 * pointer), for the Functions. */
static int file_strings(struct pprof_out *o)
{
    o->file_string = calloc(o->used.count ? o->used.count : 1, sizeof(*o->file_string));
    if (!o->file_string)
        return -ENOMEM;
    for (uint32_t i = 0; i < o->used.count; i++) {
        struct ember_frame l, e;
        ember_profile_frame(o->p, o->used.frames[i], &l);
        if (!l.file)
            continue;
        uint32_t j = 0; /* an earlier frame of the same file (files are stored once) */
        for (; j < i; j++) {
            ember_profile_frame(o->p, o->used.frames[j], &e);
            if (e.file == l.file)
                break;
        }
        if (j < i) {
            o->file_string[i] = o->file_string[j];
            continue;
        }
        int err = extra_string(o, l.file, l.file_len, &o->file_string[i]);
        if (err)
            return err;
    }
    return 0;
}

/* The module whose file is named as the profile (the program ember record
 * ran), or the first: pprof takes the first mapping for the main binary
 * ("File:" in go tool pprof), not the dynamic loader mapped before it. */
static uint32_t main_module(const struct pprof_out *o)
{
    const struct ember_profile *p = o->p;
    for (uint32_t m = 0; o->name && m < ember_profile_module_count(p); m++) {
        const char *path = ember_profile_module_info(p, m)->path,
                   *base = path ? strrchr(path, '/') : NULL;
        if (path && strcmp(base ? base + 1 : path, o->name) == 0)
            return m;
    }
    return 0;
}

static int put_mapping(struct pprof_out *o, uint32_t m)
{
    const struct ember_module *mod = ember_profile_module_info(o->p, m);
    Perftools__Profiles__Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT, *mapp = &map;
    uint64_t path = 0, bid = 0;
    int err = mod->path ? extra_string(o, mod->path, strlen(mod->path), &path) : 0;
    if (!err && mod->build_id)
        err = extra_string(o, mod->build_id, strlen(mod->build_id), &bid);
    if (err)
        return err;
    map.id = m + 2u;
    map.memory_start = mod->start;
    map.memory_limit = mod->limit;
    map.file_offset = mod->offset;
    map.filename = (int64_t)path;
    map.build_id = (int64_t)bid;
    map.has_functions = (mod->flags & EMBER_MODULE_FUNCTIONS) != 0;
    map.has_filenames = (mod->flags & EMBER_MODULE_FILES) != 0;
    map.has_line_numbers = (mod->flags & EMBER_MODULE_LINES) != 0;
    map.has_inline_frames = (mod->flags & EMBER_MODULE_INLINES) != 0;
    pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
    part.n_mapping = 1;
    part.mapping = &mapp;
    pack(o, &part);
    return 0;
}

/* Mappings 2...: the profile's modules, the main one first; then Mapping 1,
 * the "binary" of locations without a module: named after the profile, and
 * saying that its functions are known (nothing to symbolize). */
static int put_mappings(struct pprof_out *o)
{
    const struct ember_profile *p = o->p;
    uint32_t first = main_module(o);
    int err = ember_profile_module_count(p) ? put_mapping(o, first) : 0;
    for (uint32_t m = 0; m < ember_profile_module_count(p) && !err && !o->gz->err; m++)
        err = m == first ? 0 : put_mapping(o, m);
    if (err)
        return err;
    if (o->self_used || !ember_profile_module_count(p)) {
        Perftools__Profiles__Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT, *mapp = &map;
        map.id = 1;
        map.filename = (int64_t)o->self_name;
        map.has_functions = true;
        pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
        part.n_mapping = 1;
        part.mapping = &mapp;
        pack(o, &part);
    }
    return o->gz->err;
}

/* Function i + 1 for each frame in use; Location i + 1 for those of a name
 * alone. */
static void put_frames(struct pprof_out *o)
{
    for (uint32_t i = 0; i < o->used.count && !o->gz->err; i++) {
        struct ember_frame fl;
        ember_profile_frame(o->p, o->used.frames[i], &fl);
        Perftools__Profiles__Function f = PERFTOOLS__PROFILES__FUNCTION__INIT, *fp = &f;
        Perftools__Profiles__Line l = PERFTOOLS__PROFILES__LINE__INIT, *lp = &l;
        Perftools__Profiles__Location loc = PERFTOOLS__PROFILES__LOCATION__INIT, *locp = &loc;
        f.id = i + 1u;
        f.name = (int64_t)(o->nfixed + i);
        f.filename = (int64_t)o->file_string[i];
        f.start_line = fl.start_line;
        l.function_id = f.id;
        loc.id = f.id;
        loc.mapping_id = 1;
        loc.n_line = 1;
        loc.line = &lp;
        pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
        part.n_function = 1;
        part.function = &fp;
        part.n_location = ember_profile_frame_detailed(o->p, o->used.frames[i]) ? 0 : 1;
        part.location = &locp;
        pack(o, &part);
    }
}

/* The Locations of frames with records: address, mapping, and the lines
 * of the frame and the calls inlined into it, innermost first. */
static int put_groups(struct pprof_out *o)
{
    Perftools__Profiles__Line lines[256], *lp[256];
    for (size_t k = 0; k < o->ngroups && !o->gz->err; k++) {
        const struct group *g = &o->groups[k];
        const uint32_t *f = o->grp + g->first;
        struct ember_frame base;
        ember_profile_frame(o->p, f[0], &base);
        Perftools__Profiles__Location loc = PERFTOOLS__PROFILES__LOCATION__INIT, *locp = &loc;
        loc.id = o->used.count + k + 1;
        loc.mapping_id = base.module == EMBER_NO_MODULE ? 1 : base.module + 2u;
        loc.address = base.address;
        for (uint32_t j = 0; j < g->n; j++) {
            struct ember_frame fl;
            ember_profile_frame(o->p, f[g->n - 1 - j], &fl);
            perftools__profiles__line__init(&lines[j]);
            lines[j].function_id = o->used.map[f[g->n - 1 - j]] + 1u;
            lines[j].line = fl.line;
            lines[j].column = fl.column;
            lp[j] = &lines[j];
        }
        loc.n_line = g->n;
        loc.line = lp;
        pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
        part.n_location = 1;
        part.location = &locp;
        pack(o, &part);
    }
    return o->gz->err;
}

/* A process or thread named "comm-PID/TID" (perf's roots). */
static bool spelled_task(const struct ember_frame *fr)
{
    return fr->kind_in_name && (fr->kind == EMBER_FRAME_PROCESS || fr->kind == EMBER_FRAME_THREAD);
}

static bool is_task(const struct ember_profile *p, uint32_t frame)
{
    struct ember_frame fr;
    ember_profile_frame(p, frame, &fr);
    return spelled_task(&fr);
}

/* A frame's function name: its own, a process's or thread's as
 * "comm-PID/TID" (a copy, freed once packed), which pprof has no other
 * place for. */
static int frame_string(struct pprof_out *o, uint32_t frame, ProtobufCBinaryData *out)
{
    struct ember_frame fr;
    ember_profile_frame(o->p, frame, &fr);
    if (!spelled_task(&fr)) {
        *out = (ProtobufCBinaryData){fr.name_len, (uint8_t *)fr.name};
        return 0;
    }
    size_t n = ember_frame_spell(&fr, NULL, 0);
    char *buf = malloc(n + 1);
    *out = (ProtobufCBinaryData){n, (uint8_t *)buf};
    if (!buf)
        return -ENOMEM;
    ember_frame_spell(&fr, buf, n + 1);
    return 0;
}

/* The string table: the fixed strings, then the frames' names in dense
 * order, a few thousand per message. */
static int put_strings(struct pprof_out *o)
{
    ProtobufCBinaryData *batch = malloc(STRINGS_PER_PART * sizeof(*batch));
    if (!batch)
        return -ENOMEM;
    pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
    part.n_string_table = o->nfixed;
    part.string_table = o->fixed;
    pack(o, &part);
    int err = 0;
    for (uint32_t i = 0; i < o->used.count && !o->gz->err && !err;) {
        size_t n = 0;
        for (; n < STRINGS_PER_PART && i < o->used.count && !err; n++, i++)
            err = frame_string(o, o->used.frames[i], &batch[n]);
        part.n_string_table = n;
        part.string_table = batch;
        if (!err)
            pack(o, &part);
        for (size_t k = 0; k < n; k++)
            if (batch[k].data && is_task(o->p, o->used.frames[i - n + k]))
                free(batch[k].data);
    }
    free(batch);
    if (err)
        return err;
    part.n_string_table = o->nextra;
    part.string_table = o->extra;
    if (o->nextra)
        pack(o, &part);
    return o->gz->err;
}

static int write_all(struct pprof_out *o, const char *name)
{
    char comment[sizeof(EMBER_PPROF_DECIMALS_COMMENT) + 8];
    put_header(o, name, comment);
    int err = group_grow(o);
    if (!err)
        err = ember_profile_walk(o->p, put_sample, o);
    if (!err)
        err = file_strings(o);
    if (!err)
        err = put_mappings(o);
    if (!err) {
        put_frames(o);
        err = put_groups(o);
    }
    if (!err)
        err = put_strings(o);
    if (!err) {
        gz_deflate(o->gz, Z_FINISH);
        err = o->gz->err;
    }
    return err;
}

int ember_write_pprof(const struct ember_profile *p, const struct ember_convert_opts *opts,
                      const struct ember_sink *out, struct ember_diag *d)
{
    (void)d;
    struct pprof_out o = {.p = p};
    o.gz = calloc(1, sizeof(*o.gz));
    if (!o.gz)
        return -ENOMEM;
    o.gz->base.append = gz_append;
    o.gz->sink = out;
    /* gzip (15 + 16), fastest level: pprof files are intermediate, and
     * profiles with millions of stacks should not wait on compression */
    int err =
        deflateInit2(&o.gz->zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK
            ? 0
            : -ENOMEM;
    if (!err) {
        err = ember_used_frames(p, &o.used);
        if (!err)
            err = write_all(&o, ember_convert_opts_fill(opts).name);
        deflateEnd(&o.gz->zs);
    }
    ember_used_frames_release(&o.used);
    free(o.ids);
    free(o.grp);
    free(o.groups);
    free(o.gslots);
    free(o.extra);
    free(o.file_string);
    free(o.gz);
    return err;
}
