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
 *
 * Two views: folded stacks, flame graphs and reports join frames with ';'
 * and lines with '\n', and see a ';' in a name as ':' and a control
 * character as "\xNN" (ember_frame_spell_folded); the JSON exports name
 * functions as read, ';' kept (ember_profile_function_names), and escape
 * what JSON must.
 */
#include "model/profile_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* What all the frames of one name in the view agree on. */
struct agreed {
    bool seen;
    struct ember_frame_loc loc; /* fields that disagree are zero */
};

struct names {
    bool folded;                         /* ';' spelled ':' */
    const struct ember_profile *scratch; /* the view's names, each once */
    struct agreed *by_name;              /* by the view's name */
    uint32_t *name_of;                   /* src frame -> its view name in scratch */
};

/* The kind a view's frame keeps, for colours: the one its name ends with
 * ("f_[k]"; not "f_[i]:file:12", which flamegraph.pl colours by the rest). */
static enum ember_frame_kind shown_kind(const struct ember_frame_loc *l)
{
    return l->kind_in_name && !l->place_in_name ? (enum ember_frame_kind)l->kind : EMBER_FRAME_USER;
}

static void agree(struct agreed *a, const struct ember_frame_loc *l)
{
    if (!l->detailed)
        return; /* a name alone says nothing against the others */
    if (!a->seen) {
        a->seen = true;
        a->loc = *l;
        a->loc.kind = shown_kind(l);
        a->loc.has_address = false;
        a->loc.address = 0;
        a->loc.place_in_name = a->loc.kind_in_name = false; /* the view's name spells them */
        return;
    }
    if (a->loc.kind != shown_kind(l))
        a->loc.kind = EMBER_FRAME_USER;
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

/* Frame f's name in the view, interned in scratch: FlameGraph's spelling
 * of its record (ember_frame_spell: "name_[k]", "name:file:line"), and
 * ';' as ':', control characters as "\xNN" in the folded view. */
static int view_name(struct ember_profile *scratch, const struct ember_profile *p, uint32_t f,
                     bool folded, uint32_t *id)
{
    struct ember_frame fr;
    ember_profile_frame(p, f, &fr);
    size_t (*spell)(const struct ember_frame *, char *, size_t) =
        folded ? ember_frame_spell_folded : ember_frame_spell;
    if (folded ? !ember_frame_spelled_folded(&fr) : !ember_frame_spelled(&fr))
        return ember_frames_intern(&scratch->frames, fr.name, fr.name_len, id);
    size_t n = spell(&fr, NULL, 0);
    char *buf = malloc(n + 1);
    if (!buf)
        return -ENOMEM;
    spell(&fr, buf, n + 1);
    int err = ember_frames_intern(&scratch->frames, buf, n, id);
    free(buf);
    return err;
}

static int name_frame(void *ctx, struct ember_profile *dst, const struct ember_profile *src,
                      uint32_t f, uint32_t *out)
{
    struct names *nm = ctx;
    (void)src;
    uint32_t v = nm->name_of[f];
    const struct agreed *a = &nm->by_name[v];
    const char *name = nm->scratch->frames.str[v];
    size_t len = nm->scratch->frames.len[v];
    return a->seen ? ember_frames_intern_loc(&dst->frames, name, len, &a->loc, out)
                   : ember_frames_intern(&dst->frames, name, len, out);
}

/* Whether some name is spelled otherwise in the folded view: a ';' or a
 * control character (looked for when a view is asked for, not by every
 * reader as it interns names: most inputs have none). */
static bool has_unfit(const struct ember_frames *f)
{
    for (uint32_t i = 0; i < f->count; i++)
        if (ember_name_unfit_folded(f->str[i], f->len[i]))
            return true;
    return false;
}

/* Whether p differs from its view: some frame spelled otherwise. */
static bool needs_view(const struct ember_profile *p, bool folded)
{
    if (p->view == EMBER_VIEW_FOLDED || (p->view == EMBER_VIEW_NAMES && !folded))
        return false;
    bool names_only = p->view == EMBER_VIEW_NAMES || !ember_profile_detailed(p);
    return !names_only || (folded && has_unfit(&p->frames));
}

static int names_view(const struct ember_profile *p, bool folded, struct ember_profile **out)
{
    *out = NULL;
    if (!needs_view(p, folded))
        return 0;
    struct ember_profile *scratch = ember_profile_new(); /* the view's names */
    struct names nm = {folded, scratch, calloc(p->frames.count, sizeof(*nm.by_name)),
                       malloc(p->frames.count * sizeof(*nm.name_of))};
    int err = scratch && nm.by_name && nm.name_of ? 0 : -ENOMEM;
    /* scratch gets at most one name per frame of p: its ids stay < count */
    for (uint32_t f = 0; f < p->frames.count && !err; f++)
        err = view_name(scratch, p, f, folded, &nm.name_of[f]);
    for (uint32_t f = 0; f < p->frames.count && !err; f++)
        agree(&nm.by_name[nm.name_of[f]], &p->frames.loc[f]);
    if (!err)
        err = ember_profile_map_frames(p, name_frame, &nm, out);
    if (!err)
        (*out)->view = folded ? EMBER_VIEW_FOLDED : EMBER_VIEW_NAMES;
    ember_profile_free(scratch);
    free(nm.by_name);
    free(nm.name_of);
    return err;
}

bool ember_profile_is_names(const struct ember_profile *p)
{
    return !needs_view(p, true);
}

int ember_profile_names(const struct ember_profile *p, struct ember_profile **out)
{
    return names_view(p, true, out);
}

int ember_profile_function_names(const struct ember_profile *p, struct ember_profile **out)
{
    return names_view(p, false, out);
}

/* A frame as go tool pprof -lines names it: "function file:line"; one
 * without a file keeps its record (a process root stays one, "f_[k]" is
 * spelled by the names view as ever). */
static int line_name(void *ctx, struct ember_profile *dst, const struct ember_profile *src,
                     const uint32_t *in, size_t n, struct ember_stack_out *out)
{
    (void)ctx;
    char *buf = NULL;
    size_t cap = 0;
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        const struct ember_frame_loc *l = &src->frames.loc[in[i]];
        size_t len = src->frames.len[in[i]];
        if (!l->detailed || !l->file) {
            err = ember_stack_out_copy(out, dst, src, in[i]);
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
    return ember_profile_map(p, line_name, NULL, out);
}
