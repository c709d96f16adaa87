/*
 * flame_text.c - text as the SVG writer puts it: XML-escaped (always
 * well-formed, invalid UTF-8 replaced), as a JavaScript string literal,
 * colours and counts formatted as flamegraph.pl formats them.
 *
 * Invariants: what these write is the same bytes flamegraph.pl writes for
 * valid input; nothing they write can end the element or script it is in.
 */
#include "color.h"
#include "flame_internal.h"

#include <string.h>

/* XML text: & < > (and " in attributes) escaped; bytes that are not valid
 * UTF-8, and control characters XML forbids, become U+FFFD. */
void ember_svg_escape(struct ember_writer *w, const char *s, size_t n, bool quot)
{
    size_t i = 0, run = 0;
    while (i < n) {
        size_t at = i;
        unsigned char c = (unsigned char)s[i];
        const char *rep = NULL;
        size_t adv = 1;
        if (c == '&')
            rep = "&amp;";
        else if (c == '<')
            rep = "&lt;";
        else if (c == '>')
            rep = "&gt;";
        else if (c == '"' && quot)
            rep = "&quot;";
        else if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
            rep = "\xef\xbf\xbd";
        else if (c >= 0x80) {
            size_t j = i;
            unsigned cp = ember_utf8_next(s, n, &j);
            adv = j - i;
            if (adv == 1 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
                (adv == 3 && cp < 0x800) || (adv == 4 && cp < 0x10000) || (adv == 2 && cp < 0x80))
                rep = "\xef\xbf\xbd", adv = 1;
        }
        if (rep) {
            ember_writer_put(w, s + run, at - run);
            ember_writer_puts(w, rep);
            run = at + adv;
        }
        i = at + adv;
    }
    ember_writer_put(w, s + run, n - run);
}

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
