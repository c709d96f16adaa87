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
    "latency|export OUT'. The exit status is CMD's; as a shell's, 127 when CMD is not\n"
    "found and 126 when it cannot be run.";

static volatile sig_atomic_t stop;

static void forward(int sig)
{
    stop = sig;
}

/* Runs argv with tracing on into live. The exec's failure comes back
 * through a close-on-exec pipe, so that it is told once, by the parent,
 * with the exit status a shell gives: the pipe closes without a word when
 * the exec succeeds. */
static pid_t start(char **argv, const char *live, const char *ring, int *exec_err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid_t child = fork();
    if (child == 0) {
        close(p[0]);
        setenv("EMBER_TRACE", live, 1);
        setenv("EMBER_TRACE_MODE", "drain", 1);
        if (ring)
            setenv("EMBER_TRACE_RING", ring, 1);
        execvp(argv[0], argv);
        int err = errno;
        ssize_t w = write(p[1], &err, sizeof(err));
        (void)w; /* the parent then sees the exit status alone */
        _exit(127);
    }
    int fork_err = errno;
    close(p[1]);
    ssize_t n = 0;
    if (child > 0)
        do
            n = read(p[0], exec_err, sizeof(*exec_err));
        while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(*exec_err))
        *exec_err = 0;
    close(p[0]);
    errno = fork_err; /* why fork failed, when it did */
    return child;
}

/* Removes the (emptied) rings directory and forgets it. */
static void forget_dir(const char *dir)
{
    sigset_t old;
    cli_cleanup_block(&old);
    rmdir(dir);
    cli_cleanup_remove(dir);
    cli_cleanup_unblock(&old);
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
    /* the child's rings, possibly large: removed if a signal ends us */
    char dir[] = "/tmp/ember-record.XXXXXX";
    sigset_t old;
    cli_cleanup_block(&old);
    bool made = mkdtemp(dir) && cli_cleanup_add(dir, true) == 0;
    cli_cleanup_unblock(&old);
    if (!made) {
        cli_error("cannot create a directory in /tmp: %s", strerror(errno));
        return 1;
    }
    char live[64];
    snprintf(live, sizeof(live), "%s/rings", dir);
    struct cli_output o;
    /* 0600 when new, as the library makes the rings it copies */
    if (cli_output_open_mode(&o, out, 0600) < 0) {
        forget_dir(dir);
        return 1;
    }
    int exec_err = 0;
    pid_t child = start(argv, live, ring, &exec_err);
    if (child < 0 || exec_err) {
        int err = exec_err ? exec_err : errno;
        cli_error("cannot %s %s: %s", exec_err ? "run" : "start", argv[0], strerror(err));
        cli_output_abort(&o);
        forget_dir(dir);
        if (child > 0)
            waitpid(child, NULL, 0);
        /* as a shell: not found, or found but not runnable */
        return child < 0 ? 1 : err == ENOENT || err == ENOTDIR ? 127 : 126;
    }
    signal(SIGINT, forward);
    signal(SIGTERM, forward);
    signal(SIGHUP, forward); /* the terminal closed: stop CMD, keep what was recorded */

    /* Wait for the child's trace file; it may never come (not traced). */
    struct ember_trace *f = NULL;
    struct ember_diag d;
    int status = 0;
    bool exited = false;
    for (;;) {
        ember_diag_clear(&d);
        /* once it has exited, one last look: it may have traced and ended
         * between two looks */
        if (ember_trace_follow(&f, live, exited ? 0 : 20, &d) == 0 || exited)
            break;
        exited = waitpid(child, &status, WNOHANG) == child;
    }
    struct ember_trace_recorder *rec = NULL;
    int err = f ? ember_trace_recorder_new(&rec, f, o.fd) : 0;
    while (f && !err) {
        if (!exited)
            exited = waitpid(child, &status, WNOHANG) == child;
        if (stop && !exited)
            kill(child, (int)stop), stop = 0;
        int n = ember_trace_record_poll(rec, exited);
        err = n < 0 ? n : 0;
        if (exited)
            break;
        if (n == 0)
            usleep(5000);
    }
    if (!exited)
        waitpid(child, &status, 0);
    if (f && !err)
        err = ember_trace_recorder_finish(rec);
    uint64_t events = 0, lost = 0, packets = 0;
    for (unsigned i = 0; f && i < ember_trace_ring_count(f); i++) {
        events += ember_trace_ring(f, i)->events;
        lost += ember_trace_ring(f, i)->lost;
        packets += ember_trace_ring(f, i)->packets;
    }
    ember_trace_recorder_free(rec);
    ember_trace_close(f);
    unlink(live);
    forget_dir(dir);
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
