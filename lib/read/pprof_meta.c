/*
 * pprof_meta.c - see pprof_meta.h. Every string index is checked before
 * use: a bad one is an error naming the field, never a crash.
 */
#include "read/pprof_meta.h"
#include "read/pprof_wire.h"
#include "base/pow10.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef Perftools__Profiles__Profile pb_profile;

/* String idx of the table (what names the field), or an error. */
static int string(const pb_profile *pb, int64_t idx, const char *what, const char *file,
                  struct ember_diag *d, const char **s, size_t *len)
{
    size_t n = pb->n_string_table;
    if (idx < 0 || (uint64_t)idx >= n)
        return ember_diag_set(d, -EINVAL, file, 0,
                              "not a valid pprof profile: %s is string %" PRId64
                              ", but string_table has %zu entries (expected an index from 0 "
                              "to %zu)",
                              what, idx, n, n ? n - 1 : 0);
    *s = pb->string_table[idx].data ? (const char *)pb->string_table[idx].data : "";
    *len = pb->string_table[idx].len;
    return 0;
}

/* A NUL-terminated copy of string idx (NULL for index 0: not said). */
static int string_copy(const pb_profile *pb, int64_t idx, const char *what, const char *file,
                       struct ember_diag *d, char **out)
{
    const char *s;
    size_t len;
    *out = NULL;
    int err = idx ? string(pb, idx, what, file, d, &s, &len) : 0;
    if (!err && idx && !(*out = strndup(s, len)))
        err = -ENOMEM;
    return err;
}

static bool ember_decimals_comment(const char *s, size_t len)
{
    size_t n = sizeof(EMBER_PPROF_DECIMALS_COMMENT) - 1;
    return len == n + 1 && memcmp(s, EMBER_PPROF_DECIMALS_COMMENT, n) == 0;
}

static int read_comments(struct ember_profile *p, const pb_profile *pb, const char *file,
                         struct ember_diag *d)
{
    int err = 0;
    for (size_t i = 0; i < pb->n_comment && !err; i++) {
        const char *s;
        size_t len;
        err = string(pb, pb->comment[i], "comment", file, d, &s, &len);
        if (!err && !ember_decimals_comment(s, len))
            err = ember_profile_add_comment(p, s, len);
    }
    return err;
}

int ember_pprof_read_meta(struct ember_profile *p, const pb_profile *pb, const char *file,
                          struct ember_diag *d)
{
    char *s[5] = {NULL};
    const Perftools__Profiles__ValueType *pt = pb->period_type;
    int err = pt ? string_copy(pb, pt->type, "period_type.type", file, d, &s[0]) : 0;
    if (!err && pt)
        err = string_copy(pb, pt->unit, "period_type.unit", file, d, &s[1]);
    if (!err)
        err = string_copy(pb, pb->drop_frames, "drop_frames", file, d, &s[2]);
    if (!err)
        err = string_copy(pb, pb->keep_frames, "keep_frames", file, d, &s[3]);
    if (!err)
        err = string_copy(pb, pb->doc_url, "doc_url", file, d, &s[4]);
    struct ember_profile_meta m = {
        .period_type = s[0],
        .period_unit = s[1],
        .period = pb->period,
        .time_nanos = pb->time_nanos,
        .duration_nanos = pb->duration_nanos,
        .drop_frames = s[2],
        .keep_frames = s[3],
        .doc_url = s[4],
    };
    if (!err)
        err = ember_profile_set_meta(p, &m);
    for (size_t i = 0; i < 5; i++)
        free(s[i]);
    return err ? err : read_comments(p, pb, file, d);
}

/* Label i of sample k as the model's: a string when it has one (pprof
 * reads str before num), else a number and its unit. */
static int label(const pb_profile *pb, size_t k, size_t i, const char *file, struct ember_diag *d,
                 struct ember_label *out)
{
    const Perftools__Profiles__Label *l = pb->sample[k]->label[i];
    char what[64];
    *out = (struct ember_label){.num = l->str ? 0 : l->num};
    snprintf(what, sizeof(what), "sample[%zu].label[%zu].key", k, i);
    int err = string(pb, l->key, what, file, d, &out->key, &out->key_len);
    if (!err && l->str) {
        snprintf(what, sizeof(what), "sample[%zu].label[%zu].str", k, i);
        err = string(pb, l->str, what, file, d, &out->str, &out->str_len);
    } else if (!err && l->num_unit) {
        snprintf(what, sizeof(what), "sample[%zu].label[%zu].num_unit", k, i);
        err = string(pb, l->num_unit, what, file, d, &out->unit, &out->unit_len);
    }
    return err;
}

/* Sample k's values as node's part labelled set, scaled from 10^-digits
 * to the profile's decimals (at least digits: the sample was added). */
static int add_part(struct ember_profile *p, const pb_profile *pb, size_t k, uint32_t node,
                    uint32_t set, const unsigned *vmap, unsigned digits)
{
    const Perftools__Profiles__Sample *s = pb->sample[k];
    int64_t f = ember_pow10(ember_profile_decimals(p) - digits), w;
    int err = 0;
    for (size_t i = 0; i < s->n_value && !err; i++)
        if (s->value[i])
            err = __builtin_mul_overflow(s->value[i], f, &w)
                      ? -ERANGE
                      : ember_profile_add_labelled(p, node, set, vmap[i], w);
    return err;
}

int ember_pprof_read_labels(struct ember_profile *p, const pb_profile *pb, size_t k, uint32_t node,
                            const unsigned *vmap, unsigned digits, const char *file,
                            struct ember_diag *d)
{
    const Perftools__Profiles__Sample *s = pb->sample[k];
    if (!s->n_label)
        return 0;
    struct ember_label *l = malloc(s->n_label * sizeof(*l));
    uint32_t set;
    int err = l ? 0 : -ENOMEM;
    for (size_t i = 0; i < s->n_label && !err; i++)
        err = label(pb, k, i, file, d, &l[i]);
    if (!err)
        err = ember_profile_label_set(p, l, s->n_label, &set);
    if (!err)
        err = add_part(p, pb, k, node, set, vmap, digits);
    free(l);
    return err;
}
