/*
 * flame_text.c - text as the SVG writer puts it beyond XML escaping (which
 * is base/escape.h's, invalid UTF-8 replaced): a JavaScript string literal,
 * colours and counts formatted as flamegraph.pl formats them.
 *
 * Invariants: what these write is the same bytes flamegraph.pl writes for
 * valid input; nothing they write can end the element or script it is in.
 */
#include "write/flame/color.h"
#include "write/flame/flame_internal.h"

#include <string.h>

/* A JavaScript string literal (for the script's configuration). */
void ember_svg_js_string(struct ember_writer *w, const char *s)
{
    ember_writer_put(w, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c < 0x20)
            ember_writer_printf(w, "\\u%04x", c);
        else
            ember_writer_put(w, s, 1);
    }
    ember_writer_put(w, "\"", 1);
}

/* "rgb(r,g,b)" */
void ember_svg_rgb(char *fill, struct ember_rgb c)
{
    size_t o = 0;
    int v[3] = {c.r, c.g, c.b};
    memcpy(fill, "rgb(", 4);
    o = 4;
    for (int i = 0; i < 3; i++) {
        o += ember_svg_fixed(fill + o, v[i], 0, NULL);
        fill[o++] = i < 2 ? ',' : ')';
    }
    fill[o] = '\0';
}

/* "1234567" -> "1,234,567" */
void ember_svg_thousands(char *out, const char *in)
{
    size_t n = strlen(in), o = 0, i = 0;
    if (in[0] == '-' || in[0] == '+')
        out[o++] = in[i++];
    size_t digits = n - i;
    for (; i < n; i++) {
        out[o++] = in[i];
        size_t left = n - i - 1;
        if (left > 0 && left % 3 == 0 && digits > 3)
            out[o++] = ',';
    }
    out[o] = '\0';
}
