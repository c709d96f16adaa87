/*
 * flame.c - flame graphs as SVG, drawn the way flamegraph.pl draws them.
 *
 * Layout is flamegraph.pl's flow(): stacks come in folded-line order (or
 * arrival order for flame charts); a frame stays open while consecutive
 * stacks share it and is closed, as one rectangle, when a stack diverges.
 * That gives exactly its frames, including its quirks (see walk.c). Frames
 * narrower than --minwidth are dropped as they close, so memory follows the
 * frames drawn, and whole subtrees narrower than --minwidth are not walked
 * at all (what they would add is summed beforehand, see
 * flame_layout.c's struct below).
 * Coordinates, number formats, colours and label truncation
 * follow flamegraph.pl byte for byte; frames are written by depth then x,
 * so the same input gives the same bytes (flamegraph.pl's order is Perl's
 * random hash order). Unlike flamegraph.pl, every text is escaped and
 * invalid UTF-8 is replaced, so the SVG is always well-formed XML.
 *
 * This file writes the document; the layout is in flame_layout.c, the
 * options' defaults and checks in flame_opts.c.
 */
#include "ember/write.h"
#include "write/flame/color.h"
#include "write/flame/flame_internal.h"
#include "base/writer.h"
#include "ember/model.h"
#include "base/diag.h"
#include "base/escape.h"
#include "base/table.h"
#include "base/utf8.h"
#include "base/vec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- text ------------------------------------------------------------- */

static void put_escaped(struct ember_writer *w, const char *s, bool quot)
{
    ember_escape_xml(w, s, strlen(s), quot);
}

/* Perl's default number formatting (buf: 64 bytes). */
static void num(char *buf, size_t cap, double v)
{
    (void)cap;
    ember_svg_g15(buf, v);
}

/* Where a function is, when the input says: ", file:line" in its title,
 * after the numbers (the name stays what precedes the last " ("). */
static void put_place(struct ember_writer *w, const struct ember_profile *p, uint32_t frame)
{
    struct ember_frame fr;
    ember_profile_frame(p, frame, &fr);
    if (!fr.file)
        return;
    ember_writer_puts(w, ", ");
    ember_escape_xml(w, fr.file, fr.file_len, true);
    if (fr.line)
        ember_writer_printf(w, ":%u", (unsigned)fr.line);
}

static bool strip_annotation(const char *s, size_t *len)
{
    if (*len >= 4 && s[*len - 4] == '_' && s[*len - 3] == '[' && s[*len - 1] == ']' &&
        strchr("kwij", s[*len - 2])) {
        *len -= 4;
        return true;
    }
    return false;
}

/* ---- the document ----------------------------------------------------- */

struct svg {
    struct ember_writer w;
    const struct ember_flame_opts *o;
    const struct ember_profile *p;
    double scale;   /* 10^decimals */
    double timemax; /* in scaled units */
    double wpt;     /* pixels per scaled unit */
    double height;
    uint32_t depthmax;
    double maxdelta;
    unsigned long long rng;
    bool scales;            /* amounts are times or sizes, shown in their units */
    const char *word;       /* else what a count counts: "samples" */
    uint64_t hidden_frames; /* narrower than --minwidth, not drawn */
    double hidden_width;    /* in scaled units */
};

/* A frame's amount in its title: "1,234 samples" (the rounded count, with
 * thousands separators, as flamegraph.pl prints it, and what is counted:
 * --countname, else the input's word), or, for times and sizes when no
 * --countname is given, "1.23 s", "12 MiB". */
static void put_amount(struct svg *s, double value, const char *rounded)
{
    char buf[96];
    if (s->scales && ember_unit_format(buf, sizeof(buf), value, ember_profile_unit(s->p))) {
        ember_writer_puts(&s->w, buf);
        return;
    }
    ember_svg_thousands(buf, rounded);
    ember_writer_puts(&s->w, buf);
    ember_writer_puts(&s->w, " ");
    put_escaped(&s->w, s->word, false);
}

/* The title: --title, else what is drawn, and for a memory profile which
 * of its values ("Memory Flame Graph: inuse_space"): a heap profile has
 * several, and the graph of one looks like that of another. */
static const char *default_title(const struct svg *s, char *buf, size_t cap)
{
    const struct ember_flame_opts *o = s->o;
    const char *what = o->flamechart ? "Flame Chart" : o->inverted ? "Icicle Graph" : "Flame Graph";
    if (o->title && o->title[0])
        return o->title;
    if (!ember_flame_is_memory(s->p))
        return what;
    snprintf(buf, cap, "Memory %s: %s", what, ember_profile_sample_type(s->p));
    return buf;
}

static void write_head(struct svg *s, const char *bg1, const char *bg2)
{
    struct ember_writer *w = &s->w;
    const struct ember_flame_opts *o = s->o;
    char h[64], fs[64], fs5[64], fw[64];
    num(h, sizeof(h), s->height);
    num(fs, sizeof(fs), o->font_size);
    num(fs5, sizeof(fs5), o->font_size + 5);
    num(fw, sizeof(fw), o->font_width);
    ember_writer_puts(w, "<?xml version=\"1.0\"");
    if (o->encoding) {
        ember_writer_puts(w, " encoding=\"");
        put_escaped(w, o->encoding, true);
        ember_writer_puts(w, "\"");
    }
    ember_writer_puts(w, " standalone=\"no\"?>\n"
                         "<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
                         "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n");
    ember_writer_printf(w,
                        "<svg version=\"1.1\" width=\"%d\" height=\"%s\" onload=\"init(evt)\" "
                        "viewBox=\"0 0 %d %s\" xmlns=\"http://www.w3.org/2000/svg\" "
                        "xmlns:xlink=\"http://www.w3.org/1999/xlink\" "
                        "xmlns:ember=\"urn:x-ember:flame\">\n",
                        o->width, h, o->width, h);
    ember_writer_puts(w, "<!-- Flame graph stack visualization, drawn by ember as FlameGraph's "
                         "flamegraph.pl draws it (https://github.com/brendangregg/FlameGraph). "
                         "-->\n<!-- NOTES: ");
    if (o->notes)
        put_escaped(w, o->notes, false);
    ember_writer_puts(
        w, " -->\n<defs>\n"
           "\t<linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\" >\n");
    ember_writer_printf(w, "\t\t<stop stop-color=\"%s\" offset=\"5%%\" />\n", bg1);
    ember_writer_printf(w, "\t\t<stop stop-color=\"%s\" offset=\"95%%\" />\n", bg2);
    ember_writer_puts(
        w, "\t</linearGradient>\n</defs>\n<style type=\"text/css\">\n\ttext { font-family:");
    put_escaped(w, o->font_type, false);
    ember_writer_printf(w, "; font-size:%spx; fill:rgb(0,0,0); }\n", fs);
    ember_writer_puts(w, "\t#search, #ignorecase { opacity:0.1; cursor:pointer; }\n"
                         "\t#search:hover, #search.show, #ignorecase:hover, #ignorecase.show { "
                         "opacity:1; }\n"
                         "\t#subtitle { text-anchor:middle; font-color:rgb(160,160,160); }\n");
    ember_writer_printf(w, "\t#title { text-anchor:middle; font-size:%spx}\n", fs5);
    ember_writer_puts(w, "\t#matched { text-anchor:end; }\n"
                         "\t#unzoom { cursor:pointer; }\n"
                         "\t#frames > *:hover { stroke:black; stroke-width:0.5; cursor:pointer; }\n"
                         "\t.hide { display:none; }\n\t.parent { opacity:0.5; }\n</style>\n"
                         "<script type=\"text/ecmascript\">\n<![CDATA[\nvar cfg = {nametype: ");
    ember_svg_js_string(w, o->name_type);
    char total[64];
    num(total, sizeof(total), s->timemax / s->scale);
    ember_writer_printf(w,
                        ", fontsize: %s, fontwidth: %s, xpad: %d, width: %d, inverted: %s, "
                        "searchcolor: \"rgb(230,0,230)\", total: %s};\n",
                        fs, fw, XPAD, o->width, o->inverted ? "true" : "false", total);
    ember_writer_put(w, ember_flame_script, ember_flame_script_len);
    ember_writer_puts(w, "]]>\n</script>\n");
}

static void text_el(struct svg *s, const char *id, double x, double y, const char *extra,
                    const char *str, bool escape)
{
    char ys[64];
    num(ys, sizeof(ys), y);
    ember_writer_printf(&s->w, "<text %s%s%s x=\"%.2f\" y=\"%s\" %s>", id ? "id=\"" : "",
                        id ? id : "", id ? "\"" : "", x, ys, extra);
    if (escape)
        put_escaped(&s->w, str, false);
    else
        ember_writer_puts(&s->w, str);
    ember_writer_puts(&s->w, "</text>\n");
}

static void write_chrome(struct svg *s)
{
    const struct ember_flame_opts *o = s->o;
    char hs[64];
    num(hs, sizeof(hs), s->height);
    double ypad2 = o->font_size * 2 + 10;
    ember_writer_printf(&s->w,
                        "<rect x=\"0.0\" y=\"0\" width=\"%.1f\" height=\"%.1f\" "
                        "fill=\"url(#background)\"  />\n",
                        (double)o->width, s->height);
    char buf[EMBER_UNIT_MAX + 32];
    text_el(s, "title", (int)(o->width / 2), o->font_size * 2, "",
            default_title(s, buf, sizeof(buf)), true);
    if (o->subtitle && o->subtitle[0])
        text_el(s, "subtitle", (int)(o->width / 2), o->font_size * 4, "", o->subtitle, true);
    /* what --minwidth left out, until the pointer first shows a frame */
    char hidden[160] = " ";
    if (s->hidden_frames)
        snprintf(hidden, sizeof(hidden),
                 "%llu frames narrower than %g%s not drawn (%.2f%% of the total)",
                 (unsigned long long)s->hidden_frames, o->min_width, o->min_width_pct ? "%" : " px",
                 100 * s->hidden_width / s->timemax);
    text_el(s, "details", XPAD, s->height - ypad2 / 2, "", hidden, false);
    text_el(s, "unzoom", XPAD, o->font_size * 2, "class=\"hide\"", "Reset Zoom", false);
    text_el(s, "search", o->width - XPAD - 100, o->font_size * 2, "", "Search", false);
    text_el(s, "ignorecase", o->width - XPAD - 16, o->font_size * 2, "", "ic", false);
    text_el(s, "matched", o->width - XPAD, s->height - ypad2 / 2, "", " ", false);
    ember_writer_puts(&s->w, "<g id=\"frames\">\n");
}

static struct ember_rgb frame_color(struct svg *s, const struct ember_flame_frame *f,
                                    const char *name, size_t len, char *fill, size_t cap)
{
    const struct ember_flame_opts *o = s->o;
    struct ember_rgb c;
    if (len == 2 && memcmp(name, "--", 2) == 0)
        c = (struct ember_rgb){160, 160, 160};
    else if (len == 1 && name[0] == '-')
        c = (struct ember_rgb){200, 200, 200};
    else if (ember_profile_is_differential(s->p))
        c = ember_color_scale((double)(o->negate ? -f->delta : f->delta), s->maxdelta);
    else {
        const char *mapped = o->palette ? ember_palette_get(o->palette, name, len) : NULL;
        if (mapped) {
            snprintf(fill, cap, "%s", mapped);
            return (struct ember_rgb){-1, 0, 0};
        }
        enum ember_color_mode mode = o->hash     ? EMBER_COLOR_HASH
                                     : o->random ? EMBER_COLOR_RANDOM
                                                 : EMBER_COLOR_NAME;
        struct ember_frame fr = {.kind = EMBER_FRAME_USER}; /* "all" has no record */
        if (f->depth > 0)
            ember_profile_frame(s->p, ember_profile_node_frame(s->p, f->node), &fr);
        c = ember_color(o->colors, mode, name, len, fr.kind, &s->rng);
        ember_svg_rgb(fill, c);
        if (o->palette)
            ember_palette_put(o->palette, name, len, fill);
        return c;
    }
    ember_svg_rgb(fill, c);
    return c;
}

/* Where a frame's rectangle goes. */
struct box {
    double x1, x2, y1, y2;
};

static struct box frame_box(const struct svg *s, const struct ember_flame_frame *f)
{
    const struct ember_flame_opts *o = s->o;
    struct box b;
    b.x1 = XPAD + (double)f->start * s->wpt;
    b.x2 = XPAD + (f->depth == 0 ? s->timemax : (double)f->end) * s->wpt;
    double fh = o->frame_height;
    double ypad1 = o->font_size * 3, ypad2 = o->font_size * 2 + 10;
    if (o->inverted) {
        b.y1 = ypad1 + f->depth * fh;
        b.y2 = ypad1 + (f->depth + 1) * fh - FRAMEPAD;
    } else {
        b.y1 = s->height - ypad2 - (f->depth + 1) * fh + FRAMEPAD;
        b.y2 = s->height - ypad2 - f->depth * fh;
    }
    return b;
}

/* The frame's element: a link when --nameattr gives it an href, else a
 * group, with the attributes --nameattr gives and its exact weight. */
static void frame_open(struct svg *s, const struct ember_flame_frame *f,
                       const struct ember_attrs *at)
{
    struct ember_writer *w = &s->w;
    const char *href = at ? at->href : NULL;
    if (href && href[0]) {
        ember_writer_puts(w, "<a xlink:href=\"");
        put_escaped(w, href, true);
        ember_writer_puts(w, "\" target=\"");
        put_escaped(w, at->target && at->target[0] ? at->target : "_top", true);
        ember_writer_puts(w, "\"");
        if (at->a_extra && at->a_extra[0])
            ember_writer_printf(w, " %s", at->a_extra);
    } else {
        ember_writer_puts(w, "<g");
    }
    if (at && at->id)
        ember_writer_puts(w, " id=\""), put_escaped(w, at->id, true), ember_writer_puts(w, "\"");
    if (at && at->klass)
        ember_writer_puts(w, " class=\""), put_escaped(w, at->klass, true),
            ember_writer_puts(w, "\"");
    if (at && at->g_extra && at->g_extra[0])
        ember_writer_printf(w, " %s", at->g_extra);
    char exact[40];
    ember_weight_format(exact, f->end - f->start, ember_profile_decimals(s->p));
    ember_writer_puts(w, " ember:w=\"");
    ember_writer_puts(w, exact);
    ember_writer_puts(w, "\">\n");
}

/* The title: "name (N samples, P%)", the change in a differential
 * profile, and the frame's source place. */
static void frame_title(struct svg *s, const struct ember_flame_frame *f, const char *name,
                        size_t len, const struct ember_attrs *at)
{
    const struct ember_flame_opts *o = s->o;
    struct ember_writer *w = &s->w;
    const struct ember_profile *p = s->p;
    double width = (double)(f->end - f->start) / s->scale;
    char sam[64], pct[64];
    double samv; /* sam read back, as atof would */
    ember_svg_fixed(sam, width * o->factor, 0, &samv);
    ember_writer_puts(w, "<title>");
    if (at && at->title && at->title[0]) {
        put_escaped(w, at->title, false);
    } else if (f->depth == 0) {
        ember_writer_puts(w, "all (");
        put_amount(s, width * o->factor, sam);
        ember_writer_puts(w, ", 100%)");
    } else {
        size_t tl = len;
        strip_annotation(name, &tl);
        ember_svg_fixed(pct, 100 * samv / (s->timemax / s->scale * o->factor), 2, NULL);
        ember_escape_xml(w, name, tl, true);
        ember_writer_puts(w, " (");
        put_amount(s, width * o->factor, sam);
        ember_writer_puts(w, ", ");
        ember_writer_puts(w, pct);
        ember_writer_puts(w, "%");
        if (ember_profile_is_differential(p)) {
            double d = (double)(o->negate ? -f->delta : f->delta) / s->scale;
            char dp[64];
            ember_svg_fixed(dp, 100 * d / (s->timemax / s->scale * o->factor), 2, NULL);
            ember_writer_printf(w, "; %s%s%%", d > 0 ? "+" : "", f->delta == 0 ? "0.00" : dp);
        }
        put_place(w, p, ember_profile_node_frame(p, f->node));
        ember_writer_puts(w, ")");
    }
    ember_writer_puts(w, "</title>");
}

/* The rectangle: width from the rounded x's, as flamegraph.pl does. */
static void frame_rect(struct svg *s, const struct ember_flame_frame *f, const char *name,
                       size_t len, struct box b)
{
    char fill[64], x1s[64], x2s[64], ys[64], ws[64], hs[64];
    double x1v, x2v; /* x1s and x2s read back, as atof would */
    frame_color(s, f, name, len, fill, sizeof(fill));
    ember_svg_fixed(x1s, b.x1, 1, &x1v);
    ember_svg_fixed(x2s, b.x2, 1, &x2v);
    num(ys, sizeof(ys), b.y1);
    ember_svg_fixed(ws, x2v - x1v, 1, NULL);
    ember_svg_fixed(hs, b.y2 - b.y1, 1, NULL);
    const char *rect[] = {"<rect x=\"",
                          x1s,
                          "\" y=\"",
                          ys,
                          "\" width=\"",
                          ws,
                          "\" height=\"",
                          hs,
                          "\" fill=\"",
                          fill,
                          "\" rx=\"2\" ry=\"2\" />\n"};
    for (size_t i = 0; i < sizeof(rect) / sizeof(rect[0]); i++)
        ember_writer_puts(&s->w, rect[i]);
}

/* The label: as many characters as fit, the last two as "..". */
static void frame_label(struct svg *s, const char *name, size_t len, struct box b)
{
    const struct ember_flame_opts *o = s->o;
    struct ember_writer *w = &s->w;
    int chars = (int)((b.x2 - b.x1) / (o->font_size * o->font_width));
    char ty[64], tx[64];
    num(ty, sizeof(ty), 3 + (b.y1 + b.y2) / 2);
    ember_svg_fixed(tx, b.x1 + 3, 2, NULL);
    const char *text[] = {"<text  x=\"", tx, "\" y=\"", ty, "\" >"};
    for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
        ember_writer_puts(w, text[i]);
    if (chars >= 3) {
        size_t tl = len, cut = 0, ncp = 0;
        strip_annotation(name, &tl);
        while (cut < tl && ncp < (size_t)chars) {
            ember_utf8_next(name, tl, &cut);
            ncp++;
        }
        if (cut < tl) {
            /* too long: keep chars - 2 code points, then ".." */
            size_t keep = 0;
            for (size_t k = 0; k + 2 < (size_t)chars; k++)
                ember_utf8_next(name, tl, &keep);
            ember_escape_xml(w, name, keep, false);
            ember_writer_puts(w, "..");
        } else {
            ember_escape_xml(w, name, tl, false);
        }
    }
    ember_writer_puts(w, "</text>\n");
}

static void write_frame(struct svg *s, const struct ember_flame_frame *f)
{
    const struct ember_flame_opts *o = s->o;
    const struct ember_profile *p = s->p;
    size_t len;
    const char *name =
        f->depth == 0 ? ""
                      : ember_profile_frame_name(p, ember_profile_node_frame(p, f->node), &len);
    if (f->depth == 0)
        len = 0;
    struct box b = frame_box(s, f);
    const struct ember_attrs *at = o->nameattr ? ember_nameattr_get(o->nameattr, name, len) : NULL;
    const char *href = at ? at->href : NULL;
    frame_open(s, f, at);
    frame_title(s, f, name, len, at);
    frame_rect(s, f, name, len, b);
    frame_label(s, name, len, b);
    ember_writer_puts(&s->w, href && href[0] ? "</a>\n" : "</g>\n");
}

static void warn(const struct ember_flame_opts *o, const char *msg)
{
    if (!o->warn)
        return;
    struct ember_diag d;
    ember_diag_set(&d, 0, NULL, 0, "%s", msg);
    o->warn(o->warn_ctx, &d);
}

/* The width the graph stands for: the profile's total, or --total when
 * that is larger (a smaller one is ignored, with a warning unless tiny). */
static double time_max(const struct ember_flame_opts *o, double time, double scale)
{
    char msg[160];
    if (o->total <= 0)
        return time;
    if (o->total * scale >= time)
        return o->total * scale;
    snprintf(msg, sizeof(msg),
             "--total %.15g is less than the actual total %.15g, so it is ignored", o->total,
             time / scale);
    if (o->total * scale / time > 0.02)
        warn(o, msg);
    return time;
}

static void warn_low_count(const struct ember_flame_opts *o, const struct ember_profile *p,
                           double time, double scale)
{
    char msg[160];
    const char *word = o->count_name ? o->count_name : ember_profile_count_word(p);
    if (word && strcmp(word, "samples") == 0 && time / scale < 100) {
        snprintf(msg, sizeof(msg), "stack count is low (%.15g); did something go wrong?",
                 time / scale);
        warn(o, msg);
    }
}

/* The document's settings, from the options and the layout. */
static void svg_init(struct svg *s, const struct ember_flame_opts *o, const struct ember_profile *p,
                     const struct ember_flame_layout *l, double scale, double timemax)
{
    s->o = o;
    s->p = p;
    s->scale = scale;
    s->timemax = timemax;
    s->wpt = (o->width - 2.0 * XPAD) / timemax;
    s->maxdelta = l->maxdelta > (int64_t)scale ? (double)l->maxdelta : scale;
    s->hidden_frames = l->hidden_frames;
    s->scales = !o->count_name && ember_unit_scales(ember_profile_unit(p));
    s->word = o->count_name ? o->count_name : ember_profile_count_word(p);
    if (!s->word)
        s->word = "samples";
    s->hidden_width = (double)l->hidden_width;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s->rng = ((unsigned long long)ts.tv_nsec << 16) ^ (unsigned long long)ts.tv_sec;
    for (size_t i = 0; i < l->nframes; i++)
        if (l->frames[i].depth > s->depthmax)
            s->depthmax = l->frames[i].depth;
    s->height = (s->depthmax + 1.0) * o->frame_height + o->font_size * 3 + (o->font_size * 2 + 10) +
                (o->subtitle && o->subtitle[0] ? o->font_size * 2 : 0);
}

static int write_svg(struct svg *s, const struct ember_flame_layout *l,
                     const struct ember_sink *out, const char *bg1, const char *bg2)
{
    ember_writer_init(&s->w, out);
    write_head(s, bg1, bg2);
    write_chrome(s);
    for (size_t i = 0; i < l->nframes; i++)
        write_frame(s, &l->frames[i]);
    ember_writer_puts(&s->w, "</g>\n</svg>\n");
    return ember_writer_flush(&s->w);
}

static int render(const struct ember_profile *p, const struct ember_flame_opts *given,
                  const struct ember_sink *out, struct ember_diag *d)
{
    const char *bg1, *bg2;
    struct ember_flame_opts opts = *given, *o = &opts;
    if (!o->colors) /* the palette follows what the profile measures */
        o->colors = ember_flame_is_memory(p) ? "mem" : "hot";
    int bad = ember_flame_opts_check(o, d);
    if (bad)
        return bad;
    ember_flame_bg(o->bgcolors, o->colors, &bg1, &bg2);
    unsigned wm = ember_profile_is_differential(p) ? 1 : ember_profile_selected(p);
    double scale = pow(10, ember_profile_decimals(p));
    double time = (double)ember_profile_total(p, wm);
    if (time <= 0)
        return ember_diag_set(d, -ENODATA, NULL, 0,
                              "no stack counts found: the input has no samples to draw");
    double timemax = time_max(o, time, scale);
    warn_low_count(o, p, time, scale);
    double wpt = (o->width - 2.0 * XPAD) / timemax;
    struct ember_flame_layout l = {
        .p = p, .wm = wm, .diff = ember_profile_is_differential(p), .root = {EMBER_ROOT, 0, 0, 0}};
    l.min_time = o->min_width_pct ? timemax * o->min_width / 100 : o->min_width / wpt;
    int err = ember_flame_layout_build(&l, o->flamechart);
    struct svg *s = err ? NULL : calloc(1, sizeof(*s));
    if (!err && !s)
        err = -ENOMEM;
    if (!err) {
        svg_init(s, o, p, &l, scale, timemax);
        err = write_svg(s, &l, out, bg1, bg2);
    }
    free(s);
    ember_flame_layout_free(&l);
    return err;
}

int ember_flame_render(const struct ember_profile *p, const struct ember_flame_opts *o,
                       const struct ember_sink *out, struct ember_diag *d)
{
    struct ember_profile *named; /* a flame graph draws names */
    int err = ember_profile_names(p, &named);
    if (!err)
        err = render(named ? named : p, o, out, d);
    ember_profile_free(named);
    return err;
}
