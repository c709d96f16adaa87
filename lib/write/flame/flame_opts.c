/*
 * flame_opts.c - a flame graph's options: their defaults (flamegraph.pl's),
 * the check that they can draw a graph, and the background gradient.
 *
 * Invariants: ember_flame_opts_check accepts only options that
 * ember_flame_render can draw; the library never prints: problems are
 * told through the diagnostic.
 */
#include "write/flame/color.h"
#include "ember/write.h"
#include "write/flame/flame_internal.h"
#include "base/diag.h"

#include <errno.h>
#include <string.h>

void ember_flame_opts_default(struct ember_flame_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->width = 1200;
    o->frame_height = 16;
    o->font_size = 12;
    o->font_width = 0.59;
    o->font_type = "Verdana";
    o->min_width = 0.1;
    o->name_type = "Function:";
    o->colors = NULL; /* from the profile: "mem" or "hot" */
    o->factor = 1;
}

int ember_flame_bg(const char *bgcolors, const char *colors, const char **c1, const char **c2)
{
    const char *bg = bgcolors;
    if (!bg || !bg[0]) {
        if (strcmp(colors, "mem") == 0)
            bg = "green";
        else if (!strcmp(colors, "io") || !strcmp(colors, "wakeup") || !strcmp(colors, "chain"))
            bg = "blue";
        else if (strstr(" red green blue aqua yellow purple orange ", colors) &&
                 !strchr(colors, ' ') && colors[0])
            bg = "grey";
        else
            bg = "yellow";
    }
    if (strcmp(bg, "yellow") == 0)
        *c1 = "#eeeeee", *c2 = "#eeeeb0";
    else if (strcmp(bg, "blue") == 0)
        *c1 = "#eeeeee", *c2 = "#e0e0ff";
    else if (strcmp(bg, "green") == 0)
        *c1 = "#eef2ee", *c2 = "#e0ffe0";
    else if (strcmp(bg, "grey") == 0)
        *c1 = "#f8f8f8", *c2 = "#e8e8e8";
    else if (bg[0] == '#' && strlen(bg) == 7 && strspn(bg + 1, "0123456789abcdefABCDEF") == 6)
        *c1 = *c2 = bg;
    else
        return -EINVAL;
    return 0;
}

/* A memory profile: one of its values is in bytes (a heap profile's
 * alloc_space, memtrace's bytes). Its other values (alloc_objects,
 * samples) count the same allocations: whichever is drawn, the graph shows
 * where memory is allocated, so the palette and the title say so. A
 * differential profile keeps its red and blue on flamegraph.pl's yellow. */
bool ember_flame_is_memory(const struct ember_profile *p)
{
    if (ember_profile_is_differential(p))
        return false;
    for (unsigned v = 0; v < ember_profile_values(p); v++)
        if (strcmp(ember_profile_value_unit(p, v), "bytes") == 0)
            return true;
    return false;
}

int ember_flame_opts_check(const struct ember_flame_opts *given, struct ember_diag *d)
{
    const char *bg1, *bg2;
    struct ember_flame_opts opts = *given, *o = &opts;
    if (!o->colors) /* chosen when the profile is known: either draws */
        o->colors = "hot";
    if (!ember_palette_known(o->colors))
        return ember_diag_set(d, -EINVAL, NULL, 0,
                              "unknown palette '%s' (expected hot, mem, io, wakeup, chain, java, "
                              "js, perl, red, green, blue, aqua, yellow, purple or orange)",
                              o->colors);
    if (ember_flame_bg(o->bgcolors, o->colors, &bg1, &bg2) < 0)
        return ember_diag_set(d, -EINVAL, NULL, 0,
                              "unknown --bgcolors \"%s\" (expected yellow, blue, green, grey or "
                              "#rrggbb)",
                              o->bgcolors);
    if (o->width <= 2 * XPAD)
        return ember_diag_set(d, -EINVAL, NULL, 0, "--width must be more than %d pixels", 2 * XPAD);
    if (o->frame_height <= 0 || o->font_size <= 0 || o->font_width <= 0)
        return ember_diag_set(d, -EINVAL, NULL, 0,
                              "--height, --fontsize and --fontwidth must be above 0");
    /* a frame as wide as the whole graph is the widest there is: hiding
     * those hides everything */
    if (o->min_width < 0 || (o->min_width_pct && o->min_width >= 100) ||
        (!o->min_width_pct && o->min_width >= o->width - 2 * XPAD))
        return ember_diag_set(d, -EINVAL, NULL, 0,
                              "--minwidth %g%s would hide every frame (expected under 100%% or "
                              "under the width, %d pixels)",
                              o->min_width, o->min_width_pct ? "%" : "", o->width - 2 * XPAD);
    if (o->notes && strpbrk(o->notes, "<>"))
        return ember_diag_set(d, -EINVAL, NULL, 0, "--notes cannot contain '<' or '>'");
    if (!(o->factor > 0))
        return ember_diag_set(d, -EINVAL, NULL, 0, "--factor must be above 0");
    return 0;
}
