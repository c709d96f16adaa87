/*
 * pprof_write.c - a profile as pprof's profile.proto, gzipped (what go tool
 * pprof, speedscope and pprof's web UI open).
 *
 * Protobuf merges concatenated messages (repeated fields append, scalars
 * set once here), so the file is a sequence of small Profile messages, each
 * packed by protobuf-c and holding a few fields: the sample types, then the
 * samples of each stack (written as the walk visits it: nothing is kept;
 * labelled parts and the profile's meta in pprof_extra.c), then the
 * Mappings, the Function and Location of each frame in use, then the
 * string table. Streaming through zlib, memory stays that of the profile.
 *
 * Numbering (invariants the parts agree on): the frame with dense index i
 * (see ember_used_frames) is Function i + 1, and its name is
 * string_table[nfixed + i]; the strings before it are "" and the fixed
 * ones (sample types, units, comment), the strings after it the extras
 * (pprof_write.h). A frame of a name alone is also Location i + 1, in no
 * mapping (mapping_id 0: nothing to symbolize). A frame with a record
 * starts a Location of its own numbered after those, with the frames
 * inlined into it at its address (its next frames, of kind inlined, same
 * address and module) as its Lines, innermost first; such Locations are
 * interned as the walk meets them. The modules are the Mappings, the main
 * program's first (pprof takes the first for the main binary: go tool
 * pprof's "File:"), numbered from 1 in that order, or after an empty
 * Mapping 1 when the main program is not known (put_mappings); a frame
 * without a module is in no mapping. Values are the profile's
 * scaled integers; with decimals, a comment says so
 * (EMBER_PPROF_DECIMALS_COMMENT), which ember's reader uses to read them
 * back exactly.
 */
#include "write/pprof_write.h"
#include "base/hash.h"
#include "base/vec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STRINGS_PER_PART = 4096 };

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

void ember_pprof_pack(struct pprof_out *o, const pb_profile *part)
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

/* Sample types (one per value), the default, the decimals comment. */
static void put_header(struct pprof_out *o, char *comment)
{
    const struct ember_profile *p = o->p;
    Perftools__Profiles__ValueType vt[EMBER_MAX_VALUES], *vtp[EMBER_MAX_VALUES];
    pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
    int64_t comment_idx;
    fixed_string(o, "");
    for (unsigned v = 0; v < ember_profile_values(p); v++) {
        perftools__profiles__value_type__init(&vt[v]);
        vt[v].type = (int64_t)fixed_string(o, ember_profile_value_type(p, v));
        vt[v].unit = (int64_t)fixed_string(o, ember_profile_value_unit(p, v));
        vtp[v] = &vt[v];
    }
    part.n_sample_type = ember_profile_values(p);
    part.sample_type = vtp;
    /* said only when it is not pprof's default, the last type */
    unsigned metric = ember_convert_metric(p);
    part.default_sample_type = metric + 1 < ember_profile_values(p) ? vt[metric].type : 0;
    if (ember_profile_decimals(p)) {
        /* one digit: decimals <= EMBER_MAX_DECIMALS = 9 */
        snprintf(comment, sizeof(EMBER_PPROF_DECIMALS_COMMENT) + 1, "%s%c",
                 EMBER_PPROF_DECIMALS_COMMENT, (char)('0' + ember_profile_decimals(p)));
        comment_idx = (int64_t)fixed_string(o, comment);
        part.n_comment = 1;
        part.comment = &comment_idx;
    }
    ember_pprof_pack(o, &part);
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

/* A stack's weight, for each module it runs in (once), when the reader
 * named no main module. */
static void weigh_modules(struct pprof_out *o, const uint32_t *path, size_t depth,
                          const int64_t *self)
{
    int64_t w = self[ember_convert_metric(o->p)];
    o->stamp++;
    for (size_t i = 0; i < depth; i++) {
        uint32_t fr = ember_profile_node_frame(o->p, path[i]);
        struct ember_frame rec;
        if (!ember_profile_frame_detailed(o->p, fr))
            continue;
        ember_profile_frame(o->p, fr, &rec);
        if (rec.module == EMBER_NO_MODULE || o->module_stamp[rec.module] == o->stamp)
            continue;
        o->module_stamp[rec.module] = o->stamp;
        o->module_weight[rec.module] += w < 0 ? -(uint64_t)w : (uint64_t)w;
    }
}

static int put_sample(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct pprof_out *o = ctx;
    size_t nids;
    if (EMBER_VEC_RESERVE(o->ids, o->idcap, depth) < 0)
        return -ENOMEM;
    if (o->module_weight)
        weigh_modules(o, path, depth, self);
    int err = stack_locations(o, path, depth, &nids);
    return err ? err : ember_pprof_put_samples(o, path[depth - 1], nids, self);
}

/* What pprof's main binary can be: a program's file, not a shared library,
 * the kernel, a pseudo-file ("[vdso]") or a JIT's map of symbols. */
static bool is_program(const char *path)
{
    if (!path || path[0] != '/' || strncmp(path, "/tmp/perf-", 10) == 0)
        return false;
    const char *so = strstr(strrchr(path, '/'), ".so");
    return !so || (so[3] != '\0' && so[3] != '.');
}

/* The main module: the reader's, else (perf script text says no more) the
 * program that the most weight runs in, as perf_to_profile guesses it; else
 * none. */
static uint32_t main_module(const struct pprof_out *o)
{
    uint32_t main = ember_profile_main_module(o->p);
    for (uint32_t m = 0; o->module_weight && m < ember_profile_module_count(o->p); m++)
        if (o->module_weight[m] && is_program(ember_profile_module_info(o->p, m)->path) &&
            (main == EMBER_NO_MODULE || o->module_weight[m] > o->module_weight[main]))
            main = m;
    return main;
}

/* The index in string_table of an extra string (after the names). */
int ember_pprof_extra_string(struct pprof_out *o, const char *str, size_t len, uint64_t *index)
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
        int err = ember_pprof_extra_string(o, l.file, l.file_len, &o->file_string[i]);
        if (err)
            return err;
    }
    return 0;
}

static int put_mapping(struct pprof_out *o, uint32_t m)
{
    const struct ember_module *mod = ember_profile_module_info(o->p, m);
    Perftools__Profiles__Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT, *mapp = &map;
    uint64_t path = 0, bid = 0;
    int err = mod->path ? ember_pprof_extra_string(o, mod->path, strlen(mod->path), &path) : 0;
    if (!err && mod->build_id)
        err = ember_pprof_extra_string(o, mod->build_id, strlen(mod->build_id), &bid);
    if (err)
        return err;
    map.id = o->mapping_id[m];
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
    ember_pprof_pack(o, &part);
    return 0;
}

/* The Mappings: the main module's first (id 1), then the others in their
 * order. Without a main module, mapping 1 is none (no file, no range, no
 * location in it: go tool pprof names no "File:", as perf_to_profile's
 * profiles do when the main program is not known); pprof would otherwise
 * take another module for the program, or, without any, make one up and
 * try to symbolize through it ("Main binary filename not available"). */
static int put_mappings(struct pprof_out *o)
{
    const struct ember_profile *p = o->p;
    uint32_t n = ember_profile_module_count(p), main = main_module(o);
    o->mapping_id = malloc((n ? n : 1) * sizeof(*o->mapping_id));
    if (!o->mapping_id)
        return -ENOMEM;
    uint64_t next = 2;
    for (uint32_t m = 0; m < n; m++)
        o->mapping_id[m] = m == main ? 1 : next++;
    if (main == EMBER_NO_MODULE) {
        Perftools__Profiles__Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT, *mapp = &map;
        map.id = 1;
        pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
        part.n_mapping = 1;
        part.mapping = &mapp;
        ember_pprof_pack(o, &part);
    }
    int err = main == EMBER_NO_MODULE ? 0 : put_mapping(o, main);
    for (uint32_t m = 0; m < n && !err && !o->gz->err; m++)
        err = m == main ? 0 : put_mapping(o, m);
    return err ? err : o->gz->err;
}

/* A frame's system name: its name's string when they are the same, else
 * its own (an extra); 0 when it is not known (pprof would take the name
 * for one to demangle and simplify: C++ templates would lose their
 * arguments in its views). */
static int system_name(struct pprof_out *o, uint32_t i, const struct ember_frame *fl,
                       int64_t *index)
{
    uint64_t k = fl->system_name ? o->nfixed + i : 0;
    int err = 0;
    if (fl->system_name && !(fl->system_name_len == fl->name_len &&
                             memcmp(fl->system_name, fl->name, fl->name_len) == 0))
        err = ember_pprof_extra_string(o, fl->system_name, fl->system_name_len, &k);
    *index = (int64_t)k;
    return err;
}

/* A frame that is an address no function is known for: named by its
 * address (as pprof names a Location without Lines, and as ember's reader
 * names it), nothing else said. It is a Location without Lines again. */
static bool address_only(const struct ember_frame *f)
{
    char name[24];
    int n = snprintf(name, sizeof(name), "0x%" PRIx64, f->address);
    return f->has_address && f->kind == EMBER_FRAME_USER && !f->file && !f->line && !f->column &&
           !f->start_line && !f->system_name && f->name_len == (size_t)n &&
           memcmp(f->name, name, (size_t)n) == 0;
}

/* Function i + 1 for each frame in use; Location i + 1 for those of a name
 * alone, in no mapping. */
static int put_frames(struct pprof_out *o)
{
    int err = 0;
    for (uint32_t i = 0; i < o->used.count && !o->gz->err && !err; i++) {
        struct ember_frame fl;
        ember_profile_frame(o->p, o->used.frames[i], &fl);
        Perftools__Profiles__Function f = PERFTOOLS__PROFILES__FUNCTION__INIT, *fp = &f;
        Perftools__Profiles__Line l = PERFTOOLS__PROFILES__LINE__INIT, *lp = &l;
        Perftools__Profiles__Location loc = PERFTOOLS__PROFILES__LOCATION__INIT, *locp = &loc;
        f.id = i + 1u;
        f.name = (int64_t)(o->nfixed + i);
        f.filename = (int64_t)o->file_string[i];
        f.start_line = fl.start_line;
        err = system_name(o, i, &fl, &f.system_name);
        l.function_id = f.id;
        loc.id = f.id;
        loc.n_line = 1;
        loc.line = &lp;
        pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
        part.n_function = address_only(&fl) ? 0 : 1; /* no Line names it */
        part.function = &fp;
        part.n_location = ember_profile_frame_detailed(o->p, o->used.frames[i]) ? 0 : 1;
        part.location = &locp;
        if (!err)
            ember_pprof_pack(o, &part);
    }
    return err ? err : o->gz->err;
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
        loc.mapping_id = base.module == EMBER_NO_MODULE ? 0 : o->mapping_id[base.module];
        loc.address = base.address;
        loc.is_folded = base.folded;
        for (uint32_t j = 0; j < g->n; j++) {
            struct ember_frame fl;
            ember_profile_frame(o->p, f[g->n - 1 - j], &fl);
            perftools__profiles__line__init(&lines[j]);
            lines[j].function_id = o->used.map[f[g->n - 1 - j]] + 1u;
            lines[j].line = fl.line;
            lines[j].column = fl.column;
            lp[j] = &lines[j];
        }
        loc.n_line = g->n == 1 && address_only(&base) ? 0 : g->n;
        loc.line = lp;
        pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
        part.n_location = 1;
        part.location = &locp;
        ember_pprof_pack(o, &part);
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
    ember_pprof_pack(o, &part);
    int err = 0;
    for (uint32_t i = 0; i < o->used.count && !o->gz->err && !err;) {
        size_t n = 0;
        for (; n < STRINGS_PER_PART && i < o->used.count && !err; n++, i++)
            err = frame_string(o, o->used.frames[i], &batch[n]);
        part.n_string_table = n;
        part.string_table = batch;
        if (!err)
            ember_pprof_pack(o, &part);
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
        ember_pprof_pack(o, &part);
    return o->gz->err;
}

static int write_all(struct pprof_out *o)
{
    char comment[sizeof(EMBER_PPROF_DECIMALS_COMMENT) + 8];
    put_header(o, comment);
    int err = group_grow(o);
    uint32_t nmod = ember_profile_module_count(o->p);
    if (!err && nmod && ember_profile_main_module(o->p) == EMBER_NO_MODULE) {
        o->module_weight = calloc(nmod, sizeof(*o->module_weight));
        o->module_stamp = calloc(nmod, sizeof(*o->module_stamp));
        err = o->module_weight && o->module_stamp ? 0 : -ENOMEM;
    }
    if (!err)
        err = ember_pprof_parts_index(o);
    if (!err)
        err = ember_profile_walk(o->p, put_sample, o);
    if (!err)
        err = ember_pprof_put_meta(o);
    if (!err)
        err = file_strings(o);
    if (!err)
        err = put_mappings(o);
    if (!err)
        err = put_frames(o);
    if (!err)
        err = put_groups(o);
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
    (void)opts;
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
            err = write_all(&o);
        deflateEnd(&o.gz->zs);
    }
    ember_used_frames_release(&o.used);
    ember_pprof_extra_release(&o);
    free(o.ids);
    free(o.grp);
    free(o.groups);
    free(o.gslots);
    free(o.extra);
    free(o.file_string);
    free(o.mapping_id);
    free(o.module_weight);
    free(o.module_stamp);
    free(o.gz);
    return err;
}
