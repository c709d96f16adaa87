/*
 * commands.h - ember's subcommands, one file each (cmd_<name>.c).
 * Each takes argv with argv[0] the command name and returns the exit code.
 */
#ifndef EMBER_CLI_COMMANDS_H
#define EMBER_CLI_COMMANDS_H

#include <stdbool.h>
#include <stdint.h>

int cmd_collapse(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_record(int argc, char **argv);

/* `ember record --heap` (cmd_record_heap.c), once cmd_record parsed it. */
struct heap_record_args {
    char **argv;           /* the command, NULL-terminated */
    const char *out;       /* -o */
    uint64_t sample_bytes; /* --sample-bytes; 0: every allocation */
    bool fp;               /* --call-graph fp (else CFI: libunwind) */
};
int cmd_record_heap(const struct heap_record_args *a);

#endif
