/*
 * labels.c - sample labels (pprof's Label): label sets, interned, and the
 * parts of nodes' weights that carry one.
 *
 * A label set is stored once, keyed by its bytes (per label: its key, its
 * kind, its string or its number and unit, each string with its length
 * first), its labels in the order given. A part is (node, set) and a
 * weight per value, at the decimals it was last added at: the profile may
 * have rescaled since, and the part is scaled when read or added to.
 * Invariants: part_ids finds a part by (node, set); a part's weights are a
 * share of its node's (readers add to both); sets and parts only grow.
 */
#include "model/profile_impl.h"
#include "base/pow10.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

struct key {
    char *b;
    size_t n, cap;
    int err;
};

static void put(struct key *k, const void *s, size_t len)
{
    if (k->err || EMBER_VEC_RESERVE(k->b, k->cap, k->n + len) < 0) {
        k->err = -ENOMEM;
        return;
    }
    memcpy(k->b + k->n, s, len);
    k->n += len;
}

static void put_str(struct key *k, const char *s, size_t len)
{
    uint64_t n = s ? len : UINT64_MAX; /* NULL and "" differ */
    put(k, &n, sizeof(n));
    if (s)
        put(k, s, len);
}

static void set_key(struct key *k, const struct ember_label *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        put_str(k, l[i].key, l[i].key_len);
        put_str(k, l[i].str, l[i].str_len);
        if (!l[i].str) {
            put(k, &l[i].num, sizeof(l[i].num));
            put_str(k, l[i].unit, l[i].unit_len);
        }
    }
}

/* A copy of the string in the arena (NULL stays NULL); *bad on no memory. */
static const char *copy(struct ember_profile_extra *x, const char *s, size_t len, bool *bad)
{
    const char *c = s ? ember_arena_strndup(&x->arena, s, len) : NULL;
    *bad |= s && !c;
    return c;
}

static int add_set(struct ember_profile_extra *x, const struct ember_label *l, size_t n,
                   const struct key *k, uint32_t *set)
{
    struct ember_label *c = ember_arena_alloc(&x->arena, (n ? n : 1) * sizeof(*c));
    bool bad =
        !c || x->nsets >= UINT32_MAX - 1 || EMBER_VEC_RESERVE(x->sets, x->scap, x->nsets + 1) < 0;
    for (size_t i = 0; i < n && !bad; i++) {
        c[i] = l[i];
        c[i].key = copy(x, l[i].key ? l[i].key : "", l[i].key_len, &bad);
        c[i].str = copy(x, l[i].str, l[i].str_len, &bad);
        c[i].unit = l[i].str ? NULL : copy(x, l[i].unit, l[i].unit_len, &bad);
        c[i].unit_len = c[i].unit ? l[i].unit_len : 0;
        c[i].num = l[i].str ? 0 : l[i].num;
    }
    if (bad || ember_strmap_put(&x->set_ids, k->b, k->n, (void *)(uintptr_t)(x->nsets + 1)) < 0)
        return -ENOMEM;
    x->sets[x->nsets] = (struct ember_label_set){c, n};
    *set = (uint32_t)x->nsets++;
    return 0;
}

int ember_profile_label_set(struct ember_profile *p, const struct ember_label *labels, size_t n,
                            uint32_t *set)
{
    struct ember_profile_extra *x = ember_profile_extra(p);
    struct key k = {0};
    set_key(&k, labels, n);
    int err = !x || k.err ? -ENOMEM : 0;
    uintptr_t id = err ? 0 : (uintptr_t)ember_strmap_get(&x->set_ids, k.b ? k.b : "", k.n);
    if (!err && id)
        *set = (uint32_t)(id - 1);
    else if (!err)
        err = add_set(x, labels, n, &k, set);
    free(k.b);
    return err;
}

size_t ember_profile_labels(const struct ember_profile *p, uint32_t set,
                            const struct ember_label **labels)
{
    if (!p->extra || set >= p->extra->nsets) {
        *labels = NULL;
        return 0;
    }
    *labels = p->extra->sets[set].labels;
    return p->extra->sets[set].n;
}

/* A part's weights brought to decimals (>= the part's): -ERANGE when one
 * overflows. */
static int rescale(struct ember_labelled_part *part, unsigned decimals)
{
    int64_t f = ember_pow10(decimals - part->decimals);
    for (unsigned v = 0; v < EMBER_MAX_VALUES && f != 1; v++)
        if (__builtin_mul_overflow(part->w[v], f, &part->w[v]))
            return -ERANGE;
    part->decimals = decimals;
    return 0;
}

static int find_part(struct ember_profile_extra *x, uint32_t node, uint32_t set, unsigned decimals,
                     struct ember_labelled_part **out)
{
    uint32_t key[2] = {node, set};
    uintptr_t id = (uintptr_t)ember_strmap_get(&x->part_ids, (const char *)key, sizeof(key));
    if (!id) {
        if (EMBER_VEC_RESERVE(x->parts, x->pcap, x->nparts + 1) < 0 ||
            ember_strmap_put(&x->part_ids, (const char *)key, sizeof(key),
                             (void *)(uintptr_t)(x->nparts + 1)) < 0)
            return -ENOMEM;
        x->parts[x->nparts] =
            (struct ember_labelled_part){.node = node, .set = set, .decimals = decimals};
        id = ++x->nparts;
    }
    *out = &x->parts[id - 1];
    return 0;
}

int ember_profile_add_labelled(struct ember_profile *p, uint32_t node, uint32_t set, unsigned v,
                               int64_t weight)
{
    struct ember_profile_extra *x = p->extra;
    if (!x || set >= x->nsets || node >= p->nnodes || v >= p->nvalues)
        return -EINVAL;
    struct ember_labelled_part *part;
    int err = find_part(x, node, set, p->decimals, &part);
    if (!err)
        err = rescale(part, p->decimals);
    if (!err && __builtin_add_overflow(part->w[v], weight, &part->w[v]))
        err = -ERANGE;
    return err;
}

size_t ember_profile_labelled_count(const struct ember_profile *p)
{
    return p->extra && !p->diff ? p->extra->nparts : 0;
}

void ember_profile_labelled(const struct ember_profile *p, size_t i, uint32_t *node, uint32_t *set,
                            int64_t w[EMBER_MAX_VALUES])
{
    struct ember_labelled_part part = p->extra->parts[i];
    *node = part.node;
    *set = part.set;
    /* the profile's weights at its decimals fit: so does a share of them */
    rescale(&part, p->decimals);
    memcpy(w, part.w, sizeof(part.w));
}

int ember_profile_labelled_copy(struct ember_profile *dst, const struct ember_profile *src,
                                size_t i, uint32_t node, const unsigned *vmap)
{
    uint32_t sn, sset, set;
    int64_t w[EMBER_MAX_VALUES];
    ember_profile_labelled(src, i, &sn, &sset, w);
    const struct ember_label *labels;
    size_t n = ember_profile_labels(src, sset, &labels);
    int err = ember_profile_label_set(dst, labels, n, &set);
    int64_t f = ember_pow10(dst->decimals > src->decimals ? dst->decimals - src->decimals : 0);
    for (unsigned v = 0; v < src->nvalues && !err; v++) {
        int64_t x;
        if (w[v])
            err = __builtin_mul_overflow(w[v], f, &x)
                      ? -ERANGE
                      : ember_profile_add_labelled(dst, node, set, vmap[v], x);
    }
    return err;
}
