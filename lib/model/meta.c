/*
 * meta.c - what a profile says of itself beyond its stacks (pprof's
 * Profile fields: the period, when and how long it was taken, comments,
 * its frame filters, its documentation): kept as read, carried by the
 * transforms (ember_profile_meta_like), written back by the pprof writer.
 *
 * Invariants: p->extra is NULL until something is said; its strings live
 * in its own arena and die with the profile; meta's strings are NULL or
 * NUL-terminated copies.
 */
#include "model/profile_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

struct ember_profile_extra *ember_profile_extra(struct ember_profile *p)
{
    if (p->extra)
        return p->extra;
    struct ember_profile_extra *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    ember_arena_init(&x->arena);
    if (ember_strmap_init(&x->set_ids) < 0 || ember_strmap_init(&x->part_ids) < 0) {
        ember_profile_extra_free(x);
        return NULL;
    }
    return p->extra = x;
}

void ember_profile_extra_free(struct ember_profile_extra *x)
{
    if (!x)
        return;
    ember_arena_release(&x->arena);
    ember_strmap_release(&x->set_ids);
    ember_strmap_release(&x->part_ids);
    free(x->comments);
    free(x->sets);
    free(x->parts);
    ember_profile_counters_free(x);
    free(x);
}

const struct ember_profile_meta *ember_profile_meta(const struct ember_profile *p)
{
    static const struct ember_profile_meta none;
    return p->extra ? &p->extra->meta : &none;
}

/* A copy of s (NULL: NULL) in the arena; *bad when memory ran out. */
static const char *copy(struct ember_profile_extra *x, const char *s, bool *bad)
{
    if (!s)
        return NULL;
    const char *c = ember_arena_strndup(&x->arena, s, strlen(s));
    *bad |= !c;
    return c;
}

int ember_profile_set_meta(struct ember_profile *p, const struct ember_profile_meta *m)
{
    struct ember_profile_extra *x = ember_profile_extra(p);
    if (!x)
        return -ENOMEM;
    bool bad = false;
    struct ember_profile_meta c = *m;
    c.period_type = copy(x, m->period_type, &bad);
    c.period_unit = copy(x, m->period_unit, &bad);
    c.drop_frames = copy(x, m->drop_frames, &bad);
    c.keep_frames = copy(x, m->keep_frames, &bad);
    c.doc_url = copy(x, m->doc_url, &bad);
    if (bad)
        return -ENOMEM;
    x->meta = c;
    return 0;
}

int ember_profile_add_comment(struct ember_profile *p, const char *s, size_t len)
{
    struct ember_profile_extra *x = ember_profile_extra(p);
    const char *c = x ? ember_arena_strndup(&x->arena, s, len) : NULL;
    if (!c || EMBER_VEC_RESERVE(x->comments, x->ccap, x->ncomments + 1) < 0)
        return -ENOMEM;
    x->comments[x->ncomments++] = (struct ember_comment){c, len};
    return 0;
}

size_t ember_profile_comment_count(const struct ember_profile *p)
{
    return p->extra ? p->extra->ncomments : 0;
}

const char *ember_profile_comment(const struct ember_profile *p, size_t i, size_t *len)
{
    if (i >= ember_profile_comment_count(p)) {
        *len = 0;
        return "";
    }
    *len = p->extra->comments[i].len;
    return p->extra->comments[i].s;
}

int ember_profile_meta_like(struct ember_profile *dst, const struct ember_profile *src)
{
    dst->main_module = src->main_module;
    if (!src->extra)
        return 0;
    int err = ember_profile_set_meta(dst, &src->extra->meta);
    for (size_t i = 0; i < src->extra->ncomments && !err; i++)
        err =
            ember_profile_add_comment(dst, src->extra->comments[i].s, src->extra->comments[i].len);
    return err ? err : ember_profile_counters_like(dst, src);
}
