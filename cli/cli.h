/*
 * cli.h - what ember's commands share: messages, output files, progress,
 * and reading profiles with the common options. Only the program prints
 * and exits; the library reports through return codes and diagnostics.
 */
#ifndef EMBER_CLI_H
#define EMBER_CLI_H

#include "ember/base.h"
#include "ember/read.h"
#include "ember/traceview.h"
#include "ember/model.h"
#include "ember/transform.h"
#include "parse_options.h"

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>

#define EMBER_VERSION "0.1.0"

/* Exit codes: 0 success, 1 the work failed (bad input...), 2 bad usage. */
enum { EXIT_USAGE = 2 };

/* ---- messages ---- */
void cli_set_command(const char *name);
const char *cli_command_name(void);
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "ember CMD: FILE:LINE: message" for a failure the library described. */
void cli_diag_error(const struct ember_diag *d, int err);
/* An ember_warn_fn that prints warnings, at most 10 per file. */
void cli_warn_cb(void *ctx, const struct ember_diag *d);
struct cli_warnings {
    char file[256];
    unsigned shown;
    uint64_t hidden;
};
void cli_warnings_flush(struct cli_warnings *w);

/* ---- output: stdout, or a file written atomically ---- */
/* The policy of every -o: the result is made beside its target and renamed
 * onto it at the end. A symlink is written through (the file it leads to is
 * replaced, the link stays); a replaced file keeps its mode; a new file gets
 * create_mode (0666 for cli_output_open) less the umask. Special files
 * (/dev/null, FIFOs) are written in place. */
struct cli_output {
    int fd;
    const char *path; /* as the user gave it, for messages; NULL: stdout */
    char *target;     /* path with its symlinks followed */
    char *tmp;        /* the temporary file renamed to target on commit */
    bool unnamed;     /* the temporary is unnamed (O_TMPFILE): tmp is its name at commit */
};
int cli_output_open(struct cli_output *o, const char *path);
int cli_output_open_mode(struct cli_output *o, const char *path, mode_t create_mode);
struct ember_sink cli_output_sink(struct cli_output *o);
/* Makes the output visible: returns 0, or -1 after printing why. */
int cli_output_commit(struct cli_output *o);
/* Removes a partial output. */
void cli_output_abort(struct cli_output *o);
/* Ends a write into o. On err (a negative code): says why (d's message
 * when d has one, else the system's, naming the output), removes the
 * partial output and returns 1. Otherwise commits: 0, or 1 after saying
 * why not. */
int cli_output_finish(struct cli_output *o, int err, const struct ember_diag *d);
/* The same, a diagnostic said as "cannot DOING: what d says". */
int cli_output_finish_doing(struct cli_output *o, int err, const struct ember_diag *d,
                            const char *doing);

/* Writes p as folded stacks into out (stdout when NULL); 0, or 1 after
 * saying what failed. */
int cli_write_folded(const struct ember_profile *p, const char *out);

/* Draws p as an SVG flame graph into out (stdout when NULL); 0, or 1
 * after saying what failed. */
struct ember_flame_opts;
int cli_render_flame(const struct ember_profile *p, const struct ember_flame_opts *fo,
                     const char *out);

/* A directory of results, made whole beside path and renamed to it at the
 * end. An existing path is replaced only if it holds nothing but files
 * ours() accepts (an earlier result). */
struct cli_output_dir {
    const char *path;
    char *tmp; /* where to write */
    bool (*ours)(const char *name);
};
int cli_output_dir_open(struct cli_output_dir *o, const char *path, bool (*ours)(const char *name));
int cli_output_dir_commit(struct cli_output_dir *o);
void cli_output_dir_abort(struct cli_output_dir *o);

/* ---- temporary outputs removed on SIGINT, SIGTERM, SIGHUP, SIGPIPE ---- */
/* Installs the handlers (main does, once); the handler removes what is
 * registered and re-raises the signal, so the exit status names it. */
void cli_cleanup_install(void);
/* Register or forget a temporary file or (flat) directory; -1 if full. */
int cli_cleanup_add(const char *path, bool dir);
void cli_cleanup_remove(const char *path);
/* Blocks the four signals around making or renaming a temporary. */
void cli_cleanup_block(sigset_t *old);
void cli_cleanup_unblock(const sigset_t *old);
/* While a command is recorded: SIGINT, SIGTERM and SIGHUP only set
 * cli_stop_asked (no SA_RESTART: a poll or waitpid returns at once), so
 * that the recording ends and is still written. */
extern volatile sig_atomic_t cli_stop_asked;
void cli_catch_stop_signals(void);

/* ---- private directories in TMPDIR (private_dir.c) ---- */
/* For files a program ember runs opens by path: makes TMPDIR/ember-run.XXXXXX
 * (path, cap bytes), locked (*lock) as long as this process lives and
 * registered with cleanup.c. 0, or -1 after saying why. */
int cli_private_dir_make(char *path, size_t cap, int *lock);
/* Removes those whose owner is gone (killed: nothing else removed them). */
void cli_private_dir_sweep(void);
/* Removes it and its files (it is flat), unregisters and unlocks it. */
void cli_private_dir_remove(char *path, int *lock);

/* ---- progress on stderr, for long inputs on a terminal ---- */
struct cli_progress {
    bool enabled;
    struct timespec start;
    double last;
    bool shown;
};
void cli_progress_init(struct cli_progress *pr);
void cli_progress_cb(void *ctx, const struct ember_input *in);
void cli_progress_done(struct cli_progress *pr);

/* ---- reading profiles with the options every reading command takes ---- */
struct cli_reader {
    const char *format;            /* "auto" or a format name */
    char format_help[512];         /* "input format: auto, perf, ...", from the registry */
    struct option *format_options; /* the formats' own options, from their rows */
    struct ember_read_opts ro;
    struct cli_progress progress;
    struct cli_warnings warnings;
    bool flamechart;                   /* keep the arrival sequence */
    struct ember_transform *transform; /* the transform options, NULL: none */
    const char *verb;                  /* for "nothing to VERB" */
    /* OCaml GC phases beside a perf.data recording (ember record's
     * OUT.events, or --gc-events): --during gc / --outside gc keep the
     * samples inside / outside them; timeline: the phases are read when
     * there (gc_phases, else NULL) and a perf.data input's samples' times
     * kept (gc.times) */
    const char *during, *outside, *gc_events;
    bool timeline;
    /* >= 0: the one input is this descriptor, read from its start, and
     * files[0] only its name in messages (ember record's unnamed
     * recording: nothing beside it either); -1 (cli_reader_init) */
    int input_fd;
    const char *title;     /* a speedscope timeline's name; NULL: "timeline" */
    const char *to_option; /* the window's end: "to" (cli_reader_init), or "until" */
    struct ember_gc_filter gc;
    struct ember_gc_phases *gc_phases;
};

void cli_reader_init(struct cli_reader *r);
void cli_reader_release(struct cli_reader *r);
/* The callback of the transform options: opt->value is the cli_reader. */
int cli_transform_option(const struct option *opt, const char *arg);
#define CLI_TRANSFORM_(r, name, argh, help)                                                        \
    {                                                                                              \
        OPT_CALLBACK, (name), 0, &(r), (argh), (help), NULL, cli_transform_option, (argh) != NULL  \
    }

/* --during gc, --outside gc and --gc-events: OCaml GC phases beside a
 * perf.data recording (the fields of struct cli_reader above). */
#define CLI_GC_OPTION_(field, name, argh, help, def)                                               \
    {                                                                                              \
        OPT_STRING, (name), 0, &(field), (argh), (help), (def), NULL, false                        \
    }
#define CLI_GC_OPTIONS_(r)                                                                         \
    OPT_GROUP_("OCaml 5 GC phases (perf.data recordings with their runtime events):"),             \
        CLI_GC_OPTION_((r).during, "during", "gc",                                                 \
                       "OCaml 5 perf.data: the samples inside GC phases", NULL),                   \
        CLI_GC_OPTION_((r).outside, "outside", "gc",                                               \
                       "OCaml 5 perf.data: the samples outside GC phases", NULL),                  \
        CLI_GC_OPTION_((r).gc_events, "gc-events", "FILE", "its runtime events (GC phases)",       \
                       "INPUT.events, as ember record keeps them")

/* --from TIME and --to TIME: a window of a recording's time (ro.from_ns,
 * ro.to_ns), for the formats that have times (heap recordings, memtrace);
 * the others refuse it (ember_format_read). The end's option is named by
 * the reader's to_option: "to", or "until" where --to is taken (convert's
 * output format). */
int cli_window_option(const struct option *opt, const char *arg);
#define CLI_WINDOW_OPTIONS_(r)                                                                     \
    OPT_GROUP_("Time window (heap recordings, memtrace traces; TIME from the recording's start: "  \
               "1.5 or 1.5s, 250ms, 100us, 10ns):"),                                               \
        {OPT_CALLBACK,                                                                             \
         "from",                                                                                   \
         0,                                                                                        \
         &(r),                                                                                     \
         "TIME",                                                                                   \
         "only the allocations made from TIME on; in use (inuse_*, live_*): what they still "      \
         "hold at the window's end",                                                               \
         "the start",                                                                              \
         cli_window_option,                                                                        \
         true},                                                                                    \
    {                                                                                              \
        OPT_CALLBACK, (r).to_option, 0, &(r), "TIME",                                              \
            "only the allocations made before TIME; in use: what is held at TIME (the heap then)", \
            "the end", cli_window_option, true                                                     \
    }

/* The rows of the option table for reading (r must outlive parsing): the
 * input options, each format's own (from its row in the registry, built
 * by cli_reader_init), and the transforms. */
#define CLI_READ_OPTIONS(r)                                                                        \
    OPT_GROUP_("Input options:"),                                                                  \
        {OPT_STRING, "format", 0, &(r).format, "NAME", (r).format_help, "auto", NULL, false},      \
        {OPT_UINT, "threads",                                                                      \
         'j',      &(r).ro.threads,                                                                \
         "N",      "threads reading large inputs (perf: N; folded, perf.data: 2; 0: per CPU)",     \
         "0",      NULL,                                                                           \
         false},                                                                                   \
        {OPT_STRING,                                                                               \
         "event",                                                                                  \
         0,                                                                                        \
         &(r).ro.value,                                                                            \
         "NAME",                                                                                   \
         "the value to show (Ir, D1mr for callgrind; cpu, alloc_space for pprof; samples), or "    \
         "its index",                                                                              \
         "the input's: pprof's default_sample_type, perf's periods, callgrind's first event",      \
         NULL,                                                                                     \
         false},                                                                                   \
        {OPT_STRING,    "sample-type", 0,                                                          \
         &(r).ro.value, "NAME",        "the same as --event (pprof's word)",                       \
         NULL,          NULL,          false},                                                     \
        {OPT_INCLUDE, NULL, 0, (r).format_options, NULL, NULL, NULL, NULL, false},                 \
        CLI_WINDOW_OPTIONS_(r), CLI_GC_OPTIONS_(r),                                                \
        OPT_GROUP_("Transforms (applied in this order, whatever the order given):"),               \
        CLI_TRANSFORM_(r, "demangle", NULL, "readable OCaml (Module.fn), C++ and Rust names"),     \
        CLI_TRANSFORM_(r, "merge-threads", NULL, "root frames comm-PID/TID become comm-PID"),      \
        CLI_TRANSFORM_(r, "skip-after", "NAME", "drop the callers of (the deepest) frame NAME"),   \
        CLI_TRANSFORM_(r, "focus", "RE", "keep only samples with a frame matching RE"),            \
        CLI_TRANSFORM_(r, "ignore", "RE", "drop samples with a frame matching RE"),                \
        CLI_TRANSFORM_(r, "hide", "RE", "drop frames matching RE, keep their callees"),            \
        CLI_TRANSFORM_(r, "collapse", "RE[=NAME]",                                                 \
                       "fold the first frame matching RE and its callees into one (NAME)"),        \
        CLI_TRANSFORM_(r, "collapse-gc", NULL, "fold OCaml's GC into one [GC] frame per caller"),  \
        CLI_TRANSFORM_(r, "prune-from", "RE", "drop the callees of the first frame matching RE"),  \
        CLI_TRANSFORM_(r, "flatten-recursion", NULL,                                               \
                       "merge recursion (a;b;b;c, f;g;f;g;h) into one frame per function"),        \
        CLI_TRANSFORM_(r, "reverse", NULL, "stacks read from the leaf: a bottom-up view")
/* Warns when a profile's values measure something else than (type, unit)
 * of another input: their sum or difference would mean nothing. */
void cli_check_units(const char *type, const char *unit, const char *name,
                     const struct ember_profile *other, const char *other_name,
                     const char *consequence);

/* Reads every file (none: stdin) into p. Returns 0, or 1 after printing
 * what failed (the exit code). */
int cli_read_profile(struct cli_reader *r, struct ember_profile *p, char **files, int nfiles);
/* After reading a perf.data recording with timeline set (r->gc.times):
 * CPU samples and GC phases (when found) on one time axis, as a Chrome
 * trace, Perfetto's protobuf or speedscope's evented profiles (named
 * title), into o (open; finished here: 0, or 1 after saying why). */
enum cli_timeline { CLI_TIMELINE_CHROME, CLI_TIMELINE_PERFETTO, CLI_TIMELINE_SPEEDSCOPE };
int cli_write_gc_timeline(struct cli_reader *r, const struct ember_profile *p, struct cli_output *o,
                          enum cli_timeline how);

#endif
