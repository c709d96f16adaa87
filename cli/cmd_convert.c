/*
 * cmd_convert.c - `ember convert --to FORMAT`: any profile ember reads (with
 * every transform) written for another tool: speedscope, pprof, Chrome's
 * trace JSON, folded stacks, CSV or TSV.
 *
 * The output format is checked before reading, so that a mistake costs
 * nothing; pprof, being binary, is never written to a terminal.
 */
#include "cli.h"
#include "commands.h"
#include "ember/convert.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char usage[] = "ember convert --to FORMAT [options] [FILE...] [-o OUT]";
static const char description[] =
    "Reads profiles like every ember command (perf script, folded stacks, pprof, ... plain\n"
    "or gzipped, merged; standard input when no FILE is given; every transform applies)\n"
    "and writes them as FORMAT:\n"
    "  speedscope  speedscope's JSON (https://www.speedscope.app, or `npx speedscope F`):\n"
    "              a sampled profile; an evented one (time order) with --time-order\n"
    "  pprof       pprof's gzipped protobuf (`go tool pprof -top F`, -http=:8080)\n"
    "  chrome      Chrome's trace JSON, a flame chart for Perfetto's UI or speedscope (name it\n"
    "              F.trace.json: speedscope reads *.chrome.json as a DevTools timeline)\n"
    "  folded      folded stacks, as 'ember collapse' writes them\n"
    "  csv, tsv    one row per stack: stack,weight (RFC 4180 quoting), for pandas\n"
    "Weights stay exact (fractions too); names are written as they are.\n"
    "Examples:\n"
    "  perf script | ember convert --to speedscope -o prog.speedscope.json\n"
    "  ember convert --to pprof prog.folded -o prog.pb.gz && go tool pprof -top prog.pb.gz\n"
    "  ember convert --to folded --sample-type alloc_space heap.pb.gz";

enum target { TO_SPEEDSCOPE, TO_PPROF, TO_CHROME, TO_FOLDED, TO_CSV, TO_TSV };

static const char *const target_names[] = {"speedscope", "pprof", "chrome", "folded", "csv", "tsv"};

static int find_target(const char *to, bool tsv, enum target *t)
{
    if (!to) {
        cli_error("--to FORMAT is required (speedscope, pprof, chrome, folded, csv or tsv)");
        return -1;
    }
    for (size_t i = 0; i < sizeof(target_names) / sizeof(target_names[0]); i++)
        if (strcmp(to, target_names[i]) == 0) {
            *t = (enum target)i;
            if (tsv && *t == TO_CSV)
                *t = TO_TSV;
            return 0;
        }
    cli_error("unknown --to '%s' (expected speedscope, pprof, chrome, folded, csv or tsv)", to);
    return -1;
}

static int write_profile(enum target t, const struct ember_profile *p,
                         const struct ember_convert_opts *co, const struct ember_sink *sink,
                         struct ember_diag *d)
{
    switch (t) {
    case TO_SPEEDSCOPE:
        return ember_write_speedscope(p, co, sink, d);
    case TO_PPROF:
        return ember_write_pprof(p, co, sink, d);
    case TO_CHROME:
        return ember_write_chrome(p, co, sink, d);
    case TO_FOLDED:
        return ember_write_folded(p, sink);
    case TO_CSV:
    case TO_TSV:
        return ember_write_csv(p, co, sink, d);
    }
    return -EINVAL;
}

static int output(enum target t, const struct ember_profile *p, const struct ember_convert_opts *co,
                  const char *out)
{
    struct cli_output o;
    struct ember_diag d;
    ember_diag_clear(&d);
    if (cli_output_open(&o, out) < 0)
        return 1;
    struct ember_sink sink = cli_output_sink(&o);
    int err = write_profile(t, p, co, &sink, &d);
    if (err && d.msg[0]) {
        cli_error("cannot convert to %s: %s", target_names[t], d.msg);
        cli_output_abort(&o);
        return 1;
    }
    return cli_output_finish(&o, err, NULL);
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
    cli_reader_init(&r);
    r.verb = "convert";
    ember_convert_opts_default(&co);
    co.exporter = "ember@" EMBER_VERSION;
    const struct option opts[] = {
        {OPT_STRING, "to", 't', &to, "FORMAT", "speedscope, pprof, chrome, folded, csv or tsv",
         NULL, NULL, false},
        {OPT_STRING, "output", 'o', &out, "FILE", "write to FILE (atomically)", "stdout", NULL,
         false},
        {OPT_STRING, "name", 0, &name, "TEXT", "the profile's title (speedscope, chrome)",
         "the first input's name", NULL, false},
        {OPT_FLAG, "time-order", 0, &r.flamechart, NULL,
         "samples in arrival order: evented speedscope, Chrome trace in time order", NULL, NULL,
         false},
        {OPT_FLAG, "tsv", 0, &tsv, NULL, "with --to csv: tab-separated (as --to tsv)", NULL, NULL,
         false},
        CLI_READ_OPTIONS(r),
        OPT_END_(),
    };
    enum target t = TO_FOLDED;
    int nfiles = parse_options(argc, argv, opts, usage, description);
    int ret = nfiles < 0 ? (nfiles == -2 ? 0 : EXIT_USAGE) : 0;
    if (nfiles >= 0 && find_target(to, tsv, &t) < 0)
        ret = EXIT_USAGE;
    if (nfiles >= 0 && !ret && t == TO_PPROF && (!out || strcmp(out, "-") == 0) &&
        isatty(STDOUT_FILENO)) {
        cli_error("pprof output is binary (gzipped protobuf): not writing it to a terminal; "
                  "give -o FILE.pb.gz or redirect standard output");
        ret = EXIT_USAGE;
    }
    co.name = name ? name : default_name(argv, nfiles);
    co.separator = t == TO_TSV ? '\t' : ',';
    struct ember_profile *p = nfiles >= 0 && !ret ? ember_profile_new() : NULL;
    if (nfiles >= 0 && !ret && !p) {
        cli_error("out of memory");
        ret = 1;
    }
    if (p && !ret)
        ret = cli_read_profile(&r, p, argv, nfiles);
    if (p && !ret)
        ret = output(t, p, &co, out);
    ember_profile_free(p);
    cli_reader_release(&r);
    return ret;
}
