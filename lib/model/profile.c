/*
 * profile.c - the stack tree and its weights (see profile_impl.h for the
 * invariants).
 */
#include "model/profile_impl.h"
#include "base/pow10.h"
#include "model/stack_cache.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

enum {
    CHILD_INITIAL_BUCKETS = 256,
    ROOT_PATH_HASH = 0x2545F491,
    PATH_AHEAD = 8, /* slots fetched ahead of the lookup that needs them */
};

static int node_reserve(struct ember_profile *p, size_t need)
{
    if (need <= p->ncap)
        return 0;
    size_t cap = p->ncap;
    if (EMBER_VEC_RESERVE(p->nodes, cap, need) < 0)
        return -ENOMEM;
    for (unsigned v = 0; v < p->nvalues; v++) {
        int64_t *w = realloc(p->self[v], cap * sizeof(*w));
        if (!w)
            return -ENOMEM;
        memset(w + p->ncap, 0, (cap - p->ncap) * sizeof(*w));
        p->self[v] = w;
    }
    p->ncap = cap;
    return 0;
}

/* Adds value (type, unit): its weights, zero for the nodes there are. */
static int value_add(struct ember_profile *p, const char *type, const char *unit)
{
    if (p->nvalues == EMBER_MAX_VALUES)
        return -ENOSPC;
    unsigned v = p->nvalues;
    p->self[v] = calloc(p->ncap ? p->ncap : 1, sizeof(*p->self[v]));
    if (!p->self[v])
        return -ENOMEM;
    if (p->keep_seq && p->seq_cap) {
        p->seq_w[v] = calloc(p->seq_cap, sizeof(*p->seq_w[v]));
        if (!p->seq_w[v]) {
            free(p->self[v]);
            p->self[v] = NULL;
            return -ENOMEM;
        }
    }
    snprintf(p->vt[v].type, sizeof(p->vt[v].type), "%s", type);
    snprintf(p->vt[v].unit, sizeof(p->vt[v].unit), "%s", unit);
    p->total[v] = 0;
    p->nvalues++;
    return 0;
}

struct ember_profile *ember_profile_new(void)
{
    struct ember_profile *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->child_buckets = ember_table_calloc(CHILD_INITIAL_BUCKETS, sizeof(struct ember_child_bucket));
    p->child_mask = CHILD_INITIAL_BUCKETS - 1;
    if (!p->child_buckets || EMBER_VEC_RESERVE(p->child_hash, p->child_hash_cap, 1024) < 0 ||
        ember_frames_init(&p->frames) < 0 || value_add(p, "samples", "count") < 0 ||
        node_reserve(p, 1024) < 0) {
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

unsigned ember_profile_values(const struct ember_profile *p)
{
    return p->nvalues;
}

int ember_profile_value(struct ember_profile *p, const char *type, const char *unit,
                        unsigned *index)
{
    for (unsigned v = 0; v < p->nvalues; v++)
        if (strncmp(p->vt[v].type, type, EMBER_UNIT_MAX - 1) == 0 &&
            strncmp(p->vt[v].unit, unit, EMBER_UNIT_MAX - 1) == 0) {
            p->named = true;
            *index = v;
            return 0;
        }
    /* the first value named takes the place of the default, still unused */
    if (p->nvalues == 1 && !p->named && !p->weighed && !p->diff) {
        ember_profile_set_unit(p, type, unit);
        p->named = true;
        *index = 0;
        return 0;
    }
    int err = value_add(p, type, unit);
    if (!err)
        *index = p->nvalues - 1;
    return err;
}

const char *ember_profile_value_type(const struct ember_profile *p, unsigned index)
{
    return index < p->nvalues ? p->vt[index].type : "";
}

const char *ember_profile_value_unit(const struct ember_profile *p, unsigned index)
{
    return index < p->nvalues ? p->vt[index].unit : "";
}

unsigned ember_profile_selected(const struct ember_profile *p)
{
    return p->selected;
}

void ember_profile_select_index(struct ember_profile *p, unsigned index)
{
    if (index < p->nvalues)
        p->selected = index;
}

int ember_profile_select(struct ember_profile *p, const char *name)
{
    for (unsigned v = 0; v < p->nvalues; v++)
        if (strcmp(p->vt[v].type, name) == 0) {
            p->selected = v;
            return 0;
        }
    char *end;
    unsigned long i = strtoul(name, &end, 10);
    if (name[0] >= '0' && name[0] <= '9' && !*end && i < p->nvalues) {
        p->selected = (unsigned)i;
        return 0;
    }
    return -ENOENT;
}

/* Makes p's one value "before" and adds "after" (of zeros). */
static int become_differential(struct ember_profile *p, const char *type, const char *unit)
{
    snprintf(p->diff_type, sizeof(p->diff_type), "%s", type);
    ember_profile_set_unit(p, "before", unit);
    int err = p->nvalues > 1 ? 0 : value_add(p, "after", p->vt[0].unit);
    if (!err) {
        p->diff = true;
        p->selected = 1;
    }
    return err;
}

int ember_profile_set_differential(struct ember_profile *p, const char *type, const char *unit)
{
    if (p->diff)
        return 0;
    if (p->nnodes > 1 && p->nvalues > 1)
        return -EINVAL;
    bool copy = p->nvalues == 1;
    int err = become_differential(p, type, unit);
    if (err || !copy)
        return err;
    /* what was added so far is unchanged: after as before (flamegraph.pl's
     * one-count lines among differential ones) */
    memcpy(p->self[1], p->self[0], p->nnodes * sizeof(*p->self[1]));
    p->total[1] = p->total[0];
    if (p->seq_w[1])
        memcpy(p->seq_w[1], p->seq_w[0], p->seq_len * sizeof(*p->seq_w[1]));
    return 0;
}

/* p's selected value alone becomes "before" of a differential profile of
 * (type, unit), with an "after" of zeros; its other values and its
 * sequence are dropped. */
static int to_differential(struct ember_profile *p, const char *type, const char *unit)
{
    unsigned v = p->selected;
    int64_t *self = p->self[v], total = p->total[v];
    p->self[v] = NULL;
    for (unsigned k = 0; k < EMBER_MAX_VALUES; k++) {
        free(p->self[k]);
        free(p->seq_w[k]);
        p->self[k] = p->seq_w[k] = NULL;
    }
    p->self[0] = self;
    p->total[0] = total;
    p->nvalues = 1;
    p->diff = false;
    p->keep_seq = false;
    p->seq_len = 0;
    return become_differential(p, type, unit);
}

bool ember_profile_is_differential(const struct ember_profile *p)
{
    return p->diff;
}

unsigned ember_profile_decimals(const struct ember_profile *p)
{
    return p->decimals;
}

void ember_profile_value_rename(struct ember_profile *p, unsigned v, const char *type,
                                const char *unit)
{
    if (v >= p->nvalues)
        return;
    if (type)
        snprintf(p->vt[v].type, sizeof(p->vt[v].type), "%s", type);
    if (unit)
        snprintf(p->vt[v].unit, sizeof(p->vt[v].unit), "%s", unit);
}

void ember_profile_value_drop(struct ember_profile *p, unsigned v)
{
    if (v >= p->nvalues || p->nvalues == 1 || p->diff)
        return;
    free(p->self[v]);
    free(p->seq_w[v]);
    for (unsigned k = v; k + 1 < p->nvalues; k++) {
        p->self[k] = p->self[k + 1];
        p->seq_w[k] = p->seq_w[k + 1];
        p->vt[k] = p->vt[k + 1];
        p->total[k] = p->total[k + 1];
    }
    p->nvalues--;
    p->self[p->nvalues] = p->seq_w[p->nvalues] = NULL;
    if (p->selected == v)
        p->selected = 0;
    else if (p->selected > v)
        p->selected--;
}

void ember_profile_set_unit(struct ember_profile *p, const char *type, const char *unit)
{
    ember_profile_value_rename(p, 0, type, unit);
}

const char *ember_profile_sample_type(const struct ember_profile *p)
{
    return p->diff ? p->diff_type : p->vt[p->selected].type;
}

const char *ember_profile_unit(const struct ember_profile *p)
{
    return p->vt[p->selected].unit;
}

int ember_profile_values_like(struct ember_profile *dst, const struct ember_profile *src,
                              unsigned map[EMBER_MAX_VALUES])
{
    int err = 0;
    if (src->diff)
        err = ember_profile_set_differential(dst, src->diff_type, src->vt[0].unit);
    for (unsigned v = 0; v < src->nvalues && !err; v++) {
        if (src->diff || dst->diff) {
            map[v] = v < 2 ? v : 0;
            continue;
        }
        err = ember_profile_value(dst, src->vt[v].type, src->vt[v].unit, &map[v]);
    }
    /* an empty profile shows what src shows */
    if (!err && !dst->diff && !dst->weighed)
        dst->selected = map[src->selected];
    return err;
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

/* Puts node n, whose path hash is h, in the first free slot from its home
 * bucket, marking the full buckets it passes. */
static void child_place(struct ember_child_bucket *b, uint32_t mask, uint32_t h, uint32_t parent,
                        uint32_t frame, uint32_t n)
{
    for (uint32_t i = h & mask;; i = (i + 1) & mask) {
        for (unsigned j = 0; j < EMBER_CHILD_BUCKET; j++)
            if (b[i].slot[j].node == 0) {
                b[i].slot[j] = (struct ember_child_slot){parent, frame, n};
                return;
            }
        b[i].over = 1;
    }
}

/* Doubles the child table. The old buckets are read in order, so the
 * children land in the new one in order too (at home or home + old size):
 * only the path hashes are read out of order, fetched ahead. */
static int child_grow(struct ember_profile *p)
{
    enum { AHEAD = 4 };
    uint32_t old = p->child_mask + 1, nb = old * 2;
    struct ember_child_bucket *b = nb ? ember_table_calloc(nb, sizeof(*b)) : NULL;
    if (!b)
        return -ENOMEM;
    const struct ember_child_bucket *ob = p->child_buckets;
    for (uint32_t i = 0; i < old; i++) {
        if (i + AHEAD < old)
            for (unsigned j = 0; j < EMBER_CHILD_BUCKET; j++)
                __builtin_prefetch(&p->child_hash[ob[i + AHEAD].slot[j].node]);
        for (unsigned j = 0; j < EMBER_CHILD_BUCKET && ob[i].slot[j].node; j++) {
            const struct ember_child_slot *s = &ob[i].slot[j];
            child_place(b, nb - 1, p->child_hash[s->node], s->parent, s->frame, s->node);
        }
    }
    free(p->child_buckets);
    p->child_buckets = b;
    p->child_mask = nb - 1;
    return 0;
}

int ember_profile_child_insert(struct ember_profile *p, uint32_t h, uint32_t parent, uint32_t frame,
                               uint32_t *node)
{
    if (parent >= p->nnodes || frame >= p->frames.count)
        return -EINVAL;
    if (p->nnodes == UINT32_MAX)
        return -ERANGE;
    uint32_t n = p->nnodes;
    /* at most 3/4 full: a lookup mostly reads its home bucket alone */
    if (node_reserve(p, (size_t)n + 1) < 0 ||
        EMBER_VEC_RESERVE(p->child_hash, p->child_hash_cap, (size_t)n + 1) < 0 ||
        ((uint64_t)n * 4 > (uint64_t)(p->child_mask + 1) * EMBER_CHILD_BUCKET * 3 &&
         child_grow(p) < 0))
        return -ENOMEM;
    p->nodes[n].frame = frame;
    p->nodes[n].parent = parent;
    p->child_hash[n] = h;
    p->nnodes++;
    child_place(p->child_buckets, p->child_mask, h, parent, frame, n);
    *node = n;
    return 0;
}

int ember_profile_child(struct ember_profile *p, uint32_t parent, uint32_t frame, uint32_t *node)
{
    return ember_profile_child_fast(p, parent, frame, node);
}

int ember_profile_child_path(struct ember_profile *p, uint32_t parent, const uint32_t *frames,
                             size_t n, int step, uint32_t *nodes, uint32_t *leaf)
{
    if (parent >= p->nnodes)
        return -EINVAL;
    /* The path hashes of the next PATH_AHEAD frames are computed, and their
     * slots fetched, while the current one is looked up: the misses overlap. */
    uint32_t ring[PATH_AHEAD];
    uint32_t h = p->child_hash[parent];
    size_t ahead = 0;
    bool fresh = false; /* a node just made has no children yet */
    for (size_t i = 0; i < n; i++) {
        for (; ahead < n && ahead < i + PATH_AHEAD; ahead++) {
            h = ember_child_step(h, frames[step > 0 ? ahead : n - 1 - ahead]);
            ring[ahead % PATH_AHEAD] = h;
            /* and the next bucket, where a child goes when its own is full */
            __builtin_prefetch(&p->child_buckets[h & p->child_mask]);
            __builtin_prefetch(&p->child_buckets[(h + 1) & p->child_mask]);
        }
        uint32_t frame = frames[step > 0 ? i : n - 1 - i], hi = ring[i % PATH_AHEAD];
        uint32_t before = p->nnodes;
        int err = fresh ? ember_profile_child_insert(p, hi, parent, frame, &parent)
                        : ember_profile_child_at(p, hi, parent, frame, &parent);
        if (err)
            return err;
        fresh = p->nnodes != before;
        if (nodes)
            nodes[i] = parent;
    }
    *leaf = parent;
    return 0;
}

uint32_t ember_profile_node_count(const struct ember_profile *p)
{
    return p->nnodes;
}

uint32_t ember_profile_child_lookup(const struct ember_profile *p, uint32_t parent, uint32_t frame)
{
    return parent < p->nnodes ? ember_profile_child_find(p, parent, frame) : 0;
}

uint32_t ember_profile_node_frame(const struct ember_profile *p, uint32_t node)
{
    return p->nodes[node].frame;
}

uint32_t ember_profile_node_parent(const struct ember_profile *p, uint32_t node)
{
    return p->nodes[node].parent;
}

int64_t ember_profile_self(const struct ember_profile *p, uint32_t node, unsigned value)
{
    return value < p->nvalues && node < p->nnodes ? p->self[value][node] : 0;
}

const int64_t *ember_profile_self_values(const struct ember_profile *p, unsigned value)
{
    return value < p->nvalues ? p->self[value] : NULL;
}

int64_t ember_profile_total(const struct ember_profile *p, unsigned value)
{
    return value < p->nvalues ? p->total[value] : 0;
}

/* The sequence: one entry per arrival (consecutive ones to the same node
 * merged), a weight per value. */
int ember_profile_seq_append(struct ember_profile *p, uint32_t node, unsigned value, int64_t weight)
{
    if (p->seq_len && p->seq_node[p->seq_len - 1] == node) {
        p->seq_w[value][p->seq_len - 1] += weight;
        return 0;
    }
    if (p->seq_len == p->seq_cap) {
        size_t cap = p->seq_cap;
        if (EMBER_VEC_RESERVE(p->seq_node, cap, p->seq_len + 1) < 0)
            return -ENOMEM;
        for (unsigned v = 0; v < p->nvalues; v++) {
            int64_t *w = realloc(p->seq_w[v], cap * sizeof(*w));
            if (!w)
                return -ENOMEM;
            p->seq_w[v] = w;
        }
        p->seq_cap = cap;
    }
    size_t i = p->seq_len++;
    p->seq_node[i] = node;
    for (unsigned v = 0; v < p->nvalues; v++)
        p->seq_w[v][i] = v == value ? weight : 0;
    return 0;
}

int ember_profile_add_raw(struct ember_profile *p, uint32_t node, unsigned value, int64_t weight)
{
    int64_t self, total;
    if (value >= p->nvalues || node >= p->nnodes)
        return -EINVAL;
    if (__builtin_add_overflow(p->self[value][node], weight, &self) ||
        __builtin_add_overflow(p->total[value], weight, &total))
        return -ERANGE;
    p->self[value][node] = self;
    p->total[value] = total;
    p->weighed = true;
    return 0;
}

int ember_profile_add(struct ember_profile *p, uint32_t node, unsigned value, int64_t weight)
{
    int err = ember_profile_add_raw(p, node, value, weight);
    if (!err && p->keep_seq)
        err = ember_profile_seq_append(p, node, value, weight);
    return err;
}

/* Multiplies every stored weight by 10^by. */
static int rescale(struct ember_profile *p, unsigned by);

int ember_profile_rescale(struct ember_profile *p, unsigned decimals)
{
    if (decimals > EMBER_MAX_DECIMALS)
        return -EINVAL;
    return decimals > p->decimals ? rescale(p, decimals - p->decimals) : 0;
}

/* The before weight of a node: at the new decimals (times scale), then
 * normalized (times num / den, truncated) when den is not 0. */
static int before_weight(int64_t *v, int64_t scale, __int128 num, __int128 den)
{
    if (__builtin_mul_overflow(*v, scale, v))
        return -ERANGE;
    if (den)
        *v = (int64_t)(*v * num / den);
    return 0;
}

int ember_profile_to_before(struct ember_profile *p, const char *type, const char *unit,
                            unsigned decimals, const struct ember_decimal *norm)
{
    if (decimals < p->decimals || decimals > EMBER_MAX_DECIMALS ||
        (norm && norm->digits > decimals))
        return -EINVAL;
    int64_t scale = ember_pow10(decimals - p->decimals), bt = p->total[p->selected];
    __int128 num = 0, den = 0;
    if (norm && norm->mant && bt) {
        num = (__int128)norm->mant * ember_pow10(decimals - norm->digits);
        den = (__int128)bt * scale;
    }
    int err = to_differential(p, type, unit);
    int64_t total = 0;
    p->self[0][EMBER_ROOT] = 0; /* the empty stack's weight is no line */
    for (uint32_t n = 0; n < p->nnodes && !err; n++) {
        int64_t v = p->self[0][n];
        if (!v)
            continue;
        err = before_weight(&v, scale, num, den);
        if (!err && __builtin_add_overflow(total, v, &total))
            err = -ERANGE;
        p->self[0][n] = v;
    }
    if (err)
        return err;
    p->total[0] = total;
    p->decimals = decimals;
    p->nmodules = 0; /* no frame names one: they are names alone */
    return 0;
}

static int rescale(struct ember_profile *p, unsigned by)
{
    int64_t f = ember_pow10(by);
    for (unsigned v = 0; v < p->nvalues; v++) {
        if (__builtin_mul_overflow(p->total[v], f, &p->total[v]))
            return -ERANGE;
        for (uint32_t n = 0; n < p->nnodes; n++)
            if (__builtin_mul_overflow(p->self[v][n], f, &p->self[v][n]))
                return -ERANGE;
        for (size_t i = 0; i < p->seq_len; i++)
            if (__builtin_mul_overflow(p->seq_w[v][i], f, &p->seq_w[v][i]))
                return -ERANGE;
    }
    p->decimals += by;
    return 0;
}

int ember_profile_add_decimal(struct ember_profile *p, uint32_t node, unsigned value,
                              struct ember_decimal v)
{
    if (v.digits > EMBER_MAX_DECIMALS) {
        /* Round away the digits the model cannot keep. */
        int64_t f = ember_pow10(v.digits - EMBER_MAX_DECIMALS);
        v.mant = (v.mant + f / 2) / f;
        v.digits = EMBER_MAX_DECIMALS;
    }
    if (v.digits > p->decimals) {
        int err = rescale(p, v.digits - p->decimals);
        if (err < 0)
            return err;
    }
    int64_t scaled;
    if (__builtin_mul_overflow(v.mant, ember_pow10(p->decimals - v.digits), &scaled))
        return -ERANGE;
    return ember_profile_add(p, node, value, scaled);
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
    if (src->decimals > dst->decimals && (err = rescale(dst, src->decimals - dst->decimals)))
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

void ember_profile_keep_sequence(struct ember_profile *p, bool keep)
{
    p->keep_seq = keep;
}

bool ember_profile_has_sequence(const struct ember_profile *p)
{
    return p->keep_seq;
}

size_t ember_weight_format(char *buf, int64_t value, unsigned decimals)
{
    char digits[24];
    uint64_t u = value < 0 ? -(uint64_t)value : (uint64_t)value;
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    while (n <= decimals)
        digits[n++] = '0';
    /* Drop trailing fractional zeros: 2.50 is written 2.5, 3.00 as 3. */
    size_t skip = 0;
    while (skip < decimals && digits[skip] == '0')
        skip++;
    size_t o = 0;
    if (value < 0)
        buf[o++] = '-';
    for (size_t i = n; i-- > decimals;)
        buf[o++] = digits[i];
    if (skip < decimals) {
        buf[o++] = '.';
        for (size_t i = decimals; i-- > skip;)
            buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return o;
}

/* The memo of whole stacks (samples repeat them), made on first use; NULL
 * when it cannot be (it only speeds things up). */
static struct ember_stack_cache *stack_memo(struct ember_profile *p)
{
    if (p->stacks || p->no_stacks)
        return p->stacks;
    p->stacks = malloc(sizeof(*p->stacks));
    if (!p->stacks || ember_stack_cache_init(p->stacks) < 0) {
        free(p->stacks);
        p->stacks = NULL;
        p->no_stacks = true;
    }
    return p->stacks;
}

int ember_profile_add_stack(struct ember_profile *p, const uint32_t *frames, size_t n,
                            enum ember_stack_order order, const int64_t *weights, uint32_t *node)
{
    if (n == 0)
        return -EINVAL;
    uint32_t at;
    struct ember_stack_cache *memo = order == EMBER_LEAF_FIRST ? stack_memo(p) : NULL;
    int err = memo ? ember_stack_cache_node(memo, p, frames[n - 1], frames, n - 1, &at)
                   : ember_profile_child_path(p, EMBER_ROOT, frames, n,
                                              order == EMBER_ROOT_FIRST ? 1 : -1, NULL, &at);
    if (err)
        return err;
    for (unsigned v = 0; weights && v < p->nvalues; v++) {
        err = weights[v] ? ember_profile_add(p, at, v, weights[v]) : 0;
        if (err)
            return err;
    }
    if (node)
        *node = at;
    return 0;
}
