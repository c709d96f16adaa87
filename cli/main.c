/*
 * main.c - ember's entry point: the command table and the global options.
 */
#include "cli.h"
#include "commands.h"

#include <stdio.h>
#include <string.h>

static const struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"collapse", cmd_collapse, "fold perf script / DTrace / folded input into folded stacks"},
    {"flamegraph", cmd_flamegraph, "draw an interactive SVG flame graph (or icicle, chart)"},
    {"diff", cmd_diff, "draw a differential flame graph of two profiles (or difffolded lines)"},
    {"report", cmd_report, "print the top functions, the call tree, callers and callees"},
    {"convert", cmd_convert, "write a profile as speedscope, pprof, Chrome trace JSON, CSV"},
    {"record", cmd_record,
     "sample a command (or -p PID, -a) into a flame graph, pprof... or perf.data"},
    {"trace", cmd_trace,
     "traces (<ember/trace.h>, OCaml 5): record (was 'ember record'), dump, stats, latency, "
     "gc-stats, export"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: ember [--version] [--help] COMMAND [ARGS]\n\n"
               "ember turns profiles (perf script, DTrace, folded stacks) into flame graphs\n"
               "and reports.\n\nCommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\nRun 'ember COMMAND --help' for a command's options.\n"
            "Example:\n  perf record -g -- ./prog && perf script | ember flamegraph -o prog.svg\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    cli_cleanup_install();
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            char *help_argv[] = {argv[2], "--help", NULL};
            for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(commands[i].name, argv[2]) == 0) {
                    cli_set_command(commands[i].name);
                    return commands[i].fn(2, help_argv);
                }
        }
        usage(stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("ember %s\n", EMBER_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(commands[i].name, name) == 0) {
            cli_set_command(name);
            return commands[i].fn(argc - 1, argv + 1);
        }
    }
    cli_error("'%s' is not an ember command; see 'ember --help'", name);
    return EXIT_USAGE;
}
