/*
 * ember/write.h - a profile written for people and for the tools they use:
 * folded stacks, SVG flame graphs, pprof, speedscope, Chrome's trace JSON,
 * CSV/TSV, and text reports. Every writer walks the profile and streams to
 * an ember_sink: memory grows with the number of distinct stacks, never
 * with samples.
 *
 * Folded stacks: one line per distinct stack, sorted bytewise,
 * "frame;frame;frame COUNT" (two counts for differential profiles).
 */
#ifndef EMBER_WRITE_H
#define EMBER_WRITE_H

#include "ember/base.h"
#include "ember/model.h"

#include <stdbool.h>
#include <stddef.h>

/* Folded stacks, one line per distinct stack, sorted bytewise:
 * "frame;frame;frame COUNT" (two counts for differential profiles). */
EMBER_API int ember_write_folded(const struct ember_profile *p, const struct ember_sink *out);

/* ---- conversions
 *
 * writing a profile for the tools people already use:
 * pprof (go tool pprof), speedscope, Chrome's trace JSON (Perfetto,
 * speedscope) and CSV/TSV (spreadsheets, pandas).
 *
 * Every writer walks the profile and streams to an ember_sink: memory grows
 * with the number of distinct stacks, never with samples. Frame names are
 * written as they are, except that JSON, which must be UTF-8, gets U+FFFD
 * for invalid bytes. Formats with one value per stack take the last metric
 * of a differential profile (the "after" counts a flame graph draws).
 * Weights stay exact: decimals are written as decimals, or, in pprof's
 * integers, scaled (and the file says by how much, for ember to read back).
 */

#define EMBER_SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

struct ember_convert_opts {
    const char *name;     /* the profile's title: speedscope's name, Chrome's process */
    const char *exporter; /* speedscope's "exporter", e.g. "ember@0.1.0" */
    char separator;       /* CSV: ',' or '\t' (TSV) */
};

/* name "profile", exporter "ember", separator ','. Writers take NULL
 * options, or NULL and 0 fields, as these defaults. */
EMBER_API void ember_convert_opts_default(struct ember_convert_opts *o);

/* pprof's profile.proto, gzipped: one sample per stack (location ids leaf
 * first) and labelled part of it, one Function per frame and one Location
 * per frame and the calls inlined at its address, the modules as Mappings
 * (the main program's first), every value as a sample type ("samples"/
 * "count" unless a reader said otherwise; a differential profile gets
 * "before" and "after"), and what the profile says of itself (period,
 * times, comments, frame filters). */
EMBER_API int ember_write_pprof(const struct ember_profile *p, const struct ember_convert_opts *o,
                                const struct ember_sink *out, struct ember_diag *d);

/* speedscope's file format: a sampled profile (stacks root first, with
 * their weights); an evented one (open/close events in arrival order) when
 * the profile kept its arrival sequence. Weights must not be negative. */
EMBER_API int ember_write_speedscope(const struct ember_profile *p,
                                     const struct ember_convert_opts *o,
                                     const struct ember_sink *out, struct ember_diag *d);

/* Chrome's Trace Event JSON: complete ("X") events laid out as a flame
 * chart on one thread, in arrival order when the profile kept it, else in
 * folded-stack order. Time weights become their microseconds; other units
 * (samples, bytes) are drawn 1 unit = 1 us. Weights must not be negative. */
EMBER_API int ember_write_chrome(const struct ember_profile *p, const struct ember_convert_opts *o,
                                 const struct ember_sink *out, struct ember_diag *d);

/* One row per stack, "stack,weight" ("stack,before,after" for differential
 * profiles) after a header row, sorted as folded stacks are; fields quoted
 * as RFC 4180 says (also with a tab separator, as Python's csv and pandas
 * read it). */
EMBER_API int ember_write_csv(const struct ember_profile *p, const struct ember_convert_opts *o,
                              const struct ember_sink *out, struct ember_diag *d);

/*
 * Writers are table rows too: a name, the file name endings that choose it
 * (`ember record -o prof.svg`), a description, whether it is binary (not for
 * a terminal), and the function. Adding a writer is one file with its row,
 * and the row in lib/write/writers.c.
 */
struct ember_writer_format {
    const char *name;
    const char *extensions; /* space-separated, the longest first: ".pb.gz .pb" */
    const char *description;
    bool binary;
    int (*write)(const struct ember_profile *p, const struct ember_convert_opts *o,
                 const struct ember_sink *out, struct ember_diag *d);
};

/* The writers, ending with NULL. */
EMBER_API const struct ember_writer_format *const *ember_writer_formats(void);
EMBER_API const struct ember_writer_format *ember_writer_find(const char *name);
/* The writer whose extension ends path (NULL: none). */
EMBER_API const struct ember_writer_format *ember_writer_for_path(const char *path);

/* ---- flame graphs
 *
 * interactive SVG flame graphs, icicle graphs and flame
 * charts, drawn as flamegraph.pl draws them: the same frames, sizes,
 * colours and options, and a script for zoom, search and hover details.
 */

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
    /* NULL: "Flame Graph", "Icicle Graph" or "Flame Chart", after "Memory " and
     * before ": VALUE" for a memory profile (a value in bytes, not differential) */
    const char *title;
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
    const char *colors;            /* palette; NULL: "mem" for a memory profile, else "hot" */
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

/* ---- reports
 *
 * a profile as text tables: the top functions (as
 * `pprof -top`), the call tree with percentages, a function's callers and
 * callees; as aligned text, CSV or TSV.
 *
 * A function's self weight is the weight of the stacks it ends; its total
 * weight is that of the stacks it is on, counted once per stack however
 * often it recurses. Percentages are of the profile's total.
 */

enum ember_table { EMBER_TABLE_TEXT, EMBER_TABLE_CSV, EMBER_TABLE_TSV };

struct ember_report_opts {
    unsigned metric;      /* differential profiles: 0 before, 1 after; else the selected value */
    size_t top;           /* rows of the top table (0: all) */
    bool by_total;        /* top: sorted by total weight rather than self */
    double percent_limit; /* rows (tree nodes) below this % of the total left out */
    enum ember_table format;
};

/* The functions by self (or total) weight. */
EMBER_API int ember_report_top(const struct ember_profile *p, const struct ember_report_opts *o,
                               const struct ember_sink *out);
/* The call tree from the roots, heaviest child first, one line per node. */
EMBER_API int ember_report_tree(const struct ember_profile *p, const struct ember_report_opts *o,
                                const struct ember_sink *out);
/* The callers (or callees) of the function named name, with the weight of
 * the calls; -ENOENT when no frame has that name. */
EMBER_API int ember_report_neighbours(const struct ember_profile *p,
                                      const struct ember_report_opts *o, const char *name,
                                      bool callers, const struct ember_sink *out);

#endif
