/*
 * commands.h - ember's subcommands, one file each (cmd_<name>.c).
 * Each takes argv with argv[0] the command name and returns the exit code.
 */
#ifndef EMBER_CLI_COMMANDS_H
#define EMBER_CLI_COMMANDS_H

int cmd_collapse(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_record(int argc, char **argv);

#endif
