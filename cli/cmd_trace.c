/*
 * cmd_trace.c - `ember trace`: reading what programs recorded with
 * ember/trace.h: dump, stats, latency, export.
 */
#include "cli.h"
#include "commands.h"
#include "ember/traceview.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char usage[] = "ember trace dump|stats|latency|export [options] FILE\n"
                            "       ember trace dump --follow PID|FILE";
static const char description[] =
    "Reads a trace file written by a program built with <ember/trace.h> and run with\n"
    "EMBER_TRACE=FILE, or by 'ember record'. The file may be from a running program\n"
    "(read without stopping it) or from one that ended or was killed.\n\n"
    "  dump     one line per event, in time order\n"
    "  stats    per span name: count, total, mean, min, p50, p90, p99, max\n"
    "  latency  an HdrHistogram of span durations (--span NAME for one span)\n"
    "  export   --format chrome|perfetto|ctf -o OUT (ctf: OUT is a directory)";

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

int cmd_follow(const char *what, const char *out, bool ticks);

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

int cmd_trace(int argc, char **argv)
{
    const char *out = NULL, *format = NULL, *span = NULL, *follow = NULL;
    bool ticks = false;
    const struct option opts[] = {
        {OPT_STRING, "output", 'o', &out, "FILE", "write to FILE", "stdout", NULL, false},
        {OPT_STRING, "format", 0, &format, "FORMAT",
         "export: chrome, perfetto or ctf; dump: ocaml (as OCaml's consumer reads the file)", NULL,
         NULL, false},
        {OPT_STRING, "span", 0, &span, "NAME", "latency: only spans named NAME", "all spans", NULL,
         false},
        {OPT_FLAG, "ticks", 0, &ticks, NULL, "dump: raw timestamps instead of seconds", NULL, NULL,
         false},
        {OPT_STRING, "follow", 'f', &follow, "PID|FILE",
         "dump: print events as a running program writes them", NULL, NULL, false},
        OPT_END_(),
    };
    int nargs = parse_options(argc, argv, opts, usage, description);
    if (nargs < 0)
        return nargs == -2 ? 0 : EXIT_USAGE;
    if (nargs < 1) {
        cli_error("which tool? dump, stats, latency or export (see 'ember trace --help')");
        return EXIT_USAGE;
    }
    const char *tool = argv[0];
    if (follow) {
        if (strcmp(tool, "dump") != 0 || nargs != 1) {
            cli_error("--follow goes with dump alone: ember trace dump --follow PID|FILE");
            return EXIT_USAGE;
        }
        return cmd_follow(follow, out, ticks);
    }
    if (nargs != 2) {
        cli_error("%s takes one trace file", tool);
        return EXIT_USAGE;
    }
    bool is_export = strcmp(tool, "export") == 0;
    if (strcmp(tool, "dump") && strcmp(tool, "stats") && strcmp(tool, "latency") && !is_export) {
        cli_error("unknown trace tool '%s' (dump, stats, latency or export)", tool);
        return EXIT_USAGE;
    }
    if (is_export && (!format || (strcmp(format, "chrome") && strcmp(format, "perfetto") &&
                                  strcmp(format, "ctf")))) {
        cli_error("export needs --format chrome, perfetto or ctf");
        return EXIT_USAGE;
    }
    if (!is_export && format && (strcmp(tool, "dump") || strcmp(format, "ocaml"))) {
        cli_error("--format goes with export (chrome, perfetto, ctf) or dump (ocaml)");
        return EXIT_USAGE;
    }
    if (is_export && strcmp(format, "ctf") == 0 && !out) {
        cli_error("export --format ctf needs -o DIRECTORY");
        return EXIT_USAGE;
    }

    struct ember_diag d;
    struct ember_trace *t;
    ember_diag_clear(&d);
    int err = ember_trace_open(&t, argv[1], &d);
    if (err) {
        cli_diag_error(&d, err);
        return 1;
    }
    if (!is_export && format && ember_trace_format(t) != EMBER_TRACE_OCAML) {
        cli_error("%s: dump --format ocaml reads OCaml runtime_events files, not ember traces",
                  argv[1]);
        ember_trace_close(t);
        return 1;
    }
    if (is_export && strcmp(format, "ctf") == 0) {
        int ret = export_ctf(t, argv[1], out);
        ember_trace_close(t);
        return ret;
    }
    struct cli_output o;
    if (cli_output_open(&o, out) < 0) {
        ember_trace_close(t);
        return 1;
    }
    struct ember_sink sink = cli_output_sink(&o);
    if (strcmp(tool, "dump") == 0 && format)
        err = ember_trace_dump_ocaml(t, &sink);
    else if (strcmp(tool, "dump") == 0)
        err = ember_trace_dump(t, &sink, ticks);
    else if (strcmp(tool, "stats") == 0)
        err = ember_trace_stats(t, &sink);
    else if (strcmp(tool, "latency") == 0)
        err = ember_trace_latency(t, span, &sink, &d);
    else if (strcmp(format, "chrome") == 0)
        err = ember_trace_export_chrome(t, &sink);
    else
        err = ember_trace_export_perfetto(t, &sink);
    if (!err || err == -ENODATA) /* nothing to show: what was lost may say why */
        report_losses(t, argv[1]);
    const struct ember_diag *why = ember_trace_error(t)->msg[0] ? ember_trace_error(t) : &d;
    int ret = cli_output_finish(&o, err, why);
    ember_trace_close(t);
    return ret;
}

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

int cmd_follow(const char *what, const char *out, bool ticks)
{
    char path[4096];
    bool pid = what[0] && strspn(what, "0123456789") == strlen(what);
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
    if (pid) {
        /* the process may not have started tracing yet: wait for its file */
        while (ember_trace_find_pid(atoi(what), path, sizeof(path)) <= 0) {
            if (interrupted || kill((pid_t)atoi(what), 0) < 0) {
                cli_error("process %s %s no ember trace file", what,
                          interrupted ? "has" : "ended with");
                return 1;
            }
            usleep(20000);
        }
    } else {
        snprintf(path, sizeof(path), "%s", what);
    }
    struct ember_diag d;
    struct ember_trace *f;
    ember_diag_clear(&d);
    int err = ember_trace_follow(&f, path, 60000, &d);
    if (err) {
        cli_diag_error(&d, err);
        return 1;
    }
    /* -o is made whole like every output: what was followed until the end
     * (or Ctrl-C) is renamed into place; an error leaves nothing */
    struct cli_output co;
    if (cli_output_open(&co, out) < 0) {
        ember_trace_close(f);
        return 1;
    }
    int fd = out ? dup(co.fd) : STDOUT_FILENO;
    FILE *o = out ? (fd >= 0 ? fdopen(fd, "w") : NULL) : stdout;
    if (!o) {
        cli_error("cannot write %s: %s", out ? out : "standard output", strerror(errno));
        if (fd >= 0 && out)
            close(fd);
        cli_output_abort(&co);
        ember_trace_close(f);
        return 1;
    }
    struct follow_out fo = {o, f, ticks};
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
        if (n == 0)
            usleep(10000);
    }
    report_losses(f, path);
    if (err)
        cli_diag_error(ember_trace_error(f), err);
    int werr = fflush(o) == 0 && !ferror(o) ? 0 : -errno;
    if (out && fclose(o) != 0 && !werr)
        werr = -errno;
    ember_trace_close(f);
    if (err) {
        cli_output_abort(&co);
        return 1;
    }
    return cli_output_finish(&co, werr, NULL);
}
