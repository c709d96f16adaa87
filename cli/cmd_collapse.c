/*
 * cmd_collapse.c - `ember collapse`: profiles in, folded stacks out, the
 * way FlameGraph's stackcollapse-*.pl scripts write them.
 */
#include "cli.h"
#include "commands.h"

static const char usage[] = "ember collapse [options] [FILE...]";
static const char description[] =
    "Reads profiles (perf script, DTrace, folded stacks, pprof, speedscope, Chrome trace\n"
    "JSON, callgrind, Instruments, xctrace, macOS sample, go tool pprof -raw; plain or\n"
    "gzipped; standard input when no FILE is given) and writes folded stacks, one line per\n"
    "distinct stack: \"frame;frame;frame COUNT\", sorted. Options and results are those of\n"
    "FlameGraph's stackcollapse-*.pl scripts.";

int cmd_collapse(int argc, char **argv)
{
    struct cli_reader r;
    const char *out = NULL;
    cli_reader_init(&r);
    const struct option opts[] = {
        {OPT_STRING, "output", 'o', &out, "FILE", "write to FILE (atomically)", "stdout", NULL,
         false},
        CLI_READ_OPTIONS(r),
        OPT_END_(),
    };
    int nfiles = parse_options(argc, argv, opts, usage, description);
    if (nfiles < 0) {
        cli_reader_release(&r);
        return nfiles == -2 ? 0 : EXIT_USAGE;
    }

    struct ember_profile *p = ember_profile_new();
    if (!p) {
        cli_error("out of memory");
        cli_reader_release(&r);
        return 1;
    }
    int ret = cli_read_profile(&r, p, argv, nfiles);
    if (!ret)
        ret = cli_write_folded(p, out);
    ember_profile_free(p);
    cli_reader_release(&r);
    return ret;
}
