/*
 * trace_run.h - `ember trace` on a running program (trace_run.c): running
 * a command with tracing on, or following a process's or a file's trace,
 * recording what is read, so that the tools (cmd_trace.c) read the
 * recordings when it ends.
 */
#ifndef EMBER_CLI_TRACE_RUN_H
#define EMBER_CLI_TRACE_RUN_H

#include "ember/tracefile.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum { TRACE_RUN_MAX = 2 }; /* an ember ring file and an OCaml runtime_events file */

struct trace_run_opts {
    const char *out;         /* record: the recording's path; NULL: a temporary one */
    const char *ring;        /* EMBER_TRACE_RING for the command */
    const char *ocaml_wsize; /* OCAMLRUNPARAM's e= for the command, appended */
};

struct trace_run_stat {
    uint64_t events, lost, lost_words, packets;
};

/* What a run recorded: its recordings, the command's status and peak RSS. */
struct trace_run {
    char dir[4096]; /* the private directory (private_dir.c), "" when gone */
    int dir_lock;   /* its lock, held while we live */
    unsigned n;
    char recording[TRACE_RUN_MAX][4200];
    enum ember_trace_format format[TRACE_RUN_MAX];
    struct trace_run_stat stat[TRACE_RUN_MAX]; /* what was read of each */
    int status;                                /* the command's exit status, as a shell gives it */
    int64_t max_rss_kb;                        /* the command's peak RSS, -1 when not run by us */
    int64_t cpu_ns;                            /* its user + system CPU time, -1 likewise */
    bool failed;                               /* an error was said */
};

/* Runs argv with tracing on (ember/trace.h's drain mode, OCaml's runtime
 * events), following and recording each trace file it makes. */
int trace_run_command(struct trace_run *r, char **argv, const struct trace_run_opts *o);
/* Follows what (a PID, or a trace file) until its writer ends or SIGINT. */
int trace_run_follow(struct trace_run *r, const char *what, const struct trace_run_opts *o);
/* Removes the private directory and what is in it. */
void trace_run_done(struct trace_run *r);

/* Following a command's OCaml runtime events beside another tool (ember
 * record, which starts the command itself, when trace_side_wanted says it
 * may write them): trace_side_begin makes the private directory, opens
 * events_out (when not NULL: one that cannot be written is said before the
 * command runs) and sets this process's environment as for a traced run
 * (OCAML_RUNTIME_EVENTS_START, _PRESERVE, _DIR; OCAMLRUNPARAM is left as the
 * user set it), so that the command started next inherits it;
 * trace_side_command names the command (cmd, in messages) and its process; trace_side_poll follows
 * its file once it appears with a complete header (0: nothing to follow
 * yet or ever, 1: following, -1 after saying why); trace_side_finish lays
 * the recording out (into events_out, else a file in the private
 * directory) and gives its path, NULL when the command wrote no runtime
 * events. trace_side_free removes the private directory. */
struct trace_side;
int trace_side_begin(struct trace_side **s, const char *events_out);
/* Whether argv runs an OCaml 5 program in its own process, the one
 * followed (ocaml_exe.c): only then is a side worth its directory. */
bool trace_side_wanted(char *const *argv);
void trace_side_command(struct trace_side *s, const char *cmd, pid_t pid);
int trace_side_poll(struct trace_side *s, bool final);
const char *trace_side_finish(struct trace_side *s);
void trace_side_free(struct trace_side *s);

#endif
