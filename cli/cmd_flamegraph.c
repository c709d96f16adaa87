/*
 * cmd_flamegraph.c - `ember flamegraph`: any profile in, an interactive SVG
 * out, with every option of FlameGraph's flamegraph.pl.
 */
#include "cli.h"
#include "commands.h"
#include "ember/write.h"
#include "ember/transform.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] = "ember flamegraph [options] [FILE...] [-o OUT.svg]";
static const char description[] =
    "Draws a flame graph (or an icicle graph, or a flame chart) of the input: folded\n"
    "stacks or anything 'ember collapse' reads, detected automatically. The SVG is\n"
    "self-contained: hover for details, click to zoom, Ctrl-F to search (regexp),\n"
    "Ctrl-I to toggle case. Options are flamegraph.pl's.";

/* "0.1" pixels or "5%" of the total */
static int parse_minwidth(const char *s, struct ember_flame_opts *o)
{
    size_t n = strlen(s);
    o->min_width_pct = n > 0 && s[n - 1] == '%';
    char *end;
    o->min_width = strtod(s, &end);
    if (end == s || (size_t)(end - s) != n - (o->min_width_pct ? 1 : 0) || o->min_width < 0) {
        cli_error("--minwidth expects pixels (0.1) or a percentage (0.5%%), not '%s'", s);
        return -1;
    }
    return 0;
}

static int save_palette(const struct ember_palette *pal, const char *path)
{
    struct cli_output o;
    if (cli_output_open(&o, path) < 0)
        return -1;
    struct ember_sink sink = cli_output_sink(&o);
    return cli_output_finish(&o, ember_palette_save(pal, &sink), NULL) ? -1 : 0;
}

/* Replaces *p by its transform; returns 0 or 1 after saying what failed. */
static int transform(struct ember_profile **p,
                     int (*fn)(const struct ember_profile *, struct ember_profile **),
                     const char *what)
{
    struct ember_profile *out;
    int err = fn(*p, &out);
    if (err) {
        cli_error("cannot %s: %s", what, strerror(-err));
        return 1;
    }
    ember_profile_free(*p);
    *p = out;
    return 0;
}

/* The drawing options that parse but make no sense: -1 after saying why. */
static int check_options(const char *minwidth, struct ember_flame_opts *fo)
{
    if (parse_minwidth(minwidth, fo) < 0)
        return -1;
    struct ember_diag d;
    ember_diag_clear(&d);
    if (ember_flame_opts_check(fo, &d) < 0) {
        cli_error("%s", d.msg);
        return -1;
    }
    return 0;
}

/* What the command line says, and what the options load. */
struct flame_cmd {
    struct cli_reader r;
    struct ember_flame_opts fo;
    const char *out, *minwidth, *nameattr;
    bool cp;
    struct ember_nameattr *na;
    struct ember_palette *pal;
};

/* The options into c: the number of files, or parse_options' < 0. */
static int parse_args(struct flame_cmd *c, int argc, char **argv)
{
    const struct option opts[] = {
        {OPT_STRING, "output", 'o', &c->out, "FILE", "write the SVG to FILE (atomically)", "stdout",
         NULL, false},
        OPT_GROUP_("Graph options (as flamegraph.pl):"),
        {OPT_STRING, "title", 0, &c->fo.title, "TEXT", "title text",
         "\"Flame Graph\", \"Icicle Graph\" or \"Flame Chart\" (\"Memory Flame Graph: "
         "VALUE\" for memory profiles)",
         NULL, false},
        {OPT_STRING, "subtitle", 0, &c->fo.subtitle, "TEXT", "second title line", "none", NULL,
         false},
        {OPT_INT, "width", 0, &c->fo.width, "NUM", "image width in pixels", "1200", NULL, false},
        {OPT_INT, "height", 0, &c->fo.frame_height, "NUM", "height of each frame in pixels", "16",
         NULL, false},
        {OPT_STRING, "minwidth", 0, &c->minwidth, "NUM[%]",
         "omit frames narrower than NUM pixels, or NUM% of the total", "0.1", NULL, false},
        {OPT_STRING, "fonttype", 0, &c->fo.font_type, "FONT", "font family", "Verdana", NULL,
         false},
        {OPT_DOUBLE, "fontsize", 0, &c->fo.font_size, "NUM", "font size", "12", NULL, false},
        {OPT_DOUBLE, "fontwidth", 0, &c->fo.font_width, "NUM",
         "average glyph width relative to the font size", "0.59", NULL, false},
        {OPT_STRING, "countname", 0, &c->fo.count_name, "TEXT",
         "count type label (times and sizes are shown in their units)",
         "the input's: samples, cycles, ...", NULL, false},
        {OPT_STRING, "nametype", 0, &c->fo.name_type, "TEXT", "name type label", "Function:", NULL,
         false},
        {OPT_STRING, "colors", 0, &c->fo.colors, "PALETTE",
         "hot, mem, io, wakeup, chain, java, js, perl, red, green, blue, aqua, yellow, "
         "purple, orange",
         "mem for memory profiles (values in bytes), else hot", NULL, false},
        {OPT_STRING, "bgcolors", 0, &c->fo.bgcolors, "COLOR",
         "background: yellow, blue, green, grey or #rrggbb", "from the palette", NULL, false},
        {OPT_FLAG, "hash", 0, &c->fo.hash, NULL, "colors are keyed by function name hash", NULL,
         NULL, false},
        {OPT_FLAG, "random", 0, &c->fo.random, NULL, "colors are randomly generated", NULL, NULL,
         false},
        {OPT_FLAG, "cp", 0, &c->cp, NULL, "use a consistent palette (palette.map)", NULL, NULL,
         false},
        {OPT_FLAG, "inverted", 0, &c->fo.inverted, NULL, "icicle graph (root at the top)", NULL,
         NULL, false},
        {OPT_FLAG, "flamechart", 0, &c->r.flamechart, NULL,
         "flame chart: keep the input (time) order, do not merge", NULL, NULL, false},
        {OPT_FLAG, "negate", 0, &c->fo.negate, NULL, "switch differential hues (blue<->red)", NULL,
         NULL, false},
        {OPT_STRING, "notes", 0, &c->fo.notes, "TEXT", "add a notes comment to the SVG", NULL, NULL,
         false},
        {OPT_DOUBLE, "total", 0, &c->fo.total, "NUM",
         "total used for widths (if above the real one)", "the sum of the counts", NULL, false},
        {OPT_DOUBLE, "factor", 0, &c->fo.factor, "NUM", "multiply the displayed counts", "1", NULL,
         false},
        {OPT_STRING, "nameattr", 0, &c->nameattr, "FILE",
         "per-function SVG attributes: name<TAB>key=value...", NULL, NULL, false},
        {OPT_STRING, "encoding", 0, &c->fo.encoding, "NAME", "encoding in the XML declaration",
         NULL, NULL, false},
        CLI_READ_OPTIONS(c->r),
        OPT_END_(),
    };
    return parse_options(argc, argv, opts, usage, description);
}

/* --nameattr's file and --cp's palette: 0, or 1 after saying what failed. */
static int load_extras(struct flame_cmd *c, struct ember_diag *d)
{
    int ret = 0;
    if (c->nameattr) {
        int err = ember_nameattr_load(&c->na, c->nameattr, d);
        if (err) {
            cli_diag_error(d, err);
            ret = 1;
        }
        c->fo.nameattr = c->na;
    }
    if (!ret && c->cp) {
        c->pal = ember_palette_new();
        int err = c->pal ? ember_palette_load(c->pal, "palette.map", d) : -ENOMEM;
        if (err) {
            cli_diag_error(d, err);
            ret = 1;
        }
        c->fo.palette = c->pal;
    }
    return ret;
}

int cmd_flamegraph(int argc, char **argv)
{
    struct flame_cmd c = {.minwidth = "0.1"};
    cli_reader_init(&c.r);
    ember_flame_opts_default(&c.fo);
    c.fo.warn = cli_warn_cb;
    int nfiles = parse_args(&c, argc, argv);
    if (nfiles < 0) {
        cli_reader_release(&c.r);
        return nfiles == -2 ? 0 : EXIT_USAGE;
    }
    if (check_options(c.minwidth, &c.fo) < 0) {
        cli_reader_release(&c.r);
        return EXIT_USAGE;
    }
    c.fo.flamechart = c.r.flamechart;

    struct ember_diag d;
    struct ember_profile *p = ember_profile_new();
    ember_diag_clear(&d);
    if (!p) {
        cli_error("out of memory");
        cli_reader_release(&c.r);
        return 1;
    }
    int ret = load_extras(&c, &d);
    c.r.verb = "draw";
    if (!ret)
        ret = cli_read_profile(&c.r, p, argv, nfiles);
    if (!ret && c.fo.colors && strcmp(c.fo.colors, "chain") == 0)
        ret = transform(&p, ember_profile_annotate_wakers, "annotate wakers");
    if (!ret)
        ret = cli_render_flame(p, &c.fo, c.out);
    if (!ret && c.pal && save_palette(c.pal, "palette.map") < 0)
        ret = 1;
    ember_palette_free(c.pal);
    ember_nameattr_free(c.na);
    ember_profile_free(p);
    cli_reader_release(&c.r);
    return ret;
}
