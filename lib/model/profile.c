/*
 * profile.c - the stack tree and its weights (see profile_impl.h for the
 * invariants).
 */
#include "profile_impl.h"
#include "util/table.h"
#include "util/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

enum {
    CHILD_INITIAL_BUCKETS = 256,
    ROOT_PATH_HASH = 0x2545F491,
    PATH_AHEAD = 8, /* slots fetched ahead of the lookup that needs them */
};

static const int64_t pow10_table[] = {
    1,
    10,
    100,
    1000,
    10000,
    100000,
    1000000,
    10000000,
    100000000,
    1000000000,
    10000000000,
    100000000000,
    1000000000000,
    10000000000000,
    100000000000000,
    1000000000000000,
    10000000000000000,
    100000000000000000,
    1000000000000000000,
};

static int node_reserve(struct ember_profile *p, size_t need)
{
    if (need <= p->ncap)
        return 0;
    size_t cap = p->ncap;
    if (EMBER_VEC_RESERVE(p->nodes, cap, need) < 0)
        return -ENOMEM;
    for (unsigned m = 0; m < EMBER_MAX_METRICS; m++) {
        int64_t *w = realloc(p->self[m], cap * sizeof(*w));
        if (!w)
            return -ENOMEM;
        memset(w + p->ncap, 0, (cap - p->ncap) * sizeof(*w));
        p->self[m] = w;
    }
    p->ncap = cap;
    return 0;
}

struct ember_profile *ember_profile_new(void)
{
    struct ember_profile *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->nmetrics = 1;
    ember_profile_set_unit(p, "samples", "count");
    p->child_buckets = ember_table_calloc(CHILD_INITIAL_BUCKETS, sizeof(struct ember_child_bucket));
    p->child_mask = CHILD_INITIAL_BUCKETS - 1;
    if (!p->child_buckets || EMBER_VEC_RESERVE(p->child_hash, p->child_hash_cap, 1024) < 0 ||
        ember_frames_init(&p->frames) < 0 || node_reserve(p, 1024) < 0) {
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
    free(p->nodes);
    free(p->child_buckets);
    free(p->child_hash);
    free(p->seq_node);
    for (unsigned m = 0; m < EMBER_MAX_METRICS; m++) {
        free(p->self[m]);
        free(p->seq_w[m]);
    }
    free(p);
}

void ember_profile_swap(struct ember_profile *a, struct ember_profile *b)
{
    struct ember_profile tmp = *a;
    *a = *b;
    *b = tmp;
}

int ember_profile_set_metrics(struct ember_profile *p, unsigned n)
{
    if (n < 1 || n > EMBER_MAX_METRICS)
        return -EINVAL;
    p->nmetrics = n;
    return 0;
}

unsigned ember_profile_metrics(const struct ember_profile *p)
{
    return p->nmetrics;
}

unsigned ember_profile_decimals(const struct ember_profile *p)
{
    return p->decimals;
}

void ember_profile_set_unit(struct ember_profile *p, const char *type, const char *unit)
{
    if (type)
        snprintf(p->sample_type, sizeof(p->sample_type), "%s", type);
    if (unit)
        snprintf(p->unit, sizeof(p->unit), "%s", unit);
}

const char *ember_profile_sample_type(const struct ember_profile *p)
{
    return p->sample_type;
}

const char *ember_profile_unit(const struct ember_profile *p)
{
    return p->unit;
}

int ember_profile_intern(struct ember_profile *p, const char *name, size_t len, uint32_t *frame)
{
    return ember_frames_intern(&p->frames, name, len, frame);
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

uint32_t ember_profile_node_frame(const struct ember_profile *p, uint32_t node)
{
    return p->nodes[node].frame;
}

uint32_t ember_profile_node_parent(const struct ember_profile *p, uint32_t node)
{
    return p->nodes[node].parent;
}

int64_t ember_profile_self(const struct ember_profile *p, uint32_t node, unsigned metric)
{
    return metric < p->nmetrics ? p->self[metric][node] : 0;
}

int64_t ember_profile_total(const struct ember_profile *p, unsigned metric)
{
    return metric < p->nmetrics ? p->total[metric] : 0;
}

int ember_profile_seq_append(struct ember_profile *p, uint32_t node, unsigned metric, int64_t value)
{
    if (p->seq_len && p->seq_node[p->seq_len - 1] == node) {
        p->seq_w[metric][p->seq_len - 1] += value;
        return 0;
    }
    if (p->seq_len == p->seq_cap) {
        size_t cap = p->seq_cap;
        if (EMBER_VEC_RESERVE(p->seq_node, cap, p->seq_len + 1) < 0)
            return -ENOMEM;
        for (unsigned m = 0; m < EMBER_MAX_METRICS; m++) {
            int64_t *w = realloc(p->seq_w[m], cap * sizeof(*w));
            if (!w)
                return -ENOMEM;
            p->seq_w[m] = w;
        }
        p->seq_cap = cap;
    }
    size_t i = p->seq_len++;
    p->seq_node[i] = node;
    for (unsigned m = 0; m < EMBER_MAX_METRICS; m++)
        p->seq_w[m][i] = m == metric ? value : 0;
    return 0;
}

int ember_profile_add_raw(struct ember_profile *p, uint32_t node, unsigned metric, int64_t value)
{
    int64_t self, total;
    if (metric >= p->nmetrics || node >= p->nnodes)
        return -EINVAL;
    if (__builtin_add_overflow(p->self[metric][node], value, &self) ||
        __builtin_add_overflow(p->total[metric], value, &total))
        return -ERANGE;
    p->self[metric][node] = self;
    p->total[metric] = total;
    return 0;
}

int ember_profile_add(struct ember_profile *p, uint32_t node, unsigned metric, int64_t value)
{
    int err = ember_profile_add_raw(p, node, metric, value);
    if (!err && p->keep_seq)
        err = ember_profile_seq_append(p, node, metric, value);
    return err;
}

/* Multiplies every stored weight by 10^by. */
static int rescale(struct ember_profile *p, unsigned by)
{
    int64_t f = pow10_table[by];
    for (unsigned m = 0; m < p->nmetrics; m++) {
        if (__builtin_mul_overflow(p->total[m], f, &p->total[m]))
            return -ERANGE;
        for (uint32_t n = 0; n < p->nnodes; n++)
            if (__builtin_mul_overflow(p->self[m][n], f, &p->self[m][n]))
                return -ERANGE;
        for (size_t i = 0; i < p->seq_len; i++)
            if (__builtin_mul_overflow(p->seq_w[m][i], f, &p->seq_w[m][i]))
                return -ERANGE;
    }
    p->decimals += by;
    return 0;
}

int ember_profile_add_decimal(struct ember_profile *p, uint32_t node, unsigned metric,
                              struct ember_decimal v)
{
    if (v.digits > EMBER_MAX_DECIMALS) {
        /* Round away the digits the model cannot keep. */
        int64_t f = pow10_table[v.digits - EMBER_MAX_DECIMALS];
        v.mant = (v.mant + f / 2) / f;
        v.digits = EMBER_MAX_DECIMALS;
    }
    if (v.digits > p->decimals) {
        int err = rescale(p, v.digits - p->decimals);
        if (err < 0)
            return err;
    }
    int64_t scaled;
    if (__builtin_mul_overflow(v.mant, pow10_table[p->decimals - v.digits], &scaled))
        return -ERANGE;
    return ember_profile_add(p, node, metric, scaled);
}

int ember_profile_merge(struct ember_profile *dst, const struct ember_profile *src)
{
    int err = 0;
    if (src->nmetrics > dst->nmetrics && (err = ember_profile_set_metrics(dst, src->nmetrics)))
        return err;
    if (src->decimals > dst->decimals && (err = rescale(dst, src->decimals - dst->decimals)))
        return err;
    /* a profile that has not said what it measures takes src's word */
    if (strcmp(dst->sample_type, "samples") == 0 && strcmp(dst->unit, "count") == 0)
        ember_profile_set_unit(dst, src->sample_type, src->unit);
    /* src's nodes and frames in dst (frames + 1, 0: not interned yet) */
    uint32_t *map = malloc((size_t)src->nnodes * sizeof(*map));
    uint32_t *fmap = calloc((size_t)src->frames.count + 1, sizeof(*fmap));
    if (!map || !fmap) {
        free(map);
        free(fmap);
        return -ENOMEM;
    }
    map[0] = EMBER_ROOT;
    int64_t f = pow10_table[dst->decimals - src->decimals];
    for (uint32_t n = 1; n < src->nnodes && !err; n++) {
        const struct ember_node *sn = &src->nodes[n];
        uint32_t frame = fmap[sn->frame] - 1;
        if (!fmap[sn->frame]) {
            err = ember_frames_intern(&dst->frames, src->frames.str[sn->frame],
                                      src->frames.len[sn->frame], &frame);
            fmap[sn->frame] = frame + 1;
        }
        if (!err)
            err = ember_profile_child_fast(dst, map[sn->parent], frame, &map[n]);
        for (unsigned m = 0; m < src->nmetrics && !err; m++) {
            int64_t v;
            if (!src->self[m][n])
                continue;
            err = __builtin_mul_overflow(src->self[m][n], f, &v)
                      ? -ERANGE
                      : ember_profile_add_raw(dst, map[n], m, v);
        }
    }
    free(map);
    free(fmap);
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
