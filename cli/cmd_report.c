/*
 * cmd_report.c - `ember report`: a profile as text: the top functions, the
 * call tree, a function's callers or callees; aligned, or CSV/TSV.
 */
#include "cli.h"
#include "commands.h"
#include "ember/write.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char usage[] = "ember report [--top N | --tree | --callers NAME | --callees NAME] "
                            "[options] [FILE...]";
static const char description[] =
    "Reads profiles (any input ember reads; standard input when no FILE is given) and\n"
    "prints the functions by self weight (as 'pprof -top'), the call tree with\n"
    "percentages (--tree), or who calls a function and what it calls. A function's total\n"
    "counts each stack once however deep it recurses; a process is no function (perf's\n"
    "stacks begin with theirs). --csv and --tsv print the same rows for spreadsheets and\n"
    "pandas ('ember convert --to csv' gives one row per stack).";

enum { UNSET = -1 }; /* --percent-limit or --top not given */

struct report_args {
    unsigned top;
    bool tree, cum, csv, tsv, lines;
    const char *callers, *callees, *out;
    double limit;
};

/* Runs the report asked for into o; returns the exit code. */
static int write_report(const struct ember_profile *p, const struct report_args *a,
                        struct ember_report_opts *ro, struct cli_output *o)
{
    struct ember_sink sink = cli_output_sink(o);
    int err;
    if (a->tree)
        err = ember_report_tree(p, ro, &sink);
    else if (a->callers || a->callees)
        err = ember_report_neighbours(p, ro, a->callers ? a->callers : a->callees,
                                      a->callers != NULL, &sink);
    else
        err = ember_report_top(p, ro, &sink);
    if (err == -ENOENT) {
        cli_error("no function named '%s' in the profile", a->callers ? a->callers : a->callees);
        cli_output_abort(o);
        return 1;
    }
    return cli_output_finish(o, err, NULL);
}

/* Whether some frame has a source file: what --lines can show. */
static bool has_lines(const struct ember_profile *p)
{
    for (uint32_t f = 0; f < ember_profile_frame_count(p); f++) {
        struct ember_frame fr;
        ember_profile_frame(p, f, &fr);
        if (fr.file)
            return true;
    }
    return false;
}

/* --lines: the profile by line, or a warning that it has no lines. */
static int by_lines(struct ember_profile **p)
{
    struct ember_profile *by_line = NULL;
    if (!has_lines(*p))
        cli_warning("--lines: no frame has a source line (folded stacks have none; perf: the "
                    "binaries' DWARF line tables were not found): functions are shown");
    int err = ember_profile_lines(*p, &by_line);
    if (err) {
        cli_error("cannot group the profile by line: %s", strerror(-err));
        return 1;
    }
    ember_profile_free(*p);
    *p = by_line;
    return 0;
}

static int check_modes(const struct report_args *a)
{
    int modes = a->tree + (a->callers != NULL) + (a->callees != NULL);
    if (modes > 1 || (modes && a->top != (unsigned)UNSET)) {
        cli_error("choose one of --top, --tree, --callers and --callees");
        return -1;
    }
    if (a->csv && a->tsv) {
        cli_error("choose one of --csv and --tsv");
        return -1;
    }
    if (a->limit > 100 || (a->limit < 0 && a->limit != UNSET)) {
        cli_error("--percent-limit must be between 0 and 100");
        return -1;
    }
    return 0;
}

int cmd_report(int argc, char **argv)
{
    struct cli_reader r;
    struct report_args a = {.limit = UNSET, .top = (unsigned)UNSET};
    cli_reader_init(&r);
    const struct option opts[] = {
        {OPT_UINT, "top", 0, &a.top, "N", "the N heaviest functions (0: all)",
         "10; all for --csv and --tsv", NULL, false},
        {OPT_FLAG, "cum", 0, &a.cum, NULL,
         "top: by total weight, not self (as perf report --children: the processes stacks "
         "begin with and [unknown], one name for many addresses, are not ranked)",
         NULL, NULL, false},
        {OPT_FLAG, "lines", 0, &a.lines, NULL,
         "by source line: \"function file:line\" (as pprof -lines, inlined calls apart): "
         "perf.data and perf script are read with --inline (lines from DWARF) unless --srcline",
         NULL, NULL, false},
        {OPT_FLAG, "tree", 0, &a.tree, NULL, "the call tree with percentages", NULL, NULL, false},
        {OPT_STRING, "callers", 0, &a.callers, "NAME", "the callers of function NAME", NULL, NULL,
         false},
        {OPT_STRING, "callees", 0, &a.callees, "NAME", "what function NAME calls", NULL, NULL,
         false},
        {OPT_DOUBLE, "percent-limit", 0, &a.limit, "P", "leave out rows under P% of the total",
         "0; 1 for a text --tree", NULL, false},
        {OPT_FLAG, "csv", 0, &a.csv, NULL, "comma-separated values (RFC 4180)", NULL, NULL, false},
        {OPT_FLAG, "tsv", 0, &a.tsv, NULL, "tab-separated values", NULL, NULL, false},
        {OPT_STRING, "output", 'o', &a.out, "FILE", "write to FILE (atomically)", "stdout", NULL,
         false},
        CLI_READ_OPTIONS(r),
        OPT_END_(),
    };
    int nfiles = parse_options(argc, argv, opts, usage, description);
    if (nfiles < 0 || check_modes(&a) < 0) {
        cli_reader_release(&r);
        return nfiles == -2 ? 0 : EXIT_USAGE;
    }
    struct ember_report_opts ro = {
        .top = a.top != (unsigned)UNSET ? a.top : (a.csv || a.tsv ? 0 : 10),
        .by_total = a.cum,
        /* a text tree hides what is under 1% (and says so); tables for
         * programs keep everything unless asked */
        .percent_limit = a.limit >= 0 ? a.limit : (a.tree && !a.csv && !a.tsv ? 1 : 0),
        .format = a.csv   ? EMBER_TABLE_CSV
                  : a.tsv ? EMBER_TABLE_TSV
                          : EMBER_TABLE_TEXT,
    };
    struct ember_profile *p = ember_profile_new();
    int ret = p ? 0 : 1;
    if (!p)
        cli_error("out of memory");
    r.verb = "report";
    /* perf's lines come from DWARF, with the inlined calls pprof -lines shows */
    if (a.lines && !ember_read_opts_flag(&r.ro, "srcline") &&
        ember_read_opts_set(&r.ro, "inline", "1") < 0) {
        cli_error("too many format options");
        ret = 1;
    }
    if (!ret)
        ret = cli_read_profile(&r, p, argv, nfiles);
    struct cli_output o;
    if (!ret && a.lines)
        ret = by_lines(&p);
    if (!ret && cli_output_open(&o, a.out) < 0)
        ret = 1;
    if (!ret)
        ret = write_report(p, &a, &ro, &o);
    ember_profile_free(p);
    cli_reader_release(&r);
    return ret;
}
