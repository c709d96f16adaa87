/*
 * profile.c - a profile's life (made, freed, swapped), its frames, and
 * merging one profile into another (see profile_impl.h for the
 * invariants). Its values and weights are in profile_values.c, its stack
 * tree in profile_tree.c.
 */
#include "model/profile_impl.h"
#include "base/pow10.h"
#include "model/stack_cache.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

enum {
    CHILD_INITIAL_BUCKETS = 256,
    ROOT_PATH_HASH = 0x2545F491,
};

struct ember_profile *ember_profile_new(void)
{
    struct ember_profile *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->child_buckets = ember_table_calloc(CHILD_INITIAL_BUCKETS, sizeof(struct ember_child_bucket));
    p->child_mask = CHILD_INITIAL_BUCKETS - 1;
    if (!p->child_buckets || EMBER_VEC_RESERVE(p->child_hash, p->child_hash_cap, 1024) < 0 ||
        ember_frames_init(&p->frames) < 0 || ember_profile_value_add(p, "samples", "count") < 0 ||
        ember_profile_node_reserve(p, 1024) < 0) {
        ember_profile_free(p);
        return NULL;
    }
    p->nodes[0].frame = UINT32_MAX;
    p->nodes[0].parent = UINT32_MAX;
    p->child_hash[0] = ROOT_PATH_HASH;
    p->nnodes = 1;
    return p;
}

void ember_profile_free(struct ember_profile *p)
{
    if (!p)
        return;
    ember_frames_release(&p->frames);
    if (p->stacks)
        ember_stack_cache_release(p->stacks);
    free(p->stacks);
    free(p->nodes);
    free(p->child_buckets);
    free(p->child_hash);
    free(p->seq_node);
    free(p->modules);
    ember_profile_extra_free(p->extra);
    for (unsigned v = 0; v < EMBER_MAX_VALUES; v++) {
        free(p->self[v]);
        free(p->seq_w[v]);
    }
    free(p);
}

void ember_profile_swap(struct ember_profile *a, struct ember_profile *b)
{
    struct ember_profile tmp = *a;
    *a = *b;
    *b = tmp;
}

int ember_profile_intern(struct ember_profile *p, const char *name, size_t len, uint32_t *frame)
{
    return ember_frames_intern(&p->frames, name, len, frame);
}

int ember_profile_intern_frame(struct ember_profile *p, const struct ember_frame *fr,
                               uint32_t *frame)
{
    if (fr->module != EMBER_NO_MODULE && fr->module >= p->nmodules)
        return -EINVAL;
    if (fr->file_len > UINT32_MAX || fr->system_name_len > UINT32_MAX)
        return -ERANGE;
    struct ember_frame_loc loc = {
        .file = fr->file,
        .file_len = fr->file ? (uint32_t)fr->file_len : 0,
        .line = fr->line,
        .column = fr->column,
        .start_line = fr->start_line,
        .module = fr->module,
        .address = fr->has_address ? fr->address : 0,
        .kind = (uint8_t)fr->kind,
        .has_address = fr->has_address,
        .place_in_name = fr->place_in_name && fr->file,
        .system_name = fr->system_name,
        .system_name_len = fr->system_name ? (uint32_t)fr->system_name_len : 0,
        .folded = fr->folded,
        .kind_in_name =
            fr->kind_in_name && (ember_frame_kind_suffix(fr->kind)[0] ||
                                 fr->kind == EMBER_FRAME_PROCESS || fr->kind == EMBER_FRAME_THREAD),
    };
    if (fr->kind == EMBER_FRAME_PROCESS || fr->kind == EMBER_FRAME_THREAD) {
        loc.pid = fr->pid < 0 ? -1 : fr->pid;
        loc.tid = fr->kind == EMBER_FRAME_THREAD && fr->tid >= 0 ? fr->tid : -1;
    }
    return ember_frames_intern_loc(&p->frames, fr->name, fr->name_len, &loc, frame);
}

bool ember_profile_frame_detailed(const struct ember_profile *p, uint32_t frame)
{
    return frame < p->frames.count && p->frames.loc[frame].detailed;
}

void ember_profile_frame(const struct ember_profile *p, uint32_t frame, struct ember_frame *out)
{
    memset(out, 0, sizeof(*out));
    out->module = EMBER_NO_MODULE;
    out->name = "";
    out->pid = out->tid = -1;
    if (frame >= p->frames.count)
        return;
    const struct ember_frame_loc *l = &p->frames.loc[frame];
    out->name = p->frames.str[frame];
    out->name_len = p->frames.len[frame];
    if (!l->detailed)
        return;
    out->file = l->file;
    out->file_len = l->file_len;
    out->line = l->line;
    out->column = l->column;
    out->start_line = l->start_line;
    out->address = l->address;
    out->has_address = l->has_address;
    out->module = l->module;
    out->kind = (enum ember_frame_kind)l->kind;
    out->place_in_name = l->place_in_name;
    out->kind_in_name = l->kind_in_name;
    out->system_name = l->system_name;
    out->system_name_len = l->system_name_len;
    out->folded = l->folded;
    if (l->kind == EMBER_FRAME_PROCESS || l->kind == EMBER_FRAME_THREAD) {
        out->pid = l->pid;
        out->tid = l->tid;
    }
}

bool ember_profile_detailed(const struct ember_profile *p)
{
    return p->frames.detailed;
}

int ember_profile_copy_frame(struct ember_profile *dst, const struct ember_profile *src,
                             uint32_t frame, const char *name, size_t len,
                             const uint32_t *module_map, uint32_t *out)
{
    const struct ember_frame_loc *l = &src->frames.loc[frame];
    if (!name) {
        name = src->frames.str[frame];
        len = src->frames.len[frame];
    }
    if (!l->detailed)
        return ember_frames_intern(&dst->frames, name, len, out);
    struct ember_frame_loc loc = *l;
    if (loc.module != EMBER_NO_MODULE && module_map)
        loc.module = module_map[loc.module];
    return ember_frames_intern_loc(&dst->frames, name, len, &loc, out);
}

const char *ember_profile_frame_name(const struct ember_profile *p, uint32_t frame, size_t *len)
{
    if (frame >= p->frames.count) {
        if (len)
            *len = 0;
        return "";
    }
    if (len)
        *len = p->frames.len[frame];
    return p->frames.str[frame];
}

uint32_t ember_profile_frame_count(const struct ember_profile *p)
{
    return p->frames.count;
}

/* src's frame f in dst: copied, or renamed by rename (which may leave it
 * out: *out is then EMBER_NO_FRAME). mods maps src's modules to dst's. */
static int merged_frame(struct ember_profile *dst, const struct ember_profile *src, uint32_t f,
                        const uint32_t *mods, ember_frame_rename_fn rename, void *ctx,
                        uint32_t *out)
{
    if (!rename)
        return ember_profile_copy_frame(dst, src, f, NULL, 0, mods, out);
    struct ember_frame fr;
    ember_profile_frame(src, f, &fr);
    int err = rename(ctx, &fr);
    if (err || !fr.name) {
        *out = EMBER_NO_FRAME;
        return err;
    }
    if (fr.module != EMBER_NO_MODULE)
        fr.module = mods[fr.module];
    return ember_profile_intern_frame(dst, &fr, out);
}

int ember_profile_merge(struct ember_profile *dst, const struct ember_profile *src)
{
    return ember_profile_merge_renamed(dst, src, NULL, NULL);
}

int ember_profile_merge_renamed(struct ember_profile *dst, const struct ember_profile *src,
                                ember_frame_rename_fn rename, void *ctx)
{
    unsigned vmap[EMBER_MAX_VALUES];
    if (src->diff && !dst->diff && dst->weighed)
        return -EINVAL; /* a difference does not add to a profile */
    int err = ember_profile_values_like(dst, src, vmap);
    if (err)
        return err;
    /* a profile added to a difference is unchanged: before and after */
    bool both = dst->diff && !src->diff;
    if (src->decimals > dst->decimals &&
        (err = ember_profile_rescale_by(dst, src->decimals - dst->decimals)))
        return err;
    uint32_t *mods;
    if ((err = ember_profile_modules_like(dst, src, &mods)))
        return err;
    /* src's nodes and frames in dst (frames + 1, 0: not copied yet; copies
     * only: a frame copied is never left out) */
    uint32_t *map = malloc((size_t)src->nnodes * sizeof(*map));
    uint32_t *fmap = calloc((size_t)src->frames.count + 1, sizeof(*fmap));
    if (!map || !fmap) {
        free(map);
        free(fmap);
        free(mods);
        return -ENOMEM;
    }
    map[0] = EMBER_ROOT;
    int64_t f = ember_pow10(dst->decimals - src->decimals);
    for (uint32_t n = 1; n < src->nnodes && !err; n++) {
        const struct ember_node *sn = &src->nodes[n];
        uint32_t frame = fmap[sn->frame] - 1;
        if (rename || !fmap[sn->frame]) { /* renames are asked for each node */
            err = merged_frame(dst, src, sn->frame, mods, rename, ctx, &frame);
            if (!err && !rename)
                fmap[sn->frame] = frame + 1;
        }
        map[n] = map[sn->parent]; /* a frame left out: its callees take its place */
        if (!err && frame != EMBER_NO_FRAME)
            err = ember_profile_child_fast(dst, map[sn->parent], frame, &map[n]);
        for (unsigned v = 0; v < src->nvalues && !err && map[n] != EMBER_ROOT; v++) {
            int64_t w;
            if (!src->self[v][n] || (both && v != src->selected))
                continue;
            err = __builtin_mul_overflow(src->self[v][n], f, &w) ? -ERANGE
                  : both ? ember_profile_add_raw(dst, map[n], 0, w)
                         : ember_profile_add_raw(dst, map[n], vmap[v], w);
            if (!err && both)
                err = ember_profile_add_raw(dst, map[n], 1, w);
        }
    }
    for (size_t i = 0; i < ember_profile_labelled_count(src) && !err && !both; i++)
        if (map[src->extra->parts[i].node] != EMBER_ROOT)
            err = ember_profile_labelled_copy(dst, src, i, map[src->extra->parts[i].node], vmap);
    /* src's arrival order after dst's */
    for (size_t i = 0; dst->keep_seq && i < src->seq_len && !err; i++)
        for (unsigned v = 0; v < src->nvalues && !err; v++) {
            int64_t w;
            if (!src->seq_w[v][i] || (both && v != src->selected) ||
                map[src->seq_node[i]] == EMBER_ROOT)
                continue;
            err = __builtin_mul_overflow(src->seq_w[v][i], f, &w)
                      ? -ERANGE
                      : ember_profile_seq_append(dst, map[src->seq_node[i]], both ? 0 : vmap[v], w);
            if (!err && both)
                err = ember_profile_seq_append(dst, map[src->seq_node[i]], 1, w);
        }
    free(map);
    free(fmap);
    free(mods);
    return err;
}
