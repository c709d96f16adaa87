/*
 * names.c - a profile as its functions: what views that show function
 * names (folded stacks, flame graphs, reports, speedscope) draw.
 *
 * Frames that differ only in where they come from (two lines of one
 * function, two addresses) are one frame in these views, and their stacks
 * one stack: a pprof profile read with its locations draws as pprof's own
 * flame graph does. What every frame of a name agrees on is kept with it
 * (its file, its line, its start line, its module), so that a tooltip can
 * say where the function is; the rest is dropped. A view is built once:
 * the result is marked as one, and profiles whose frames are names already
 * are not copied.
 */
#include "ember/transform.h"
#include "map.h"
#include "util/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* What all the frames of one name agree on. */
struct agreed {
    bool seen;
    struct ember_frame_loc loc; /* fields that disagree are zero */
};

struct names {
    struct agreed *by_name; /* by the name's frame in src (a name alone) */
    uint32_t *name_of;      /* src frame -> its name's frame in src */
};

static void agree(struct agreed *a, const struct ember_frame_loc *l)
{
    if (!l->detailed)
        return; /* a name alone says nothing against the others */
    if (!a->seen) {
        a->seen = true;
        a->loc = *l;
        a->loc.kind = EMBER_FRAME_USER;
        a->loc.has_address = false;
        a->loc.address = 0;
        return;
    }
    if (a->loc.file != l->file)
        a->loc.file = NULL, a->loc.file_len = 0;
    if (a->loc.line != l->line)
        a->loc.line = 0;
    if (a->loc.column != l->column)
        a->loc.column = 0;
    if (a->loc.start_line != l->start_line)
        a->loc.start_line = 0;
    if (a->loc.module != l->module)
        a->loc.module = EMBER_NO_MODULE;
}

static int names_only(void *ctx, struct ember_profile *dst, const struct ember_profile *src,
                      const uint32_t *in, size_t n, struct stack_out *out)
{
    struct names *nm = ctx;
    for (size_t i = 0; i < n; i++) {
        const struct agreed *a = &nm->by_name[nm->name_of[in[i]]];
        if (!a->seen) {
            int err = ember_stack_out_copy(out, dst, src, in[i]); /* a name alone */
            if (err)
                return err;
            continue;
        }
        if (EMBER_VEC_RESERVE(out->frames, out->cap, out->n + 1) < 0)
            return -ENOMEM;
        int err = ember_frames_intern_loc(&dst->frames, src->frames.str[in[i]],
                                          src->frames.len[in[i]], &a->loc, &out->frames[out->n++]);
        if (err)
            return err;
    }
    return 0;
}

int ember_profile_names(const struct ember_profile *p, struct ember_profile **out)
{
    *out = NULL;
    if (!ember_profile_detailed(p) || p->names_view)
        return 0;
    struct ember_profile *scratch = ember_profile_new(); /* names alone, to group frames */
    struct names nm = {calloc(p->frames.count, sizeof(*nm.by_name)),
                       malloc(p->frames.count * sizeof(*nm.name_of))};
    int err = scratch && nm.by_name && nm.name_of ? 0 : -ENOMEM;
    for (uint32_t f = 0; f < p->frames.count && !err; f++) {
        uint32_t s;
        err = ember_frames_intern(&scratch->frames, p->frames.str[f], p->frames.len[f], &s);
        if (!err) /* scratch ids follow p's names in order: s < count */
            nm.name_of[f] = s;
    }
    for (uint32_t f = 0; f < p->frames.count && !err; f++)
        agree(&nm.by_name[nm.name_of[f]], &p->frames.loc[f]);
    if (!err)
        err = ember_profile_map(p, names_only, &nm, out);
    if (!err)
        (*out)->names_view = true;
    ember_profile_free(scratch);
    free(nm.by_name);
    free(nm.name_of);
    return err;
}

/* A frame as go tool pprof -lines names it: "function file:line". */
static int line_name(void *ctx, struct ember_profile *dst, const struct ember_profile *src,
                     const uint32_t *in, size_t n, struct stack_out *out)
{
    (void)ctx;
    char *buf = NULL;
    size_t cap = 0;
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        const struct ember_frame_loc *l = &src->frames.loc[in[i]];
        size_t len = src->frames.len[in[i]];
        if (!l->detailed || !l->file) {
            err = ember_stack_out_name(out, dst, src->frames.str[in[i]], len);
            continue;
        }
        size_t need = len + l->file_len + 16;
        if (need > cap) {
            char *b = realloc(buf, need);
            if (!b) {
                err = -ENOMEM;
                break;
            }
            buf = b;
            cap = need;
        }
        memcpy(buf, src->frames.str[in[i]], len);
        buf[len++] = ' ';
        memcpy(buf + len, l->file, l->file_len);
        len += l->file_len;
        if (l->line)
            len += (size_t)snprintf(buf + len, cap - len, ":%u", (unsigned)l->line);
        err = ember_stack_out_name(out, dst, buf, len);
    }
    free(buf);
    return err;
}

int ember_profile_lines(const struct ember_profile *p, struct ember_profile **out)
{
    int err = ember_profile_map(p, line_name, NULL, out);
    if (!err)
        (*out)->names_view = true;
    return err;
}
