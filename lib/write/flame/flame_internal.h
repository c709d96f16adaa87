/*
 * flame_internal.h - pieces shared by the SVG writer's files
 * (library-internal).
 */
#ifndef EMBER_RENDER_FLAME_INTERNAL_H
#define EMBER_RENDER_FLAME_INTERNAL_H

#include "ember/write.h"
#include "base/writer.h"

#include <stddef.h>

/* flame.js, embedded at build time. */
extern const char ember_flame_script[];
extern const size_t ember_flame_script_len;

/* v as printf("%.*f", prec, v) writes it, into buf (64 bytes); printed
 * (if not NULL) gets what strtod reads back from it. Returns the length. */
size_t ember_svg_fixed(char *buf, double v, unsigned prec, double *printed);
/* v as printf("%.15g", v) writes it (Perl's number format). */
size_t ember_svg_g15(char *buf, double v);

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
