/*
 * profile_values.c - a profile's values (what its weights measure, which
 * one views show, the differential pair "before"/"after"), its weights
 * (added, scaled to common decimals, kept in arrival order when asked) and
 * their text.
 *
 * Invariants (profile_impl.h): self[v] and total[v] exist for v < nvalues;
 * every weight is scaled by 10^decimals; a differential profile has
 * exactly the two values "before" and "after".
 */
#include "model/profile_impl.h"
#include "base/pow10.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Adds value (type, unit): its weights, zero for the nodes there are. */
int ember_profile_value_add(struct ember_profile *p, const char *type, const char *unit)
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
    int err = ember_profile_value_add(p, type, unit);
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
    int err = p->nvalues > 1 ? 0 : ember_profile_value_add(p, "after", p->vt[0].unit);
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

int ember_profile_rescale(struct ember_profile *p, unsigned decimals)
{
    if (decimals > EMBER_MAX_DECIMALS)
        return -EINVAL;
    return decimals > p->decimals ? ember_profile_rescale_by(p, decimals - p->decimals) : 0;
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

int ember_profile_rescale_by(struct ember_profile *p, unsigned by)
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
        int err = ember_profile_rescale_by(p, v.digits - p->decimals);
        if (err < 0)
            return err;
    }
    int64_t scaled;
    if (__builtin_mul_overflow(v.mant, ember_pow10(p->decimals - v.digits), &scaled))
        return -ERANGE;
    return ember_profile_add(p, node, value, scaled);
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
