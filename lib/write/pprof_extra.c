/*
 * pprof_extra.c - the parts of pprof's Profile beyond stacks and frames:
 * the samples' labels (a stack's weight in parts, each with its label set,
 * then the rest without) and the profile's meta (period type and period,
 * time, duration, frame filters, doc_url, comments), as the model keeps
 * them (ember/model.h).
 *
 * Invariants: a label set's strings are taken once, when a sample first
 * carries it; the parts index lists the labelled parts sorted by node.
 */
#include "write/pprof_write.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int by_node(const void *a, const void *b)
{
    const struct pprof_part *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

int ember_pprof_parts_index(struct pprof_out *o)
{
    size_t n = ember_profile_labelled_count(o->p), sets = 0;
    o->parts = malloc((n ? n : 1) * sizeof(*o->parts));
    if (!o->parts)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        uint32_t set;
        int64_t w[EMBER_MAX_VALUES];
        ember_profile_labelled(o->p, i, &o->parts[i].node, &set, w);
        o->parts[i].index = i;
        sets = set >= sets ? set + 1 : sets;
    }
    qsort(o->parts, n, sizeof(*o->parts), by_node);
    o->nparts = n;
    o->set_first = calloc(sets ? sets : 1, sizeof(*o->set_first));
    return o->set_first ? 0 : -ENOMEM;
}

/* The first part of node in the index (nparts: none). */
static size_t first_part(const struct pprof_out *o, uint32_t node)
{
    size_t lo = 0, hi = o->nparts;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->parts[mid].node < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A label set's strings (key, str, unit per label; 0 for none), taken once. */
static int set_strings(struct pprof_out *o, uint32_t set, const uint64_t **out)
{
    const struct ember_label *l;
    size_t n = ember_profile_labels(o->p, set, &l);
    if (!o->set_first[set]) {
        if (EMBER_VEC_RESERVE(o->label_str, o->lcap, o->nlabel_str + 3 * n) < 0)
            return -ENOMEM;
        uint64_t *s = o->label_str + o->nlabel_str;
        int err = 0;
        for (size_t i = 0; i < n && !err; i++) {
            s[3 * i + 1] = s[3 * i + 2] = 0;
            err = ember_pprof_extra_string(o, l[i].key, l[i].key_len, &s[3 * i]);
            if (!err && l[i].str)
                err = ember_pprof_extra_string(o, l[i].str, l[i].str_len, &s[3 * i + 1]);
            if (!err && l[i].unit)
                err = ember_pprof_extra_string(o, l[i].unit, l[i].unit_len, &s[3 * i + 2]);
        }
        if (err)
            return err;
        o->set_first[set] = o->nlabel_str + 1;
        o->nlabel_str += 3 * n;
    }
    *out = o->label_str + o->set_first[set] - 1;
    return 0;
}

/* One Sample: the stack's locations, values w, labels of set (UINT32_MAX:
 * none). */
static int put_one(struct pprof_out *o, size_t nids, const int64_t *w, uint32_t set)
{
    Perftools__Profiles__Sample s = PERFTOOLS__PROFILES__SAMPLE__INIT, *sp = &s;
    const struct ember_label *l = NULL;
    size_t n = set == UINT32_MAX ? 0 : ember_profile_labels(o->p, set, &l);
    const uint64_t *str = NULL;
    Perftools__Profiles__Label *lb = malloc((n ? n : 1) * sizeof(*lb));
    Perftools__Profiles__Label **lp = malloc((n ? n : 1) * sizeof(*lp));
    int err = !lb || !lp ? -ENOMEM : n ? set_strings(o, set, &str) : 0;
    for (size_t i = 0; i < n && !err; i++) {
        perftools__profiles__label__init(&lb[i]);
        lb[i].key = (int64_t)str[3 * i];
        lb[i].str = (int64_t)str[3 * i + 1];
        lb[i].num = l[i].str ? 0 : l[i].num;
        lb[i].num_unit = (int64_t)str[3 * i + 2];
        lp[i] = &lb[i];
    }
    s.n_location_id = nids;
    s.location_id = o->ids;
    s.n_value = ember_profile_values(o->p);
    s.value = (int64_t *)w;
    s.n_label = n;
    s.label = lp;
    pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
    part.n_sample = 1;
    part.sample = &sp;
    if (!err)
        ember_pprof_pack(o, &part);
    free(lb);
    free(lp);
    return err ? err : o->gz->err;
}

int ember_pprof_put_samples(struct pprof_out *o, uint32_t node, size_t nids, const int64_t *self)
{
    unsigned nv = ember_profile_values(o->p);
    int64_t rest[EMBER_MAX_VALUES];
    memcpy(rest, self, nv * sizeof(*rest));
    int err = 0;
    for (size_t i = first_part(o, node); i < o->nparts && !err; i++) {
        uint32_t pnode, set;
        int64_t w[EMBER_MAX_VALUES];
        ember_profile_labelled(o->p, o->parts[i].index, &pnode, &set, w);
        if (pnode != node)
            break;
        for (unsigned v = 0; v < nv; v++)
            rest[v] -= w[v];
        err = put_one(o, nids, w, set);
    }
    bool any = false;
    for (unsigned v = 0; v < nv; v++)
        any |= rest[v] != 0;
    return err || !any ? err : put_one(o, nids, rest, UINT32_MAX);
}

/* A string of the meta (NULL: 0, none). */
static int meta_string(struct pprof_out *o, const char *s, int64_t *index)
{
    uint64_t i = 0;
    int err = s ? ember_pprof_extra_string(o, s, strlen(s), &i) : 0;
    *index = (int64_t)i;
    return err;
}

int ember_pprof_put_meta(struct pprof_out *o)
{
    const struct ember_profile_meta *m = ember_profile_meta(o->p);
    size_t nc = ember_profile_comment_count(o->p);
    pb_profile part = PERFTOOLS__PROFILES__PROFILE__INIT;
    Perftools__Profiles__ValueType pt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    int64_t *comments = malloc((nc ? nc : 1) * sizeof(*comments));
    int err = comments ? 0 : -ENOMEM;
    for (size_t i = 0; i < nc && !err; i++) {
        size_t len;
        const char *c = ember_profile_comment(o->p, i, &len);
        uint64_t k;
        err = ember_pprof_extra_string(o, c, len, &k);
        comments[i] = (int64_t)k;
    }
    if (!err && (m->period_type || m->period_unit)) {
        err = meta_string(o, m->period_type, &pt.type);
        if (!err)
            err = meta_string(o, m->period_unit, &pt.unit);
        part.period_type = &pt;
    }
    if (!err)
        err = meta_string(o, m->drop_frames, &part.drop_frames);
    if (!err)
        err = meta_string(o, m->keep_frames, &part.keep_frames);
    if (!err)
        err = meta_string(o, m->doc_url, &part.doc_url);
    part.period = m->period;
    part.time_nanos = m->time_nanos;
    part.duration_nanos = m->duration_nanos;
    part.n_comment = nc;
    part.comment = comments;
    if (!err)
        ember_pprof_pack(o, &part);
    free(comments);
    return err ? err : o->gz->err;
}

void ember_pprof_extra_release(struct pprof_out *o)
{
    free(o->parts);
    free(o->label_str);
    free(o->set_first);
}
