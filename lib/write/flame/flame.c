/*
 * flame.c - flame graphs as SVG, drawn the way flamegraph.pl draws them.
 *
 * Layout is flamegraph.pl's flow(): stacks come in folded-line order (or
 * arrival order for flame charts); a frame stays open while consecutive
 * stacks share it and is closed, as one rectangle, when a stack diverges.
 * That gives exactly its frames, including its quirks (see walk.c). Frames
 * narrower than --minwidth are dropped as they close, so memory follows the
 * frames drawn, and whole subtrees narrower than --minwidth are not walked
 * at all (what they would add is summed beforehand, see struct below).
 * Coordinates, number formats, colours and label truncation
 * follow flamegraph.pl byte for byte; frames are written by depth then x,
 * so the same input gives the same bytes (flamegraph.pl's order is Perl's
 * random hash order). Unlike flamegraph.pl, every text is escaped and
 * invalid UTF-8 is replaced, so the SVG is always well-formed XML.
 */
#include "ember/write.h"
#include "ember/transform.h"
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

enum { XPAD = 10, FRAMEPAD = 1 };

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
    o->colors = "hot";
    o->factor = 1;
}

/* ---- layout ----------------------------------------------------------- */

struct frame {
    uint32_t node;
    uint32_t depth;
    int64_t start, end;
    int64_t delta;
};

struct open_frame {
    uint32_t node;
    int64_t start;
    int64_t delta;
    int64_t hidden; /* width of the children too narrow to draw */
};

/* For pruning: per node, what the lines below it add to the layout. A
 * subtree narrower than --minwidth draws nothing: its frames are all
 * hidden, so walking it only counts them, adds its width to the time and
 * (differential) its deltas to the largest delta. Frames are nodes, but a
 * node whose line and lines below are split by a sibling's (the case
 * walk.c describes: a sibling whose name extends the node's by a byte
 * below ';') makes two frames: those are found by looking the siblings
 * up. A node with too many possible such siblings to look up keeps its
 * ancestors walked as before. */
struct below {
    int64_t *total;   /* of the drawn metric, over the subtree, the node included */
    uint32_t *frames; /* the frames of the nodes strictly below */
    int64_t *maxd;    /* differential: largest |after - before| strictly below */
    uint64_t *skip;   /* bit per node: walk nothing below it */
};

struct layout {
    const struct ember_profile *p;
    const struct below *below;
    unsigned wm; /* the value drawn: AFTER's in a differential profile */
    bool diff;
    int64_t time;
    double min_time;        /* frames narrower are dropped ... */
    uint64_t hidden_frames; /* ... and counted, */
    int64_t hidden_width;   /* with the width they leave empty under drawn frames */
    int64_t maxdelta;
    struct open_frame *open;
    size_t nopen, ocap;
    struct frame *frames;
    size_t nframes, fcap;
    struct open_frame root; /* "all" */
};

/* of closes at depth; its parent is open at depth - 1 (the root at 0). */
static int close_frame(struct layout *l, size_t depth, const struct open_frame *of,
                       struct open_frame *parent)
{
    if ((double)(l->time - of->start) < l->min_time) {
        l->hidden_frames++;
        if (parent)
            parent->hidden += l->time - of->start;
        return 0;
    }
    l->hidden_width += of->hidden;
    if (EMBER_VEC_RESERVE(l->frames, l->fcap, l->nframes + 1) < 0)
        return -ENOMEM;
    l->frames[l->nframes++] =
        (struct frame){of->node, (uint32_t)depth, of->start, l->time, of->delta};
    return 0;
}

/* Makes path the open frames, closing those it leaves. */
static int open_path(struct layout *l, const uint32_t *path, size_t depth)
{
    size_t same = 0;
    while (same < l->nopen && same < depth && l->open[same].node == path[same])
        same++;
    for (size_t k = l->nopen; k-- > same;) {
        int err = close_frame(l, k + 1, &l->open[k], k ? &l->open[k - 1] : &l->root);
        if (err)
            return err;
    }
    if (EMBER_VEC_RESERVE(l->open, l->ocap, depth) < 0)
        return -ENOMEM;
    for (size_t k = same; k < depth; k++)
        l->open[k] = (struct open_frame){path[k], l->time, 0, 0};
    l->nopen = depth;
    return 0;
}

static int flow(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct layout *l = ctx;
    if (!l->diff && self[l->wm] == 0)
        return 0; /* a stack with weight in other values only */
    int err = open_path(l, path, depth);
    if (err)
        return err;
    if (l->diff) {
        int64_t d = self[1] - self[0];
        if (depth)
            l->open[depth - 1].delta += d;
        if (llabs(d) > l->maxdelta)
            l->maxdelta = llabs(d);
        l->time += self[1];
    } else {
        l->time += self[l->wm];
    }
    return 0;
}

/* The lines below a pruned node, all hidden: what flow would make of them. */
static int flow_below(void *ctx, const uint32_t *path, size_t depth)
{
    struct layout *l = ctx;
    const struct below *b = l->below;
    uint32_t x = path[depth - 1];
    int err = open_path(l, path, depth);
    if (err)
        return err;
    l->time += b->total[x] - ember_profile_self(l->p, x, l->wm);
    l->hidden_frames += b->frames[x];
    if (l->diff && b->maxd[x] > l->maxdelta)
        l->maxdelta = b->maxd[x];
    return 0;
}

static bool bit(const uint64_t *b, uint32_t n)
{
    return b[n >> 6] >> (n & 63) & 1;
}

static void set_bit(uint64_t *b, uint32_t n)
{
    b[n >> 6] |= (uint64_t)1 << (n & 63);
}

/* The frames' names, read once for sorting. */
struct frame_names {
    const char **str;
    size_t *len;
    uint32_t count;
};

static int frame_names_get(const struct ember_profile *p, struct frame_names *f)
{
    f->count = ember_profile_frame_count(p);
    size_t n = f->count ? f->count : 1;
    f->str = malloc(n * sizeof(*f->str));
    f->len = malloc(n * sizeof(*f->len));
    if (!f->str || !f->len)
        return -ENOMEM;
    for (uint32_t i = 0; i < f->count; i++)
        f->str[i] = ember_profile_frame_name(p, i, &f->len[i]);
    return 0;
}

static int name_cmp(const void *va, const void *vb, void *ctx)
{
    const struct frame_names *f = ctx;
    uint32_t a = *(const uint32_t *)va, b = *(const uint32_t *)vb;
    int c = memcmp(f->str[a], f->str[b], f->len[a] < f->len[b] ? f->len[a] : f->len[b]);
    return c ? c : (f->len[a] > f->len[b]) - (f->len[a] < f->len[b]);
}

enum { MAX_EXTENSIONS = 32 };

/* For each frame, the frames whose names extend its name by a byte below
 * ';' (they sort right after it): ext[f] .. ext[f] + next[f] in sorted,
 * next[f] > MAX_EXTENSIONS: too many to look up. */
static int name_extensions(const struct ember_profile *p, uint32_t **sorted, uint32_t **ext,
                           uint32_t **next)
{
    struct frame_names names, *f = &names;
    int err = frame_names_get(p, f);
    size_t n = f->count ? f->count : 1;
    *sorted = malloc(n * sizeof(**sorted));
    *ext = malloc(n * sizeof(**ext));
    *next = calloc(n, sizeof(**next));
    if (err || !*sorted || !*ext || !*next) {
        free(f->str);
        free(f->len);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < f->count; i++)
        (*sorted)[i] = i;
    qsort_r(*sorted, f->count, sizeof(**sorted), name_cmp, (void *)f);
    for (uint32_t i = 0; i < f->count; i++) {
        uint32_t a = (*sorted)[i], j = i + 1;
        for (; j < f->count && j - i <= MAX_EXTENSIONS; j++) {
            uint32_t b = (*sorted)[j];
            if (f->len[b] <= f->len[a] || memcmp(f->str[a], f->str[b], f->len[a]) != 0 ||
                (unsigned char)f->str[b][f->len[a]] >= ';')
                break;
        }
        (*ext)[a] = i + 1;
        (*next)[a] = j - i - 1;
    }
    free(f->str);
    free(f->len);
    return 0;
}

/* The self weights the layout reads, by node: the drawn value's, and in a
 * differential profile (two values) also BEFORE's. */
struct weights {
    const int64_t *drawn, *before; /* before: NULL unless differential */
};

static struct weights weights_of(const struct ember_profile *p, unsigned wm, bool diff)
{
    return (struct weights){ember_profile_self_values(p, wm),
                            diff ? ember_profile_self_values(p, 0) : NULL};
}

/* Whether node n's own line is drawn: flow skips the lines without weight
 * in the drawn value (a differential graph draws any line with weight). */
static bool drawn(const struct weights *w, uint32_t n)
{
    return w->drawn[n] != 0 || (w->before && w->before[n] != 0);
}

/* The frames node n makes: none without drawn lines, two when split.
 * lines: bit per node, drawn lines below it. bad: the siblings that could
 * split it were too many to look up. */
static uint32_t node_frames(const struct ember_profile *p, const struct weights *w, uint32_t n,
                            const uint64_t *lines, const uint32_t *sorted, const uint32_t *ext,
                            const uint32_t *next, bool *bad)
{
    bool self = drawn(w, n), below = bit(lines, n);
    uint32_t f = ember_profile_node_frame(p, n), up = ember_profile_node_parent(p, n);
    if (!self || !below || next[f] == 0)
        return self || below;
    if (next[f] > MAX_EXTENSIONS) {
        *bad = true;
        return 2;
    }
    for (uint32_t i = ext[f]; i < ext[f] + next[f]; i++) {
        uint32_t sib = ember_profile_child_lookup(p, up, sorted[i]);
        if (sib && (drawn(w, sib) || bit(lines, sib)))
            return 2;
    }
    return 1;
}

static void below_free(struct below *b)
{
    free(b->total);
    free(b->frames);
    free(b->maxd);
    free(b->skip);
}

/* Sums each subtree (children have larger indices than their parents)
 * and marks the nodes narrower than min_time, with drawn lines below, for
 * pruning. Weights below 0 would make a subtree's frames wider than it:
 * then nothing is pruned. */
static int below_build(const struct ember_profile *p, unsigned wm, bool diff, double min_time,
                       struct below *b)
{
    size_t nn = ember_profile_node_count(p), words = (nn + 63) / 64;
    struct weights w = weights_of(p, wm, diff);
    uint32_t *sorted = NULL, *ext = NULL, *next = NULL;
    uint64_t *lines = calloc(words, sizeof(*lines)), *bad = calloc(words, sizeof(*bad));
    /* read at each node's parent, anywhere: huge pages spare the TLB */
    b->total = ember_table_calloc(nn, sizeof(*b->total));
    b->frames = ember_table_calloc(nn, sizeof(*b->frames));
    b->maxd = diff ? ember_table_calloc(nn, sizeof(*b->maxd)) : NULL;
    b->skip = calloc(words, sizeof(*b->skip));
    int err = !lines || !bad || !b->total || !b->frames || (diff && !b->maxd) || !b->skip
                  ? -ENOMEM
                  : name_extensions(p, &sorted, &ext, &next);
    bool negative = false;
    for (uint32_t n = (uint32_t)nn; !err && n-- > 1;) {
        if (drawn(&w, n) || bit(lines, n))
            set_bit(lines, ember_profile_node_parent(p, n));
        negative |= w.drawn[n] < 0;
    }
    for (uint32_t n = (uint32_t)nn; !err && !negative && n-- > 1;) {
        uint32_t up = ember_profile_node_parent(p, n);
        bool nb = false;
        uint64_t fr = (uint64_t)b->frames[up] + b->frames[n] +
                      node_frames(p, &w, n, lines, sorted, ext, next, &nb);
        if (nb || bit(bad, n) || fr > UINT32_MAX)
            set_bit(bad, up);
        b->frames[up] = fr > UINT32_MAX ? UINT32_MAX : (uint32_t)fr;
        b->total[n] += w.drawn[n];
        b->total[up] += b->total[n];
        if (diff) {
            int64_t d = llabs(w.drawn[n] - w.before[n]);
            d = d > b->maxd[n] ? d : b->maxd[n];
            b->maxd[up] = d > b->maxd[up] ? d : b->maxd[up];
        }
        if (bit(lines, n) && !bit(bad, n) && (double)b->total[n] < min_time)
            set_bit(b->skip, n);
    }
    free(lines);
    free(bad);
    free(sorted);
    free(ext);
    free(next);
    return err;
}

static int frame_cmp(const void *va, const void *vb)
{
    const struct frame *a = va, *b = vb;
    if (a->depth != b->depth)
        return a->depth < b->depth ? -1 : 1;
    return a->start < b->start ? -1 : a->start > b->start;
}

/* ---- text ------------------------------------------------------------- */

static void put_escaped(struct ember_writer *w, const char *s, bool quot)
{
    ember_escape_xml(w, s, strlen(s), quot);
}

/* A JavaScript string literal (for the script's configuration). */
static void put_js_string(struct ember_writer *w, const char *s)
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

/* Perl's default number formatting (buf: 64 bytes). */
static void num(char *buf, size_t cap, double v)
{
    (void)cap;
    ember_svg_g15(buf, v);
}

/* "rgb(r,g,b)" */
static void put_rgb(char *fill, struct ember_rgb c)
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
static void thousands(char *out, const char *in)
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
    thousands(buf, rounded);
    ember_writer_puts(&s->w, buf);
    ember_writer_puts(&s->w, " ");
    put_escaped(&s->w, s->word, false);
}

static const char *default_title(const struct ember_flame_opts *o)
{
    if (o->title && o->title[0])
        return o->title;
    if (o->flamechart)
        return "Flame Chart";
    return o->inverted ? "Icicle Graph" : "Flame Graph";
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
    put_js_string(w, o->name_type);
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
    text_el(s, "title", (int)(o->width / 2), o->font_size * 2, "", default_title(o), true);
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

static struct ember_rgb frame_color(struct svg *s, const struct frame *f, const char *name,
                                    size_t len, char *fill, size_t cap)
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
        put_rgb(fill, c);
        if (o->palette)
            ember_palette_put(o->palette, name, len, fill);
        return c;
    }
    put_rgb(fill, c);
    return c;
}

static void write_frame(struct svg *s, const struct frame *f)
{
    const struct ember_flame_opts *o = s->o;
    struct ember_writer *w = &s->w;
    const struct ember_profile *p = s->p;
    size_t len;
    const char *name =
        f->depth == 0 ? ""
                      : ember_profile_frame_name(p, ember_profile_node_frame(p, f->node), &len);
    if (f->depth == 0)
        len = 0;
    double x1 = XPAD + (double)f->start * s->wpt;
    double x2 = XPAD + (f->depth == 0 ? s->timemax : (double)f->end) * s->wpt;
    double fh = o->frame_height;
    double ypad1 = o->font_size * 3, ypad2 = o->font_size * 2 + 10;
    double y1, y2;
    if (o->inverted) {
        y1 = ypad1 + f->depth * fh;
        y2 = ypad1 + (f->depth + 1) * fh - FRAMEPAD;
    } else {
        y1 = s->height - ypad2 - (f->depth + 1) * fh + FRAMEPAD;
        y2 = s->height - ypad2 - f->depth * fh;
    }

    /* the title: "name (N samples, P%)" */
    double width = (double)(f->end - f->start) / s->scale;
    char sam[64], pct[64];
    double samv; /* sam read back, as atof would */
    ember_svg_fixed(sam, width * o->factor, 0, &samv);
    const struct ember_attrs *at = o->nameattr ? ember_nameattr_get(o->nameattr, name, len) : NULL;
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
    ember_weight_format(exact, f->end - f->start, ember_profile_decimals(p));
    ember_writer_puts(w, " ember:w=\"");
    ember_writer_puts(w, exact);
    ember_writer_puts(w, "\">\n<title>");
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

    /* the rectangle: width from the rounded x's, as flamegraph.pl does */
    char fill[64], x1s[64], x2s[64], ys[64], ws[64], hs[64];
    double x1v, x2v; /* x1s and x2s read back, as atof would */
    frame_color(s, f, name, len, fill, sizeof(fill));
    ember_svg_fixed(x1s, x1, 1, &x1v);
    ember_svg_fixed(x2s, x2, 1, &x2v);
    num(ys, sizeof(ys), y1);
    ember_svg_fixed(ws, x2v - x1v, 1, NULL);
    ember_svg_fixed(hs, y2 - y1, 1, NULL);
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
        ember_writer_puts(w, rect[i]);

    /* the label: as many characters as fit, the last two as ".." */
    int chars = (int)((x2 - x1) / (o->font_size * o->font_width));
    char ty[64], tx[64];
    num(ty, sizeof(ty), 3 + (y1 + y2) / 2);
    ember_svg_fixed(tx, x1 + 3, 2, NULL);
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
    ember_writer_puts(w, href && href[0] ? "</a>\n" : "</g>\n");
}

static void warn(const struct ember_flame_opts *o, const char *msg)
{
    if (!o->warn)
        return;
    struct ember_diag d;
    ember_diag_set(&d, 0, NULL, 0, "%s", msg);
    o->warn(o->warn_ctx, &d);
}

int ember_flame_opts_check(const struct ember_flame_opts *o, struct ember_diag *d)
{
    const char *bg1, *bg2;
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

static int render(const struct ember_profile *p, const struct ember_flame_opts *o,
                  const struct ember_sink *out, struct ember_diag *d)
{
    const char *bg1, *bg2;
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
    double timemax = time;
    char msg[160];
    if (o->total > 0) {
        if (o->total * scale < time) {
            snprintf(msg, sizeof(msg),
                     "--total %.15g is less than the actual total %.15g, so it is ignored",
                     o->total, time / scale);
            if (o->total * scale / time > 0.02)
                warn(o, msg);
        } else {
            timemax = o->total * scale;
        }
    }
    const char *word = o->count_name ? o->count_name : ember_profile_count_word(p);
    if (word && strcmp(word, "samples") == 0 && time / scale < 100) {
        snprintf(msg, sizeof(msg), "stack count is low (%.15g); did something go wrong?",
                 time / scale);
        warn(o, msg);
    }

    double wpt = (o->width - 2.0 * XPAD) / timemax;
    struct below below = {0};
    struct layout l = {.p = p,
                       .below = &below,
                       .wm = wm,
                       .diff = ember_profile_is_differential(p),
                       .root = {EMBER_ROOT, 0, 0, 0}};
    l.min_time = o->min_width_pct ? timemax * o->min_width / 100 : o->min_width / wpt;
    int err = 0;
    if (o->flamechart) {
        err = ember_profile_walk_sequence(p, flow, &l);
    } else {
        err = l.min_time > 0 ? below_build(p, wm, l.diff, l.min_time, &below) : 0;
        if (!err)
            err = ember_profile_walk_pruned(p, flow, below.skip, flow_below, &l);
    }
    below_free(&below);
    for (size_t k = l.nopen; k-- > 0 && !err;)
        err = close_frame(&l, k + 1, &l.open[k], k ? &l.open[k - 1] : &l.root);
    if (!err)
        err = close_frame(&l, 0, &l.root, NULL);
    struct svg *s = err ? NULL : calloc(1, sizeof(*s));
    if (!err && !s)
        err = -ENOMEM;
    if (!err) {
        if (l.nframes)
            qsort(l.frames, l.nframes, sizeof(*l.frames), frame_cmp);
        s->o = o;
        s->p = p;
        s->scale = scale;
        s->timemax = timemax;
        s->wpt = wpt;
        s->maxdelta = l.maxdelta > (int64_t)scale ? (double)l.maxdelta : scale;
        s->hidden_frames = l.hidden_frames;
        s->scales = !o->count_name && ember_unit_scales(ember_profile_unit(p));
        s->word = o->count_name ? o->count_name : ember_profile_count_word(p);
        if (!s->word)
            s->word = "samples";
        s->hidden_width = (double)l.hidden_width;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        s->rng = ((unsigned long long)ts.tv_nsec << 16) ^ (unsigned long long)ts.tv_sec;
        for (size_t i = 0; i < l.nframes; i++)
            if (l.frames[i].depth > s->depthmax)
                s->depthmax = l.frames[i].depth;
        s->height = (s->depthmax + 1.0) * o->frame_height + o->font_size * 3 +
                    (o->font_size * 2 + 10) +
                    (o->subtitle && o->subtitle[0] ? o->font_size * 2 : 0);
        ember_writer_init(&s->w, out);
        write_head(s, bg1, bg2);
        write_chrome(s);
        for (size_t i = 0; i < l.nframes; i++)
            write_frame(s, &l.frames[i]);
        ember_writer_puts(&s->w, "</g>\n</svg>\n");
        err = ember_writer_flush(&s->w);
    }
    free(s);
    free(l.open);
    free(l.frames);
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
