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
 * (see ember_used_frames) is Function and Location i + 1, and its name is
 * string_table[nfixed + i]; the strings before it are "" and the fixed
 * ones (sample types, units, comment). Values are the profile's scaled
 * integers; with decimals, a comment says so (EMBER_PPROF_DECIMALS_COMMENT),
 * which ember's reader uses to read them back exactly.
 */
#include "convert_impl.h"
#include "formats/pprof_wire.h"
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

/* Sample types (one per value), the default, the decimals comment, and
 * Mapping 1, the "binary" every location is in: named after the profile,
 * and saying that its functions are known (nothing to symbolize). */
static void put_header(struct pprof_out *o, const char *name, char *comment)
{
    const struct ember_profile *p = o->p;
    Perftools__Profiles__ValueType vt[EMBER_MAX_VALUES], *vtp[EMBER_MAX_VALUES];
    Perftools__Profiles__Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT, *mapp = &map;
    pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
    int64_t comment_idx;
    fixed_string(o, "");
    map.id = 1;
    map.filename = (int64_t)fixed_string(o, name);
    map.has_functions = true;
    part.n_mapping = 1;
    part.mapping = &mapp;
    for (unsigned v = 0; v < p->nvalues; v++) {
        perftools__profiles__value_type__init(&vt[v]);
        vt[v].type = (int64_t)fixed_string(o, p->vt[v].type);
        vt[v].unit = (int64_t)fixed_string(o, p->vt[v].unit);
        vtp[v] = &vt[v];
    }
    part.n_sample_type = p->nvalues;
    part.sample_type = vtp;
    part.default_sample_type = vt[ember_convert_metric(p)].type;
    if (p->decimals) {
        /* one digit: decimals <= EMBER_MAX_DECIMALS = 9 */
        snprintf(comment, sizeof(EMBER_PPROF_DECIMALS_COMMENT) + 1, "%s%c",
                 EMBER_PPROF_DECIMALS_COMMENT, (char)('0' + p->decimals));
        comment_idx = (int64_t)fixed_string(o, comment);
        part.n_comment = 1;
        part.comment = &comment_idx;
    }
    pack(o, &part);
}

static int put_sample(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct pprof_out *o = ctx;
    if (EMBER_VEC_RESERVE(o->ids, o->idcap, depth) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < depth; i++)
        o->ids[i] = o->used.map[o->p->nodes[path[depth - 1 - i]].frame] + 1u;
    Perftools__Profiles__Sample s = PERFTOOLS__PROFILES__SAMPLE__INIT, *sp = &s;
    s.n_location_id = depth;
    s.location_id = o->ids;
    s.n_value = o->p->nvalues;
    s.value = (int64_t *)self;
    pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
    part.n_sample = 1;
    part.sample = &sp;
    pack(o, &part);
    return o->gz->err;
}

/* Function and Location i + 1 for each frame in use. */
static void put_frames(struct pprof_out *o)
{
    for (uint32_t i = 0; i < o->used.count && !o->gz->err; i++) {
        Perftools__Profiles__Function f = PERFTOOLS__PROFILES__FUNCTION__INIT, *fp = &f;
        Perftools__Profiles__Line l = PERFTOOLS__PROFILES__LINE__INIT, *lp = &l;
        Perftools__Profiles__Location loc = PERFTOOLS__PROFILES__LOCATION__INIT, *locp = &loc;
        f.id = i + 1u;
        f.name = (int64_t)(o->nfixed + i);
        l.function_id = f.id;
        loc.id = f.id;
        loc.mapping_id = 1;
        loc.n_line = 1;
        loc.line = &lp;
        pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
        part.n_function = 1;
        part.function = &fp;
        part.n_location = 1;
        part.location = &locp;
        pack(o, &part);
    }
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
    for (uint32_t i = 0; i < o->used.count && !o->gz->err;) {
        size_t n = 0;
        for (; n < STRINGS_PER_PART && i < o->used.count; n++, i++) {
            size_t len;
            const char *name = ember_profile_frame_name(o->p, o->used.frames[i], &len);
            batch[n] = (ProtobufCBinaryData){len, (uint8_t *)name};
        }
        part.n_string_table = n;
        part.string_table = batch;
        pack(o, &part);
    }
    free(batch);
    return o->gz->err;
}

static int write_all(struct pprof_out *o, const char *name)
{
    char comment[sizeof(EMBER_PPROF_DECIMALS_COMMENT) + 8];
    put_header(o, name, comment);
    int err = ember_profile_walk(o->p, put_sample, o);
    if (!err) {
        put_frames(o);
        err = put_strings(o);
    }
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
    free(o.gz);
    return err;
}
