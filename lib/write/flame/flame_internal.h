/*
 * flame_internal.h - pieces shared by the SVG writer's files
 * (library-internal).
 */
#ifndef EMBER_WRITE_FLAME_INTERNAL_H
#define EMBER_WRITE_FLAME_INTERNAL_H

#include "write/flame/color.h"
#include "ember/write.h"
#include "base/writer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* pixels: the graph's side margins, the gap between a frame and the next */
enum { XPAD = 10, FRAMEPAD = 1 };

struct below; /* flame_layout.c's pruning sums */

/* A frame drawn: its node, its depth, its extent in the profile's units
 * and, in a differential profile, its change. */
struct ember_flame_frame {
    uint32_t node;
    uint32_t depth;
    int64_t start, end;
    int64_t delta;
};

/* A frame still open while flow() walks the stacks. */
struct ember_flame_open {
    uint32_t node;
    int64_t start;
    int64_t delta;
    int64_t hidden; /* width of the children too narrow to draw */
};

/* flamegraph.pl's flow() state, and the frames it closed. */
struct ember_flame_layout {
    const struct ember_profile *p;
    const struct below *below; /* flame_layout.c's, while walking */
    unsigned wm;               /* the value drawn: AFTER's in a differential profile */
    bool diff;
    int64_t time;
    double min_time;        /* frames narrower are dropped ... */
    uint64_t hidden_frames; /* ... and counted, */
    int64_t hidden_width;   /* with the width they leave empty under drawn frames */
    int64_t maxdelta;
    struct ember_flame_open *open;
    size_t nopen, ocap;
    struct ember_flame_frame *frames;
    size_t nframes, fcap;
    struct ember_flame_open root; /* "all" */
};

/* Lays out l's profile (l->p, wm, diff, min_time and root set): l->frames,
 * sorted by depth then x, and what was hidden. flamechart: stacks in
 * arrival order, not merged. */
int ember_flame_layout_build(struct ember_flame_layout *l, bool flamechart);
void ember_flame_layout_free(struct ember_flame_layout *l);

/* flame.js, embedded at build time. */
extern const char ember_flame_script[];
extern const size_t ember_flame_script_len;

/* s as a JavaScript string literal (for the script's configuration). */
void ember_svg_js_string(struct ember_writer *w, const char *s);
/* c as "rgb(r,g,b)", into fill (64 bytes). */
void ember_svg_rgb(char *fill, struct ember_rgb c);
/* in with thousands separators: "1234567" -> "1,234,567". */
void ember_svg_thousands(char *out, const char *in);

/* v as printf("%.*f", prec, v) writes it, into buf (64 bytes); printed
 * (if not NULL) gets what strtod reads back from it. Returns the length. */
size_t ember_svg_fixed(char *buf, double v, unsigned prec, double *printed);
/* v as printf("%.15g", v) writes it (Perl's number format). */
size_t ember_svg_g15(char *buf, double v);

/* Whether p measures memory (a value in bytes): the "mem" palette and a
 * title that says which value, unless the options say otherwise. */
bool ember_flame_is_memory(const struct ember_profile *p);

/* The background gradient for --bgcolors (NULL: from the palette). */
int ember_flame_bg(const char *bgcolors, const char *colors, const char **c1, const char **c2);

/* --cp palette lookups; put copies name and colour. */
const char *ember_palette_get(const struct ember_palette *pal, const char *name, size_t len);
int ember_palette_put(struct ember_palette *pal, const char *name, size_t len, const char *color);

/* --nameattr attributes of one function (NULL members: absent). */
struct ember_attrs {
    const char *title, *klass, *id, *href, *target, *g_extra, *a_extra;
};
const struct ember_attrs *ember_nameattr_get(const struct ember_nameattr *na, const char *name,
                                             size_t len);

#endif
