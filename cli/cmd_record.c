/*
 * cmd_record.c - `ember record -- CMD`: runs CMD with tracing on
 * (EMBER_TRACE in drain mode, into a private ring file) and drains its
 * rings into a trace file while it runs, so that nothing is lost as long as
 * the drain keeps up, whatever the rings' size. The result is read by every
 * `ember trace` tool.
 * The output is a packet log (lib/ring/log.c).
 */
#include "cli.h"
#include "commands.h"
#include "ember/tracefile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage[] = "ember record [-o OUT] [--ring BYTES] -- CMD [ARGS...]";
static const char description[] =
    "Runs CMD with tracing enabled (for programs built with <ember/trace.h>) and drains\n"
    "its events to OUT while it runs. Read the result with 'ember trace dump|stats|\n"
    "latency|export OUT'. The exit status is CMD's.";

static volatile sig_atomic_t stop;

static void forward(int sig)
{
    stop = sig;
}

int cmd_record(int argc, char **argv)
{
    const char *out = "ember.trace", *ring = NULL;
    const struct option opts[] = {
        {OPT_STRING, "output", 'o', &out, "FILE", "the trace file to write", "ember.trace", NULL,
         false},
        {OPT_STRING, "ring", 0, &ring, "BYTES", "ring size per thread", "1 MiB", NULL, false},
        OPT_END_(),
    };
    int nargs = parse_options(argc, argv, opts, usage, description);
    if (nargs < 0)
        return nargs == -2 ? 0 : EXIT_USAGE;
    if (nargs < 1) {
        cli_error("which command? %s", usage);
        return EXIT_USAGE;
    }
    char dir[] = "/tmp/ember-record.XXXXXX";
    if (!mkdtemp(dir)) {
        cli_error("cannot create a directory in /tmp: %s", strerror(errno));
        return 1;
    }
    char live[64];
    snprintf(live, sizeof(live), "%s/rings", dir);
    struct cli_output o;
    /* 0600 when new, as the library makes the rings it copies */
    if (cli_output_open_mode(&o, out, 0600) < 0) {
        rmdir(dir);
        return 1;
    }
    pid_t child = fork();
    if (child == 0) {
        setenv("EMBER_TRACE", live, 1);
        setenv("EMBER_TRACE_MODE", "drain", 1);
        if (ring)
            setenv("EMBER_TRACE_RING", ring, 1);
        execvp(argv[0], argv);
        fprintf(stderr, "ember record: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (child < 0) {
        cli_error("cannot start %s: %s", argv[0], strerror(errno));
        cli_output_abort(&o);
        rmdir(dir);
        return 1;
    }
    signal(SIGINT, forward);
    signal(SIGTERM, forward);

    /* Wait for the child's trace file; it may never come (not traced). */
    struct ember_follow *f = NULL;
    struct ember_diag d;
    int status = 0;
    bool exited = false;
    while (!f && !exited) {
        ember_diag_clear(&d);
        if (ember_follow_open(&f, live, 20, &d) == 0)
            break;
        exited = waitpid(child, &status, WNOHANG) == child;
    }
    struct ember_trace_log *log = NULL;
    int err = f ? ember_trace_log_new(&log, f, o.fd) : 0;
    while (f && !err) {
        if (!exited)
            exited = waitpid(child, &status, WNOHANG) == child;
        if (stop && !exited)
            kill(child, (int)stop), stop = 0;
        int n = ember_follow_poll(f, NULL, NULL, ember_trace_log_packet, log, exited);
        if (n < 0)
            err = n;
        if (exited)
            break;
        if (n == 0)
            usleep(5000);
    }
    if (!exited)
        waitpid(child, &status, 0);
    if (f && !err)
        err = ember_trace_log_finish(log);
    uint64_t events = 0, lost = 0, packets = log ? ember_trace_log_packets(log) : 0;
    for (unsigned i = 0; f && i < ember_follow_ring_count(f); i++) {
        events += ember_follow_ring(f, i)->events;
        lost += ember_follow_ring(f, i)->lost;
    }
    ember_trace_log_free(log);
    ember_follow_close(f);
    unlink(live);
    rmdir(dir);
    if (!f) {
        cli_error("%s did not trace (is it built with <ember/trace.h>?)", argv[0]);
        cli_output_abort(&o);
    } else if (err) {
        cli_error("cannot record into %s: %s", out, strerror(-err));
        cli_output_abort(&o);
    } else if (cli_output_commit(&o) == 0) {
        fprintf(stderr, "ember record: %llu events, %llu lost, %llu packets -> %s\n",
                (unsigned long long)events, (unsigned long long)lost, (unsigned long long)packets,
                out);
    }
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
