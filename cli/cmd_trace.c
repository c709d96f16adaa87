/*
 * cmd_trace.c - `ember trace`: the tools that read traces (ember/trace.h's
 * ring files and recordings, OCaml 5 runtime_events files) - dump, stats,
 * latency, gc-stats, export - on a file, on a live process or file
 * (--follow), or on a command run for the purpose (-- CMD ARGS, then the
 * result is printed or written when it exits); and record, which keeps the
 * recording (`ember record` was its name until the sampler took it).
 * Running and following are in trace_run.c; this file parses, opens and
 * prints.
 */
#include "cli.h"
#include "commands.h"
#include "ember/traceview.h"
#include "trace_run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "ember trace dump|stats|latency|gc-stats|export [options] FILE\n"
    "       ember trace dump|stats|latency|gc-stats|export [options] --follow PID|FILE\n"
    "       ember trace record|dump|stats|latency|gc-stats|export [options] -- CMD [ARGS...]";
static const char description_head[] =
    "Reads traces: files written by programs built with <ember/trace.h> (run with\n"
    "EMBER_TRACE=FILE) and OCaml 5 programs' runtime_events files (<pid>.events), from\n"
    "a running program (read without stopping it) or from one that ended or was killed.\n"
    "With --follow, a running process (or file) is followed until it ends or Ctrl-C;\n"
    "with -- CMD, CMD is run with tracing on (both kinds) and followed while it runs;\n"
    "either way the tool's result comes at the end (dump --follow prints as it goes).\n";

struct tool_opts {
    const char *tool, *out, *format, *span, *ocaml_version;
    bool ticks, json;
    int64_t max_rss_kb, cpu_ns;
};

/* " (name)" of a thread, escaped as dump prints it, or "". */
static const char *thread_label(const struct ember_trace_ring *r, char *buf, size_t cap)
{
    char name[4 * sizeof(r->name)];
    if (!r->name[0])
        return "";
    ember_trace_escape(r->name, name, sizeof(name));
    snprintf(buf, cap, " (%s)", name);
    return buf;
}

/* Warns of the events a thread's ring lost, if any (OCaml: words, which
 * the format counts; it does not number events). */
static void warn_losses(const struct ember_trace_ring *r)
{
    char label[4 * sizeof(r->name) + 4];
    if (r->lost_words)
        cli_warning("ring %u%s: %llu words lost (overwritten before they were read; at most "
                    "%llu events, each is 2 words or more), %llu events read",
                    r->tid, thread_label(r, label, sizeof(label)),
                    (unsigned long long)r->lost_words, (unsigned long long)r->lost_words / 2,
                    (unsigned long long)r->events);
    if (r->lost)
        cli_warning("thread %u%s: %llu events lost (overwritten or dropped%s), %llu read", r->tid,
                    thread_label(r, label, sizeof(label)), (unsigned long long)r->lost,
                    r->cut ? ", or cut off" : "", (unsigned long long)r->events);
}

/* Warns that the file is cut short (a flight recorder's file gives back
 * what survived: not an error) and of what each ring lost with the cut. */
static void warn_cut(const char *path, bool cut, uint64_t size, uint64_t expected)
{
    if (!cut)
        return;
    if (expected)
        cli_warning("%s: cut short at byte %llu of %llu: read up to the cut", path,
                    (unsigned long long)size, (unsigned long long)expected);
    else
        cli_warning("%s: cut short at byte %llu: read up to the cut", path,
                    (unsigned long long)size);
}

static void warn_ring_cut(const char *path, unsigned i, const struct ember_trace_ring *r)
{
    char label[4 * sizeof(r->name) + 4], which[96], events[64] = "";
    if (!r->cut)
        return;
    if (r->cut == 1)
        snprintf(which, sizeof(which), "number %llu", (unsigned long long)r->cut_first);
    else
        snprintf(which, sizeof(which), "numbers %s%llu to %llu",
                 r->cut_last - r->cut_first + 1 == r->cut ? "" : "between ",
                 (unsigned long long)r->cut_first, (unsigned long long)r->cut_last);
    if (r->cut_events)
        snprintf(events, sizeof(events), ", %llu events with them",
                 (unsigned long long)r->cut_events);
    cli_warning("%s: ring %u, thread %u%s: %llu packet%s cut off (%s)%s", path, i, r->tid,
                thread_label(r, label, sizeof(label)), (unsigned long long)r->cut,
                r->cut == 1 ? "" : "s", which, events);
}

/* What the last pass over t could not read: the cut, then the losses. */
static void report_losses(struct ember_trace *t, const char *path)
{
    uint64_t size, expected;
    bool cut = ember_trace_cut_short(t, &size, &expected);
    warn_cut(path, cut, size, expected);
    for (unsigned i = 0; i < ember_trace_ring_count(t); i++)
        warn_ring_cut(path, i, ember_trace_ring(t, i));
    for (unsigned i = 0; i < ember_trace_ring_count(t); i++)
        warn_losses(ember_trace_ring(t, i));
}

/* The files of a CTF export: an earlier export may be replaced. */
static bool ctf_file(const char *name)
{
    return strcmp(name, "metadata") == 0 || strncmp(name, "stream_", 7) == 0;
}

static int export_ctf(struct ember_trace *t, const char *path, const char *out)
{
    struct cli_output_dir o;
    if (cli_output_dir_open(&o, out, ctf_file) < 0)
        return 1;
    struct ember_diag d;
    ember_diag_clear(&d);
    int err = ember_trace_export_ctf(t, o.tmp, &d);
    if (err) {
        cli_diag_error(ember_trace_error(t)->msg[0] ? ember_trace_error(t) : &d, err);
        cli_output_dir_abort(&o);
        return 1;
    }
    report_losses(t, path);
    return cli_output_dir_commit(&o) < 0 ? 1 : 0;
}

static int run_dump(struct ember_trace *t, const struct tool_opts *o, const struct ember_sink *sink,
                    struct ember_diag *d)
{
    (void)d;
    return o->format ? ember_trace_dump_ocaml(t, sink) : ember_trace_dump(t, sink, o->ticks);
}

static int run_stats(struct ember_trace *t, const struct tool_opts *o,
                     const struct ember_sink *sink, struct ember_diag *d)
{
    (void)o, (void)d;
    return ember_trace_stats(t, sink);
}

static int run_latency(struct ember_trace *t, const struct tool_opts *o,
                       const struct ember_sink *sink, struct ember_diag *d)
{
    return !o->span && ember_trace_format(t) == EMBER_TRACE_OCAML
               ? ember_trace_gc_latency(t, sink, d)
               : ember_trace_latency(t, o->span, sink, d);
}

static int run_gc_stats(struct ember_trace *t, const struct tool_opts *o,
                        const struct ember_sink *sink, struct ember_diag *d)
{
    struct ember_gc_options go = {o->max_rss_kb, o->cpu_ns, o->json};
    return ember_trace_gc_stats(t, &go, sink, d);
}

/* chrome or perfetto: ctf, a directory, is written by export_ctf. */
static int run_export(struct ember_trace *t, const struct tool_opts *o,
                      const struct ember_sink *sink, struct ember_diag *d)
{
    (void)d;
    if (strcmp(o->format, "chrome") == 0)
        return ember_trace_export_chrome(t, sink);
    return ember_trace_export_perfetto(t, sink);
}

/* The tools: the name the command line gives, what runs it on a trace
 * into a sink (0 or a negative error, d saying why; NULL for record, which
 * only follows a command), and its lines in --help. */
static const struct trace_tool {
    const char *name;
    int (*run)(struct ember_trace *t, const struct tool_opts *o, const struct ember_sink *sink,
               struct ember_diag *d);
    const char *help;
} tools[] = {
    {"dump", run_dump,
     "  dump      one line per event, in time order (--format ocaml: as OCaml's own\n"
     "            consumer reads a runtime_events file, ring by ring)\n"},
    {"stats", run_stats,
     "  stats     per span name: count, total, mean, min, p50, p90, p99, max\n"},
    {"latency", run_latency,
     "  latency   span durations in HdrHistogram's percentile table, and a chart\n"
     "            (--span NAME for one span); of an OCaml program, its GC pauses\n"},
    /* the note on percentiles follows the last of the tools it is about */
    {"gc-stats", run_gc_stats,
     "  gc-stats  an OCaml program's wall time, domain time (the sum of its domains'\n"
     "            lifetimes, which olly calls CPU time), GC time per domain, GC\n"
     "            pauses, allocations and collections, as olly gc-stats (--json);\n"
     "            CPU time and max RSS when ember ran the program (-- CMD)\n"
     "  Percentiles (stats, latency, gc-stats) are exact, by nearest rank: the pth\n"
     "  percentile of n durations is the ceil(p/100 x n)-th smallest, a duration\n"
     "  measured, never interpolated or bucketed\n"},
    {"export", run_export,
     "  export    --format chrome|perfetto|ctf -o OUT (ctf: OUT is a directory)\n"},
    {"record", NULL,
     "  record    -- CMD: runs CMD traced and drains its rings while it runs: the\n"
     "            <ember/trace.h> rings in drain mode (nothing is overwritten while\n"
     "            ember keeps up; what it misses is counted), OCaml's runtime_events\n"
     "            rings as they fill (OCaml's writer never waits: words overwritten\n"
     "            unread are counted); all that was read goes to OUT (-o, default\n"
     "            ember.trace; a program traced both ways also gets OUT.events, its\n"
     "            OCaml events). It was 'ember record', which now samples\n"
     "            (perf_event_open)"},
};

static const struct trace_tool *find_tool(const char *name)
{
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
        if (strcmp(name, tools[i].name) == 0)
            return &tools[i];
    return NULL;
}

/* --help's description: what the command reads, then each tool's lines. */
static const char *describe(char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "%s\n", description_head);
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]) && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s", tools[i].help);
    return buf;
}

/* Opens a trace file as the tools read it. */
static struct ember_trace *open_trace(const char *path, const struct tool_opts *o)
{
    struct ember_diag d;
    struct ember_trace *t;
    ember_diag_clear(&d);
    int err = ember_trace_open(&t, path, &d);
    if (err) {
        cli_diag_error(&d, err);
        return NULL;
    }
    if (o->ocaml_version && ember_trace_set_ocaml_version(t, o->ocaml_version) < 0) {
        cli_error("--ocaml-version %s: 5.0 to 5.5", o->ocaml_version);
        ember_trace_close(t);
        return NULL;
    }
    if (strcmp(o->tool, "dump") == 0 && o->format && ember_trace_format(t) != EMBER_TRACE_OCAML) {
        cli_error("%s: dump --format ocaml reads OCaml runtime_events files, not ember traces",
                  path);
        ember_trace_close(t);
        return NULL;
    }
    return t;
}

/* The tool on the files, one after the other into one output. */
static int tools_on_files(char **paths, unsigned n, const struct tool_opts *o)
{
    if (strcmp(o->tool, "export") == 0 && strcmp(o->format, "ctf") == 0) {
        if (n > 1)
            cli_warning("a CTF export holds one trace: %s only", paths[0]);
        struct ember_trace *t = open_trace(paths[0], o);
        int ret = t ? export_ctf(t, paths[0], o->out) : 1;
        ember_trace_close(t);
        return ret;
    }
    struct cli_output out;
    if (cli_output_open(&out, o->out) < 0)
        return 1;
    struct ember_sink sink = cli_output_sink(&out);
    struct ember_diag d;
    ember_diag_clear(&d);
    int err = 0;
    const struct ember_diag *why = &d;
    struct ember_trace *t = NULL;
    for (unsigned i = 0; i < n && !err; i++) {
        ember_trace_close(t);
        if (!(t = open_trace(paths[i], o))) {
            cli_output_abort(&out);
            return 1;
        }
        err = find_tool(o->tool)->run(t, o, &sink, &d);
        if (!err || err == -ENODATA) /* nothing to show: what was lost may say why */
            report_losses(t, paths[i]);
        why = ember_trace_error(t)->msg[0] ? ember_trace_error(t) : &d;
        if (err)
            d = *why, why = &d;
    }
    int ret = cli_output_finish(&out, err, why);
    ember_trace_close(t);
    return ret;
}

/* ---- dump --follow: events printed as they are written -------------------- */

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

struct follow_out {
    FILE *out;
    struct ember_trace *t;
    bool ticks;
};

static int follow_event(void *ctx, const struct ember_trace_event *e)
{
    struct follow_out *o = ctx;
    char line[16384]; /* the longest line, every name escaped */
    size_t n = ember_trace_event_line(e, ember_trace_ring(o->t, e->ring)->name, o->ticks, line,
                                      sizeof(line));
    return fwrite(line, 1, n, o->out) == n ? 0 : -EIO;
}

static int find_followed(const char *what, char *path, size_t cap)
{
    bool pid = what[0] && strspn(what, "0123456789") == strlen(what);
    if (!pid) {
        snprintf(path, cap, "%s", what);
        return 0;
    }
    /* the process may not have started tracing yet: wait for its file */
    while (ember_trace_find_pid(atoi(what), path, cap) <= 0) {
        if (interrupted || kill((pid_t)atoi(what), 0) < 0) {
            cli_error("process %s %s no trace file", what, interrupted ? "has" : "ended with");
            return -1;
        }
        usleep(20000);
    }
    return 0;
}

static int dump_follow(const char *what, const struct tool_opts *opts)
{
    char path[4096];
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
    if (find_followed(what, path, sizeof(path)) < 0)
        return 1;
    struct ember_diag d;
    struct ember_trace *f;
    ember_diag_clear(&d);
    int err = ember_trace_follow(&f, path, 60000, &d);
    if (!err && opts->ocaml_version)
        err = ember_trace_set_ocaml_version(f, opts->ocaml_version);
    if (err) {
        cli_diag_error(&d, err);
        ember_trace_close(f);
        return 1;
    }
    /* -o is made whole like every output: what was followed until the end
     * (or Ctrl-C) is renamed into place; an error leaves nothing */
    struct cli_output co;
    if (cli_output_open(&co, opts->out) < 0) {
        ember_trace_close(f);
        return 1;
    }
    int fd = opts->out ? dup(co.fd) : STDOUT_FILENO;
    FILE *o = opts->out ? (fd >= 0 ? fdopen(fd, "w") : NULL) : stdout;
    if (!o) {
        cli_error("cannot write %s: %s", opts->out ? opts->out : "standard output",
                  strerror(errno));
        if (fd >= 0 && opts->out)
            close(fd);
        cli_output_abort(&co);
        ember_trace_close(f);
        return 1;
    }
    struct follow_out fo = {o, f, opts->ticks};
    for (;;) {
        bool alive = ember_trace_writer_alive(f);
        int n = ember_trace_poll(f, follow_event, &fo, !alive);
        if (n < 0) {
            err = n;
            break;
        }
        fflush(o);
        if (!alive || interrupted)
            break;
        /* a poll holds back what a late event may precede until the next
         * one, and one that reads nothing hands out all: polls 10 ms apart
         * give a descheduled writer that long to write its event */
        usleep(10000);
    }
    report_losses(f, path);
    if (err)
        cli_diag_error(ember_trace_error(f), err);
    int werr = fflush(o) == 0 && !ferror(o) ? 0 : -errno;
    if (opts->out && fclose(o) != 0 && !werr)
        werr = -errno;
    ember_trace_close(f);
    if (err) {
        cli_output_abort(&co);
        return 1;
    }
    return cli_output_finish(&co, werr, NULL);
}

/* ---- on a running program ------------------------------------------------ */

/* What record says of each recording. */
static void record_summary(const struct trace_run *r)
{
    for (unsigned i = 0; i < r->n; i++) {
        const struct trace_run_stat *st = &r->stat[i];
        if (r->format[i] == EMBER_TRACE_OCAML)
            fprintf(stderr, "%s: %llu events, %llu words lost -> %s\n", cli_command_name(),
                    (unsigned long long)st->events, (unsigned long long)st->lost_words,
                    r->recording[i]);
        else
            fprintf(stderr, "%s: %llu events, %llu lost, %llu packets -> %s\n", cli_command_name(),
                    (unsigned long long)st->events, (unsigned long long)st->lost,
                    (unsigned long long)st->packets, r->recording[i]);
    }
}

static int on_running(const struct tool_opts *o, char **cmd, const char *follow, const char *ring,
                      const char *wsize)
{
    bool record = strcmp(o->tool, "record") == 0;
    struct trace_run_opts ro = {record ? (o->out ? o->out : "ember.trace") : NULL, ring, wsize};
    struct trace_run r;
    int err = follow ? trace_run_follow(&r, follow, &ro) : trace_run_command(&r, cmd, &ro);
    int ret = err ? 1 : 0;
    if (!err && record) {
        record_summary(&r);
    } else if (!err) {
        struct tool_opts to = *o;
        to.max_rss_kb = r.max_rss_kb;
        to.cpu_ns = r.cpu_ns;
        char *paths[TRACE_RUN_MAX];
        for (unsigned i = 0; i < r.n; i++)
            paths[i] = r.recording[i];
        ret = tools_on_files(paths, r.n, &to);
    }
    trace_run_done(&r);
    /* a command's status is ours, as a shell's (126, 127: it could not run)
     * when it failed or ember did not (record's trace not written, a tool's
     * error): a run that lost its trace never says 0 */
    if (follow)
        return ret;
    return r.status || !ret ? r.status : ret;
}

/* ---- the command line ------------------------------------------------------ */

/* Whether the options go together: 0, or EXIT_USAGE after saying why. */
static int check_options(const struct tool_opts *o, bool command, const char *follow, int nargs)
{
    const char *tool = o->tool;
    bool is_export = strcmp(tool, "export") == 0;
    if (!find_tool(tool)) {
        cli_error("unknown trace tool '%s' (dump, stats, latency, gc-stats, export or record)",
                  tool);
        return EXIT_USAGE;
    }
    if (command && follow) {
        cli_error("--follow and -- CMD: one or the other");
        return EXIT_USAGE;
    }
    if (strcmp(tool, "record") == 0 && !command && !follow) {
        cli_error("record needs a command: ember trace record [-o OUT] -- CMD [ARGS...]");
        return EXIT_USAGE;
    }
    if (!command && !follow && nargs != 2) {
        cli_error("%s takes one trace file (or --follow PID|FILE, or -- CMD ARGS)", tool);
        return EXIT_USAGE;
    }
    if ((command && nargs < 2) || (follow && nargs != 1)) {
        cli_error(command ? "which command? ember trace %s -- CMD [ARGS...]"
                          : "%s --follow takes no file",
                  tool);
        return EXIT_USAGE;
    }
    if (is_export && (!o->format || (strcmp(o->format, "chrome") && strcmp(o->format, "perfetto") &&
                                     strcmp(o->format, "ctf")))) {
        cli_error("export needs --format chrome, perfetto or ctf");
        return EXIT_USAGE;
    }
    if (!is_export && o->format && (strcmp(tool, "dump") || strcmp(o->format, "ocaml"))) {
        cli_error("--format goes with export (chrome, perfetto, ctf) or dump (ocaml)");
        return EXIT_USAGE;
    }
    if (is_export && strcmp(o->format, "ctf") == 0 && !o->out) {
        cli_error("export --format ctf needs -o DIRECTORY");
        return EXIT_USAGE;
    }
    return 0;
}

static bool has_dashdash(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0)
            return true;
    return false;
}

int cmd_trace(int argc, char **argv)
{
    struct tool_opts o = {.max_rss_kb = -1, .cpu_ns = -1};
    const char *follow = NULL, *ring = NULL, *wsize = NULL;
    const struct option opts[] = {
        {OPT_STRING, "output", 'o', &o.out, "FILE", "write to FILE (record: ember.trace)", "stdout",
         NULL, false},
        {OPT_STRING, "format", 0, &o.format, "FORMAT",
         "export: chrome, perfetto or ctf; dump: ocaml (as OCaml's consumer reads the file)", NULL,
         NULL, false},
        {OPT_STRING, "span", 0, &o.span, "NAME", "latency: only spans named NAME",
         "all spans (OCaml: GC pauses)", NULL, false},
        {OPT_FLAG, "ticks", 0, &o.ticks, NULL, "dump: raw timestamps instead of seconds", NULL,
         NULL, false},
        {OPT_FLAG, "json", 0, &o.json, NULL,
         "gc-stats: as JSON (olly's keys, version 3: its cpu_time is domain_time; cpu_time is "
         "the command's, or null)",
         NULL, NULL, false},
        {OPT_STRING, "follow", 'f', &follow, "PID|FILE",
         "read a running program's trace until it ends (dump: as it is written)", NULL, NULL,
         false},
        {OPT_STRING, "ocaml-version", 0, &o.ocaml_version, "V",
         "OCaml runtime events named as OCaml V names them (5.0-5.2 or 5.3-5.5)", "5.2", NULL,
         false},
        {OPT_STRING, "ring", 0, &ring, "BYTES", "-- CMD: ring size per thread (ember/trace.h)",
         "1 MiB", NULL, false},
        {OPT_STRING, "ocaml-ring-wsize", 0, &wsize, "N",
         "-- CMD: OCaml rings of 2^N words (appends e=N to OCAMLRUNPARAM)", "OCaml's, 16", NULL,
         false},
        OPT_END_(),
    };
    bool command = has_dashdash(argc, argv);
    char description[4096];
    int nargs = parse_options(argc, argv, opts, usage, describe(description, sizeof(description)));
    if (nargs < 0)
        return nargs == -2 ? 0 : EXIT_USAGE;
    if (nargs < 1) {
        cli_error("which tool? dump, stats, latency, gc-stats, export or record (see 'ember "
                  "trace --help')");
        return EXIT_USAGE;
    }
    o.tool = argv[0];
    int bad = check_options(&o, command, follow, nargs);
    if (bad)
        return bad;
    if (follow && strcmp(o.tool, "dump") == 0)
        return dump_follow(follow, &o);
    if (follow || command) {
        argv[nargs] = NULL;
        return on_running(&o, argv + 1, follow, ring, wsize);
    }
    return tools_on_files(argv + 1, 1, &o);
}
