/*
 * ember/flame.h - interactive SVG flame graphs, icicle graphs and flame
 * charts, drawn as flamegraph.pl draws them: the same frames, sizes,
 * colours and options, and a script for zoom, search and hover details.
 */
#ifndef EMBER_FLAME_H
#define EMBER_FLAME_H

#include "ember/error.h"
#include "ember/formats.h"
#include "ember/profile.h"

#include <stdbool.h>

/* Is this one of flamegraph.pl's palettes (hot, mem, io, ..., orange)? */
EMBER_API bool ember_palette_known(const char *palette);

/* name -> colour ("rgb(r,g,b)"), for --cp's palette.map. */
struct ember_palette;
EMBER_API struct ember_palette *ember_palette_new(void);
EMBER_API void ember_palette_free(struct ember_palette *pal);
/* Reads "name->rgb(r,g,b)" lines; a missing file is an empty palette. */
EMBER_API int ember_palette_load(struct ember_palette *pal, const char *path, struct ember_diag *d);
/* Writes every entry, sorted by name. */
EMBER_API int ember_palette_save(const struct ember_palette *pal, const struct ember_sink *out);

/* Per-function SVG attributes (--nameattr): "name<TAB>key=value<TAB>...". */
struct ember_nameattr;
EMBER_API int ember_nameattr_load(struct ember_nameattr **na, const char *path,
                                  struct ember_diag *d);
EMBER_API void ember_nameattr_free(struct ember_nameattr *na);

struct ember_flame_opts {
    const char *title;             /* NULL: "Flame Graph", "Icicle Graph" or "Flame Chart" */
    const char *subtitle;          /* NULL or "": none */
    int width;                     /* image width, px (1200) */
    int frame_height;              /* px (16) */
    double font_size;              /* (12) */
    double font_width;             /* average glyph width / font size (0.59) */
    const char *font_type;         /* ("Verdana") */
    double min_width;              /* frames narrower are omitted (0.1) ... */
    bool min_width_pct;            /* ... in px, or in % of the total */
    const char *count_name;        /* what counts count (NULL: the input's unit) */
    const char *name_type;         /* ("Function:") */
    const char *colors;            /* palette ("hot") */
    const char *bgcolors;          /* NULL: chosen from the palette */
    bool hash;                     /* colours from a hash of the name */
    bool random;                   /* colours at random */
    struct ember_palette *palette; /* --cp: consistent colours, updated */
    bool inverted;                 /* icicle graph */
    bool flamechart;               /* draw the profile's arrival sequence */
    bool negate;                   /* swap differential hues */
    const char *notes;             /* <!-- NOTES: ... --> */
    const char *encoding;          /* XML declaration's encoding */
    double total;                  /* > 0: total used for widths (if not below the real one) */
    double factor;                 /* multiplies displayed counts (1) */
    const struct ember_nameattr *nameattr;
    ember_warn_fn warn; /* --total ignored, low counts */
    void *warn_ctx;
};

EMBER_API void ember_flame_opts_default(struct ember_flame_opts *o);
/* -EINVAL (d says which option and why) for options that cannot draw:
 * unknown palette or background, sizes, a --minwidth that hides all. */
EMBER_API int ember_flame_opts_check(const struct ember_flame_opts *o, struct ember_diag *d);

/* Draws p. -ENODATA (d says so) when the profile holds no samples. */
EMBER_API int ember_flame_render(const struct ember_profile *p, const struct ember_flame_opts *o,
                                 const struct ember_sink *out, struct ember_diag *d);

#endif
