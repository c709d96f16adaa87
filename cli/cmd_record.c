/*
 * cmd_record.c - `ember record`: the sampler. Records a command (or running
 * processes, or the whole system) with perf_event_open into a perf.data
 * file (lib/record); `-o X.data` keeps that file, any other output is made
 * by reading the recording back through the perf.data reader, as every
 * ember command reads one, and writing it with the writer the extension
 * names (ember_writer_for_path): one path from the kernel's records to
 * every profile.
 *
 * Invariants: the output is opened (made unnamed beside its target,
 * renamed at the end: output.c) before the command starts, so that one
 * that cannot be written is said before the run, not after it. While
 * recording, SIGINT, SIGTERM and SIGHUP only ask the loop to stop (the
 * recording is still written); before and after, they remove the
 * temporaries as everywhere (cleanup.c). Nothing is left behind, kill -9
 * included: the recording for other outputs is an unnamed file
 * (record_back.c), an OCaml command's runtime events go to a private
 * directory that the next run removes if we could not (private_dir.c).
 * The exit status is the command's (a shell's 126/127 when it could not
 * run).
 *
 * An OCaml 5 command's runtime events are followed while it is sampled
 * (trace_run.c's environment and follower, as `ember trace record`; a
 * command is one when its program has OCaml's runtime: ocaml_exe.c): its
 * GC phases go with the recording, on the samples' clock. With -o X.data
 * they are kept in X.data.events - beside the file rather than inside it,
 * so that perf's tools read X.data as ever and ember trace and OCaml's own
 * consumer read X.data.events - which every ember command reading X.data
 * finds there (--during gc, --outside gc, convert --to chrome); other
 * outputs are made with them at once. A command that writes no runtime
 * events leaves nothing and says nothing.
 */
#include "cli.h"
#include "commands.h"
#include "record_back.h"
#include "trace_run.h"
#include "ember/write.h"
#include "ember/record.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char usage[] = "ember record [options] [-o OUT] -- CMD [ARGS...]\n"
                            "       ember record --heap [--sample-bytes N] [-o OUT] -- CMD...\n"
                            "       ember record [options] [-o OUT] -p PID[,PID...] [-- CMD...]\n"
                            "       ember record [options] [-o OUT] -a [--duration S] [-- CMD...]";
static const char description[] =
    "Samples where CMD (its threads and children), running processes or the whole\n"
    "system spend their CPU time, with perf_event_open (cycles where the hardware\n"
    "counts them, else cpu-clock), and writes by OUT's extension: .data a perf.data\n"
    "file (perf script, perf report and hotspot read it; so does every ember\n"
    "command), .svg a flame graph, .pb.gz pprof, .folded, .speedscope.json,\n"
    ".json a Chrome trace, .pftrace Perfetto's (the samples per thread in time).\n"
    "Ctrl-C stops recording and still writes OUT; the exit status is CMD's. With\n"
    "-p or -a, CMD only says how long to record (as perf's '-a -- sleep 5').\n"
    "-a needs kernel.perf_event_paranoid <= 0 or CAP_PERFMON.\n"
    "Running a traced program (<ember/trace.h>) and keeping its trace, which\n"
    "'ember record' did before, is 'ember trace record'.\n"
    "An OCaml 5 CMD's runtime events are followed too (OCAMLRUNPARAM untouched):\n"
    "-o X.data keeps them in X.data.events (removing an older one when CMD writes\n"
    "none), where 'ember flamegraph --during gc X.data' and 'ember convert --to\n"
    "chrome X.data' find its GC phases; -o X.json and -o X.pftrace draw the\n"
    "samples per thread and the GC phases per domain on one time axis; --during\n"
    "gc / --outside gc keep the samples taken inside / outside GC phases.\n"
    "With --off-cpu, the time threads spend switched out (sleeping, waiting for\n"
    "I/O or a lock, preempted) is in the profile too, under the stack where they\n"
    "blocked.\n"
    "With --heap, CMD's allocations instead (malloc, calloc, realloc, free, the\n"
    "aligned ones, C++ new and delete; its forks and execs too), every one or\n"
    "--sample-bytes N (one sample per N bytes on average, Poisson; 524288 as Go\n"
    "and jemalloc; 1: every one), by a preloaded library (libember-heap.so);\n"
    "-o X.heap keeps the recording. Not seen: memory that does not come from\n"
    "malloc (mmap, custom arenas, allocators such as jemalloc linked statically),\n"
    "statically linked and set-user-ID programs (said before they run).\n"
    "Examples:\n"
    "  ember record -- ./prog args              # ember.svg\n"
    "  ember record --heap -o prog.heap -- ./prog\n"
    "  ember record --off-cpu -o wall.svg -- ./server\n"
    "  ember record -F 999 --call-graph dwarf -o prog.data -- ./prog\n"
    "  ember record -p 1234 --duration 10 -o server.pb.gz\n"
    "  ember record -o gc.svg --during gc -- ./ocaml_prog";

enum { LEAF_STACK_DEFAULT = 128 };

struct record_args {
    int leaf_stack; /* fp: bytes of user stack per sample */
    unsigned freq;
    const char *call_graph, *out, *pids;
    bool all, off_cpu, heap;
    const char *sample_bytes; /* --heap: the mean distance between samples */
    double duration; /* seconds; INFINITY: until the command ends (the parser gives finite ones) */
    const char *during, *outside; /* gc: keep the samples inside / outside GC phases */
};

static int parse_call_graph(const char *s, struct ember_record_opts *ro)
{
    if (strcmp(s, "fp") == 0)
        return 0;
    if (strncmp(s, "dwarf", 5) != 0 || (s[5] && s[5] != ','))
        goto bad;
    ro->dwarf = true;
    if (s[5] == ',') {
        char *end;
        unsigned long size = strtoul(s + 6, &end, 10);
        if (end == s + 6 || *end || size == 0 || size > 65528)
            goto bad;
        ro->stack_size = (unsigned)((size + 7) & ~7ul); /* whole words, as perf rounds */
    }
    return 0;
bad:
    cli_error("--call-graph '%s': expected fp, dwarf or dwarf,SIZE (bytes of stack, up to 65528)",
              s);
    return -1;
}

/* "12,345" into pids; -1 after saying what is wrong. */
static int parse_pids(const char *s, pid_t **pids, size_t *n)
{
    size_t cap = strlen(s) / 2 + 1;
    *pids = calloc(cap, sizeof(**pids));
    *n = 0;
    if (!*pids)
        return -1;
    for (const char *p = s;;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v <= 0 || v > 0x3fffffff || (*end && *end != ',') || *n == cap) {
            cli_error("-p '%s': expected process ids separated by commas", s);
            return -1;
        }
        (*pids)[(*n)++] = (pid_t)v;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

static bool ends_with(const char *path, const char *ext)
{
    size_t n = strlen(path), k = strlen(ext);
    return n >= k && strcmp(path + n - k, ext) == 0;
}

static bool is_data(const char *path)
{
    return ends_with(path, ".data");
}

/* Perfetto's protobuf: the samples (and GC phases) on their time axis. */
static bool is_perfetto(const char *path)
{
    return ends_with(path, ".pftrace") || ends_with(path, ".perfetto-trace");
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Follows the runtime events a little further; a follower that fails has
 * said why, and the recording goes on without them. */
static int follow_gc(struct trace_side *side, bool final)
{
    int n = side ? trace_side_poll(side, final) : 0;
    if (n < 0)
        cli_warning("the recording goes on without the program's GC phases");
    return n;
}

/* An OCaml program opens its runtime events as its runtime starts: a
 * command without them after this long is not one, and is no longer
 * looked at while it runs (a file that comes later is still read whole
 * when it ends: the runtime keeps it). */
enum { GC_LOOK_SECONDS = 2 };

/* Polls until the command ends, a signal or the duration. */
static int record_loop(struct ember_recorder *rec, double duration, struct trace_side *side,
                       struct ember_diag *d)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (cli_stop_asked)
            return 0;
        if (side && follow_gc(side, false) <= 0 && seconds_since(&t0) > GC_LOOK_SECONDS)
            side = NULL;
        /* OCaml's rings are small: read them often; else the command's end
         * and the samples' rings wake the recorder, and the timeout only
         * bounds how late a signal that came between two polls is seen */
        int timeout = side ? 10 : 1000;
        if (isfinite(duration)) {
            double left = duration - seconds_since(&t0);
            if (left <= 0)
                return 0;
            if (left * 1000 < timeout)
                timeout = (int)(left * 1000) + 1;
        }
        int rc = ember_recorder_poll(rec, timeout, d);
        if (rc <= 0)
            return rc;
    }
}

/* A shell's status for a command: its exit code, 128 + a signal. */
static int command_status(const struct ember_record_stats *st)
{
    if (st->exec_errno)
        return st->exec_errno == ENOENT || st->exec_errno == ENOTDIR ? 127 : 126;
    if (!st->cmd_ended)
        return 0;
    if (WIFEXITED(st->cmd_status))
        return WEXITSTATUS(st->cmd_status);
    return WIFSIGNALED(st->cmd_status) ? 128 + WTERMSIG(st->cmd_status) : 1;
}

/* Records into fd; the stats, and 0 or the exit code after saying why. */
static int record_into(const struct ember_record_opts *ro, const struct record_args *a, int fd,
                       const char *name, struct trace_side *side, struct ember_record_stats *st)
{
    struct ember_diag d;
    ember_diag_clear(&d);
    struct ember_recorder *rec = NULL;
    memset(st, 0, sizeof(*st));
    int err = ember_recorder_new(&rec, ro, fd, &d);
    if (!err && side) {
        ember_recorder_stats(rec, st);
        trace_side_command(side, ro->argv[0], st->pid);
    }
    if (!err)
        err = ember_recorder_start(rec, &d);
    if (!err)
        err = record_loop(rec, a->duration, side, &d);
    int stop_err = rec ? ember_recorder_stop(rec, err ? NULL : &d) : 0;
    if (!err && !stop_err)
        follow_gc(side, true); /* what it wrote before it ended */
    if (rec)
        ember_recorder_stats(rec, st);
    if (st->cmd_killed)
        cli_warning("%s did not end within %g s of SIGTERM: killed it (SIGKILL)", ro->argv[0],
                    EMBER_RECORD_KILL_AFTER_MS_DEFAULT / 1000.0);
    ember_recorder_free(rec);
    cli_cleanup_install();
    if (err || stop_err) {
        if ((err ? err : stop_err) == -EIO && !d.file[0]) /* the output failed: name it */
            snprintf(d.file, sizeof(d.file), "%s", name);
        cli_diag_error(&d, err ? err : stop_err);
        return st->exec_errno ? command_status(st) : 1;
    }
    return 0;
}

static void summary(const struct ember_record_stats *st, bool off_cpu, const char *out,
                    const char *events)
{
    char switches[64] = "";
    if (off_cpu)
        snprintf(switches, sizeof(switches), ", %llu context switches",
                 (unsigned long long)st->switches);
    fprintf(stderr, "%s: %llu samples of %s%s%s, %llu lost, %.2f s, wrote %s%s%s\n",
            cli_command_name(), (unsigned long long)st->samples, st->event,
            st->event_fallback ? " (no cycles counter here)" : "", switches,
            (unsigned long long)st->lost, (double)st->duration_ns / 1e9, out,
            events ? " and its GC phases in " : "", events ? events : "");
}

/* The runtime events an OCaml command writes are followed when ember
 * starts the command itself; with -o X.data they are kept in X.data.events
 * (events_out, also for another command, -p or -a: an older one goes, so
 * that X.data is never read with another run's GC phases). Either way,
 * what killed embers left in TMPDIR goes. */
static int gc_follower(const struct ember_record_opts *ro, const char *out,
                       struct trace_side **side, char **events_out)
{
    *side = NULL;
    *events_out = NULL;
    bool ours = ro->argv && !ro->system_wide && !ro->npids;
    if (is_data(out) && asprintf(events_out, "%s.events", out) < 0) {
        *events_out = NULL;
        cli_error("out of memory");
        return -1;
    }
    if (ours && trace_side_wanted(ro->argv))
        return trace_side_begin(side, *events_out); /* sweeps too */
    cli_private_dir_sweep();
    return 0;
}

/* A recording into X.data (o): X.data, and X.data.events when the command
 * wrote runtime events (an older X.data.events would pair this recording
 * with another run's GC phases: it goes). */
static int record_data(const struct ember_record_opts *ro, const struct record_args *a,
                       struct cli_output *o, struct trace_side *side, const char *events_out)
{
    struct ember_record_stats st;
    int ret = record_into(ro, a, o->fd, a->out, side, &st);
    if (ret) {
        cli_output_abort(o);
        return ret;
    }
    if (cli_output_commit(o) < 0)
        return 1;
    const char *events = side ? trace_side_finish(side) : NULL;
    if (!events && events_out && unlink(events_out) < 0 && errno != ENOENT)
        cli_warning("cannot remove %s, an older recording's runtime events: %s", events_out,
                    strerror(errno));
    summary(&st, a->off_cpu, a->out, events);
    return command_status(&st);
}

/* A recording made into another output (o, as w writes it), with the GC
 * phases when the command wrote runtime events. */
static int record_other(const struct ember_record_opts *ro, const struct record_args *a,
                        const struct ember_writer_format *w, struct cli_output *o,
                        struct trace_side *side)
{
    struct record_back b = {.w = w, .during = a->during, .outside = a->outside};
    record_back_names(&b, ro);
    struct ember_record_stats st;
    int fd = record_back_scratch(&b);
    char where[sizeof(b.name) + 64]; /* a write that fails: the recording's file system */
    snprintf(where, sizeof(where), "%s in %s", b.name, record_back_dir());
    int ret = fd < 0 ? 1 : record_into(ro, a, fd, where, side, &st);
    b.events = !ret && side ? trace_side_finish(side) : NULL;
    if (!ret && !b.events && (a->during || a->outside)) {
        cli_error("--%s gc: %s wrote no OCaml runtime events (an OCaml 5 program writes them)",
                  a->during ? "during" : "outside", ro->argv ? ro->argv[0] : "the command");
        ret = 1;
    }
    if (ret)
        cli_output_abort(o);
    else
        ret = record_back_write(&b, fd, o);
    if (fd >= 0)
        close(fd);
    if (ret)
        return ret;
    summary(&st, a->off_cpu, a->out, NULL);
    return command_status(&st);
}

/* OUT's writer (NULL for .data and Perfetto's timeline): 0, or the exit
 * code after saying why there is none. */
static int out_format(const char *out, const struct ember_writer_format **w)
{
    *w = is_data(out) || is_perfetto(out) ? NULL : ember_writer_for_path(out);
    if (!is_data(out) && !is_perfetto(out) && !*w) {
        cli_error("-o %s: which format? name it .data (perf.data), .svg, .pb.gz, .folded, "
                  ".speedscope.json, .json or .pftrace",
                  out);
        return EXIT_USAGE;
    }
    if (!is_data(out) && !ember_format_find("perf.data")) {
        cli_error("-o %s: this ember cannot read perf.data files back; record to a .data file",
                  out);
        return 1;
    }
    return 0;
}

static int run(const struct ember_record_opts *ro, const struct record_args *a)
{
    /* from here a Ctrl-C stops the recording (at once if it comes before)
     * and what was recorded is written; cleanup.c's handlers come back
     * when recording ends */
    cli_catch_stop_signals();
    const struct ember_writer_format *w;
    int ret = out_format(a->out, &w);
    if (ret)
        return ret;
    /* OUT can be written, or it is said now: not once the command has run
     * (a perf.data file is written as it records) */
    struct cli_output o;
    if (cli_output_open_mode(&o, a->out, is_data(a->out) ? 0600 : 0666) < 0)
        return 1;
    struct trace_side *side;
    char *events_out;
    if (gc_follower(ro, a->out, &side, &events_out) < 0) {
        cli_output_abort(&o);
        ret = 1;
    } else {
        ret = is_data(a->out) ? record_data(ro, a, &o, side, events_out)
                              : record_other(ro, a, w, &o, side);
    }
    trace_side_free(side);
    free(events_out);
    return ret;
}

/* --during gc, --outside gc: for the outputs made from the recording. */
static int check_gc_filter(const struct record_args *a)
{
    const char *what = a->during ? a->during : a->outside;
    if (!what)
        return 0;
    if (a->during && a->outside) {
        cli_error("--during and --outside: one or the other");
        return EXIT_USAGE;
    }
    if (strcmp(what, "gc") != 0) {
        cli_error("--%s %s: expected gc (the OCaml program's GC phases)",
                  a->during ? "during" : "outside", what);
        return EXIT_USAGE;
    }
    if (is_data(a->out)) {
        cli_error("--%s gc: a .data recording keeps every sample; filter when reading it "
                  "(ember flamegraph --%s gc %s)",
                  a->during ? "during" : "outside", a->during ? "during" : "outside", a->out);
        return EXIT_USAGE;
    }
    return 0;
}

/* --leaf-stack in whole words. */
static unsigned leaf_stack(const struct record_args *a)
{
    return ((unsigned)a->leaf_stack + 7) & ~7u;
}

/* -F, --duration and --leaf-stack in their ranges: 0, or EXIT_USAGE after saying why. */
static int check_numbers(const struct record_args *a)
{
    if (a->freq == 0) {
        cli_error("-F 0: expected samples per second, 1 or more");
        return EXIT_USAGE;
    }
    if (!(a->duration > 0)) {
        cli_error("--duration %g: expected seconds above 0", a->duration);
        return EXIT_USAGE;
    }
    if (a->leaf_stack > 65528 || a->leaf_stack < 0) {
        cli_error("--leaf-stack %d: 0 to 65528 bytes", a->leaf_stack);
        return EXIT_USAGE;
    }
    return 0;
}

/* What to record: a command, -p or -a (with a command: while it runs). */
static int check_target(int nargs, const struct record_args *a)
{
    if (a->pids && a->all) {
        cli_error("-p and -a: one or the other");
        return EXIT_USAGE;
    }
    if (nargs > 0 || a->pids || a->all)
        return 0;
    cli_error("what to record? ember record [options] -- CMD [ARGS...] (or -p PID, -a)");
    return EXIT_USAGE;
}

/* --heap: what it cannot go with, then cmd_record_heap.c. */
static int record_heap(const struct record_args *a, int nargs, char **argv)
{
    struct heap_record_args h = {.argv = argv, .out = a->out};
    char *end = NULL;
    if (!a->heap || a->pids || a->all || a->off_cpu || a->during || a->outside || !nargs) {
        cli_error(!a->heap ? "--sample-bytes goes with --heap"
                  : !nargs ? "what to record? ember record --heap -- CMD [ARGS...]"
                           : "--heap records a command it runs: not with -p, -a, --off-cpu, "
                             "--during or --outside");
        return EXIT_USAGE;
    }
    if (a->sample_bytes)
        h.sample_bytes = strtoull(a->sample_bytes, &end, 10);
    if (a->sample_bytes && (!*a->sample_bytes || *end || *a->sample_bytes == '-')) {
        cli_error("--sample-bytes %s: expected a number of bytes", a->sample_bytes);
        return EXIT_USAGE;
    }
    if (a->call_graph && strcmp(a->call_graph, "fp") != 0 && strcmp(a->call_graph, "dwarf") != 0) {
        cli_error("--call-graph %s: with --heap, fp or dwarf", a->call_graph);
        return EXIT_USAGE;
    }
    h.fp = a->call_graph && strcmp(a->call_graph, "fp") == 0;
    return cmd_record_heap(&h);
}

int cmd_record(int argc, char **argv)
{
    struct record_args a = {.freq = EMBER_RECORD_FREQ_DEFAULT,
                            .out = "ember.svg",
                            .duration = INFINITY,
                            .leaf_stack = LEAF_STACK_DEFAULT};
    const struct option opts[] = {
        {OPT_UINT, "freq", 'F', &a.freq, "HZ", "samples per second (and CPU)", "4000, as perf",
         NULL, false},
        {OPT_STRING, "call-graph", 0, &a.call_graph, "MODE",
         "fp (frame pointers) or dwarf[,SIZE] (SIZE bytes of stack per sample; --heap: libunwind)",
         "fp; dwarf: 8192; --heap: dwarf", NULL, false},
        {OPT_STRING, "output", 'o', &a.out, "OUT", "the output; its extension says the format",
         "ember.svg", NULL, false},
        {OPT_STRING, "pid", 'p', &a.pids, "PID,...", "record running processes (every thread)",
         NULL, NULL, false},
        {OPT_FLAG, "all-cpus", 'a', &a.all, NULL, "record the whole system", NULL, NULL, false},
        {OPT_FLAG, "off-cpu", 0, &a.off_cpu, NULL,
         "also where threads wait: every context switch with its stack; graphs show wall time, "
         "the waits under [off-cpu] (blocked) and [preempted] frames (--event off-cpu or cpu "
         "for one side); sampling is cpu-clock",
         NULL, NULL, false},
        {OPT_DOUBLE, "duration", 0, &a.duration, "S",
         "stop after S seconds (CMD gets SIGTERM, and SIGKILL 2 s later if it runs on)",
         "until CMD (or the processes) end, or Ctrl-C", NULL, false},
        {OPT_FLAG, "heap", 0, &a.heap, NULL,
         "record CMD's allocations (malloc...) with their stacks, not its CPU time", NULL, NULL,
         false},
        {OPT_STRING, "sample-bytes", 0, &a.sample_bytes, "N",
         "--heap: sample one allocation per N bytes on average", "every allocation", NULL, false},
        {OPT_STRING, "during", 0, &a.during, "gc",
         "an OCaml 5 CMD: only the samples taken inside its GC phases", NULL, NULL, false},
        {OPT_STRING, "outside", 0, &a.outside, "gc",
         "an OCaml 5 CMD: only the samples taken outside its GC phases", NULL, NULL, false},
        {OPT_INT, "leaf-stack", 0, &a.leaf_stack, "BYTES",
         "fp: BYTES of stack per sample, where a frameless leaf's caller is (0: none)", "128", NULL,
         false},
        OPT_END_(),
    };
    /* the command line as given, for the file's header (parsing reorders argv) */
    char **cmdline = calloc((size_t)argc + 2, sizeof(*cmdline));
    if (!cmdline) {
        cli_error("out of memory");
        return 1;
    }
    cmdline[0] = "ember";
    memcpy(cmdline + 1, argv, (size_t)argc * sizeof(*argv));
    int nargs = parse_options(argc, argv, opts, usage, description);
    int bad = nargs < 0 ? (nargs == -2 ? 0 : EXIT_USAGE) : check_target(nargs, &a);
    if (!bad && nargs >= 0) /* -F, --duration and --leaf-stack are in range */
        bad = check_gc_filter(&a) ? EXIT_USAGE : check_numbers(&a);
    if (!bad && nargs >= 0 && (a.heap || a.sample_bytes)) {
        free(cmdline);
        argv[nargs] = NULL;
        return record_heap(&a, nargs, argv);
    }
    if (nargs < 0 || bad) {
        free(cmdline);
        return bad;
    }
    struct ember_record_opts ro = {.freq = a.freq, .cmdline = cmdline};
    pid_t *pids = NULL;
    if (parse_call_graph(a.call_graph ? a.call_graph : "fp", &ro) < 0 ||
        (a.pids && parse_pids(a.pids, &pids, &ro.npids) < 0)) {
        free(pids);
        free(cmdline);
        return EXIT_USAGE;
    }
    ro.pids = pids;
    ro.system_wide = a.all;
    ro.off_cpu = a.off_cpu;
    ro.fp_stack = leaf_stack(&a);
    argv[nargs] = NULL;
    ro.argv = nargs > 0 ? argv : NULL;
    ro.tool_version = "ember " EMBER_VERSION;
    int ret = run(&ro, &a);
    free(pids);
    free(cmdline);
    return ret;
}
