/*
 * cmd_convert.c - `ember convert --to FORMAT`: any profile ember reads (with
 * every transform) written for another tool: speedscope, pprof, Chrome's
 * trace JSON, folded stacks, CSV, TSV or a flame graph: the writers' table
 * (ember_writer_formats) lists them.
 *
 * The output format is checked before reading, so that a mistake costs
 * nothing; pprof, being binary, is never written to a terminal.
 */
#include "cli.h"
#include "commands.h"
#include "ember/write.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char usage[] = "ember convert --to FORMAT [options] [FILE...] [-o OUT]";
static const char description_head[] =
    "Reads profiles like every ember command (perf script, folded stacks, pprof, ... plain\n"
    "or gzipped, merged; standard input when no FILE is given; every transform applies)\n"
    "and writes them as FORMAT:\n";
static const char description_tail[] =
    "Chrome: name the file F.trace.json (speedscope takes *.chrome.json for a DevTools\n"
    "timeline). Weights stay exact (fractions too); names are written as they are.\n"
    "Examples:\n"
    "  perf script | ember convert --to speedscope -o prog.speedscope.json\n"
    "  ember convert --to pprof prog.folded -o prog.pb.gz && go tool pprof -top prog.pb.gz\n"
    "  ember convert --to folded --sample-type alloc_space heap.pb.gz";

/* "speedscope, pprof, ... or svg", from the writers' table. */
static void writer_names(char *buf, size_t cap)
{
    const struct ember_writer_format *const *w = ember_writer_formats();
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; w[i] && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s",
                              i == 0     ? ""
                              : w[i + 1] ? ", "
                                         : " or ",
                              w[i]->name);
}

/* The description, with a line per writer from the table. */
static void describe(char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "%s", description_head);
    for (const struct ember_writer_format *const *w = ember_writer_formats(); *w && n < cap; w++)
        n += (size_t)snprintf(buf + n, cap - n, "  %-11s %s\n", (*w)->name, (*w)->description);
    if (n < cap)
        snprintf(buf + n, cap - n, "%s", description_tail);
}

static const struct ember_writer_format *find_target(const char *to, bool tsv)
{
    char names[256];
    writer_names(names, sizeof(names));
    if (!to) {
        cli_error("--to FORMAT is required (%s)", names);
        return NULL;
    }
    const struct ember_writer_format *w =
        ember_writer_find(tsv && strcmp(to, "csv") == 0 ? "tsv" : to);
    if (!w)
        cli_error("unknown --to '%s' (expected %s)", to, names);
    return w;
}

static int output(const struct ember_writer_format *w, const struct ember_profile *p,
                  const struct ember_convert_opts *co, const char *out)
{
    struct cli_output o;
    struct ember_diag d;
    ember_diag_clear(&d);
    if (cli_output_open(&o, out) < 0)
        return 1;
    struct ember_sink sink = cli_output_sink(&o);
    char doing[96];
    snprintf(doing, sizeof(doing), "convert to %s", w->name);
    return cli_output_finish_doing(&o, w->write(p, co, &sink, &d), &d, doing);
}

/* --to perfetto of a profile with counters over time (a heap recording's
 * heap in use) and no perf.data timeline: a counter track each; without
 * counters, 1 after saying that input (named file) has nothing to draw. */
static int counters_perfetto(const struct ember_profile *p, const char *name, const char *out,
                             const char *file)
{
    struct cli_output o;
    struct ember_diag d;
    ember_diag_clear(&d);
    if (!ember_profile_counter_count(p)) {
        cli_error("--to perfetto draws a perf.data recording on its time axis, or a memory "
                  "profile's heap over time: %s is neither",
                  file);
        return 1;
    }
    if (cli_output_open(&o, out) < 0)
        return 1;
    struct ember_sink sink = cli_output_sink(&o);
    return cli_output_finish_doing(&o, ember_counters_perfetto(p, name, &sink, &d), &d,
                                   "convert to perfetto");
}

/* The title: --name, else the first input's file name. */
static const char *default_name(char **files, int nfiles)
{
    if (nfiles == 0 || strcmp(files[0], "-") == 0)
        return "stdin";
    const char *slash = strrchr(files[0], '/');
    return slash && slash[1] ? slash + 1 : files[0];
}

int cmd_convert(int argc, char **argv)
{
    struct cli_reader r;
    struct ember_convert_opts co;
    const char *out = NULL, *to = NULL, *name = NULL;
    bool tsv = false;
    char to_help[512];
    writer_names(to_help, sizeof(to_help));
    snprintf(to_help + strlen(to_help), sizeof(to_help) - strlen(to_help),
             " (perfetto: a recording's samples and GC phases in time, or a memory profile's "
             "heap over time)");
    cli_reader_init(&r);
    r.verb = "convert";
    r.to_option = "until"; /* --to names the output format */
    ember_convert_opts_default(&co);
    co.exporter = "ember@" EMBER_VERSION;
    const struct option opts[] = {
        {OPT_STRING, "to", 't', &to, "FORMAT", to_help, NULL, NULL, false},
        {OPT_STRING, "output", 'o', &out, "FILE", "write to FILE (atomically)", "stdout", NULL,
         false},
        {OPT_STRING, "name", 0, &name, "TEXT", "the profile's title (speedscope, chrome)",
         "the first input's name", NULL, false},
        {OPT_FLAG, "time-order", 0, &r.flamechart, NULL,
         "samples in arrival order: evented speedscope, Chrome trace in time order (a "
         "perf.data recording: on its time axis, a track per thread; Chrome always)",
         NULL, NULL, false},
        {OPT_FLAG, "tsv", 0, &tsv, NULL, "with --to csv: tab-separated (as --to tsv)", NULL, NULL,
         false},
        CLI_READ_OPTIONS(r),
        OPT_END_(),
    };
    char desc[4096];
    describe(desc, sizeof(desc));
    const struct ember_writer_format *w = NULL;
    int nfiles = parse_options(argc, argv, opts, usage, desc);
    int ret = nfiles < 0 ? (nfiles == -2 ? 0 : EXIT_USAGE) : 0;
    /* perfetto: a recording's samples (and GC phases) on their time axis */
    bool perfetto = to && strcmp(to, "perfetto") == 0;
    if (nfiles >= 0 && !perfetto && !(w = find_target(to, tsv)))
        ret = EXIT_USAGE;
    if (nfiles >= 0 && !ret && (perfetto || w->binary) && (!out || strcmp(out, "-") == 0) &&
        isatty(STDOUT_FILENO)) {
        cli_error("%s output is binary: not writing it to a terminal; give -o FILE or redirect "
                  "standard output",
                  perfetto ? "perfetto" : w->name);
        ret = EXIT_USAGE;
    }
    co.name = name ? name : default_name(argv, nfiles);
    /* pprof carries addresses and mappings: readers keep them for it */
    r.ro.addresses = w && strcmp(w->name, "pprof") == 0;
    struct ember_profile *p = nfiles >= 0 && !ret ? ember_profile_new() : NULL;
    if (nfiles >= 0 && !ret && !p) {
        cli_error("out of memory");
        ret = 1;
    }
    /* Chrome (and speedscope in time order): a recording with times
     * (perf.data) on its time axis, a track per thread; other profiles as
     * a flame chart */
    bool speedscope = w && strcmp(w->name, "speedscope") == 0 && r.flamechart;
    r.timeline = perfetto || speedscope || (w && strcmp(w->name, "chrome") == 0);
    r.title = co.name;
    if (p && !ret)
        ret = cli_read_profile(&r, p, argv, nfiles);
    if (p && !ret && perfetto && !r.gc.times)
        ret = counters_perfetto(p, co.name, out, nfiles ? argv[0] : "standard input");
    else if (p && !ret && (perfetto || (r.timeline && r.gc.times))) {
        struct cli_output o;
        ret = cli_output_open(&o, out) < 0
                  ? 1
                  : cli_write_gc_timeline(&r, p, &o,
                                          perfetto     ? CLI_TIMELINE_PERFETTO
                                          : speedscope ? CLI_TIMELINE_SPEEDSCOPE
                                                       : CLI_TIMELINE_CHROME);
    } else if (p && !ret)
        ret = output(w, p, &co, out);
    ember_profile_free(p);
    cli_reader_release(&r);
    return ret;
}
