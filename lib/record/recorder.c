/*
 * recorder.c - the life of a recording (see ember/record.h): a command is
 * forked and waits on a pipe until its events are open (they enable
 * themselves at its exec, as perf's do); running processes get their
 * threads and maps written first, then their events enabled. With -p or
 * -a, a command only says how long to record: its end ends the recording. The rings are
 * polled and copied until the command (or every process) ends or the
 * caller stops; stop ends a command still running with SIGTERM, as perf
 * does (SIGKILL if it outlives that by kill_after_ms), copies what is left
 * and completes the file.
 *
 * Invariants: a child we forked is always reaped (by poll, stop or free);
 * its exec's failure comes back through a close-on-exec pipe as an errno,
 * never as output of ours. Nothing here prints or exits but the child
 * between fork and exec.
 */
#include "record/record_impl.h"
#include "base/diag.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The child: waits for a byte on go, then execs; an exec failure is sent
 * back as its errno. */
static void child_run(char *const *argv, int go, int report)
{
    char c;
    ssize_t n;
    do
        n = read(go, &c, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
        _exit(127); /* the recorder gave up before starting us */
    execvp(argv[0], argv);
    int err = errno;
    n = write(report, &err, sizeof(err));
    (void)n;
    _exit(127);
}

static int fork_command(struct ember_recorder *r, struct ember_diag *d)
{
    int go[2], report[2];
    if (pipe2(go, O_CLOEXEC) < 0)
        return ember_diag_set(d, -errno, "", 0, "pipe: %s", strerror(errno));
    if (pipe2(report, O_CLOEXEC) < 0) {
        int err = errno;
        close(go[0]);
        close(go[1]);
        return ember_diag_set(d, -err, "", 0, "pipe: %s", strerror(err));
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(go[1]);
        close(report[0]);
        child_run(r->o.argv, go[0], report[1]);
    }
    int err = errno;
    close(go[0]);
    close(report[1]);
    if (pid < 0) {
        close(go[1]);
        close(report[0]);
        return ember_diag_set(d, -err, "", 0, "cannot start %s: %s", r->o.argv[0], strerror(err));
    }
    r->child = pid;
    r->go_fd = go[1];
    r->exec_fd = report[0];
    /* where pidfds are missing (before 5.3), its end is seen at the next
     * poll's timeout */
    r->child_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    return 0;
}

static int check_opts(const struct ember_record_opts *o, struct ember_diag *d)
{
    if ((o->npids > 0) + o->system_wide + (o->argv != NULL) == 0 || (o->npids && o->system_wide))
        return ember_diag_set(d, -EINVAL, "", 0,
                              "record one of: a command, processes (-p) or the system (-a)");
    if (o->argv && !o->argv[0])
        return ember_diag_set(d, -EINVAL, "", 0, "which command?");
    if (o->dwarf && (o->stack_size % 8 || o->stack_size > 65528 || o->stack_size == 0))
        return ember_diag_set(d, -EINVAL, "", 0,
                              "the dwarf stack size %u is not a multiple of 8 up to 65528",
                              o->stack_size);
    unsigned max = 0;
    FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
    if (f && fscanf(f, "%u", &max) != 1)
        max = 0;
    if (f)
        fclose(f);
    if (o->freq == 0 || (max && o->freq > max))
        return ember_diag_set(d, -EINVAL, "", 0,
                              "%u Hz is not a sampling rate here: 1 to %u "
                              "(kernel.perf_event_max_sample_rate)",
                              o->freq, max);
    return 0;
}

static int setup(struct ember_recorder *r, struct ember_diag *d)
{
    int err = rec_online_cpus(r, d);
    if (!err && r->o.argv)
        err = fork_command(r, d);
    if (!err)
        err = rec_open_events(r, d);
    if (!err)
        err = rec_map_rings(r, d);
    if (!err)
        err = rec_write_head(r, d);
    if (!err)
        err = rec_synth_kernel(r, d);
    for (size_t i = 0; !err && i < r->o.npids; i++)
        err = rec_synth_process(r, r->o.pids[i], d);
    if (!err && r->o.system_wide)
        err = rec_synth_all(r, d);
    return err;
}

int ember_recorder_new(struct ember_recorder **out, const struct ember_record_opts *o, int fd,
                       struct ember_diag *d)
{
    *out = NULL;
    struct ember_record_opts opts = *o;
    if (!opts.freq)
        opts.freq = EMBER_RECORD_FREQ_DEFAULT;
    if (opts.dwarf && !opts.stack_size)
        opts.stack_size = EMBER_RECORD_STACK_DEFAULT;
    if (!opts.kill_after_ms)
        opts.kill_after_ms = EMBER_RECORD_KILL_AFTER_MS_DEFAULT;
    int err = check_opts(&opts, d);
    if (err)
        return err;
    struct ember_recorder *r = calloc(1, sizeof(*r));
    if (!r || ember_strmap_init(&r->dsos) < 0) {
        free(r);
        return -ENOMEM;
    }
    r->o = opts;
    r->out = fd;
    r->child = -1;
    r->child_pidfd = r->go_fd = r->exec_fd = -1;
    err = setup(r, d);
    if (err) {
        ember_recorder_free(r);
        return err;
    }
    *out = r;
    return 0;
}

/* The child's exec: 0 once it ran, else its errno (and it is reaped). */
static int release_child(struct ember_recorder *r, struct ember_diag *d)
{
    char go = 1;
    ssize_t n;
    do
        n = write(r->go_fd, &go, 1);
    while (n < 0 && errno == EINTR);
    close(r->go_fd);
    r->go_fd = -1;
    int err = 0;
    if (n == 1) {
        do
            n = read(r->exec_fd, &err, sizeof(err));
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof(err))
            err = 0;
    } else {
        err = EPIPE;
    }
    close(r->exec_fd);
    r->exec_fd = -1;
    if (!err)
        return 0;
    r->exec_errno = err;
    while (waitpid(r->child, &r->cmd_status, 0) < 0 && errno == EINTR)
        ;
    r->cmd_ended = true;
    return ember_diag_set(d, -err, "", 0, "cannot run %s: %s", r->o.argv[0], strerror(err));
}

/* A pidfd per process of -p: readable when it ends. */
static int watch_processes(struct ember_recorder *r)
{
    r->pidfds = calloc(r->o.npids ? r->o.npids : 1, sizeof(*r->pidfds));
    if (!r->pidfds)
        return -ENOMEM;
    for (size_t i = 0; i < r->o.npids; i++) {
        r->pidfds[i] = (int)syscall(SYS_pidfd_open, r->o.pids[i], 0);
        r->alive += r->pidfds[i] >= 0;
    }
    return 0;
}

int ember_recorder_start(struct ember_recorder *r, struct ember_diag *d)
{
    r->t0 = now_ns();
    r->started = true;
    int err = r->o.argv ? 0 : watch_processes(r);
    if (!err && !rec_command_only(r) && rec_enable(r, true) < 0)
        err = ember_diag_set(d, -errno, "", 0, "cannot enable the events: %s", strerror(errno));
    return !err && r->o.argv ? release_child(r, d) : err;
}

static bool child_ended(struct ember_recorder *r)
{
    if (r->cmd_ended)
        return true;
    pid_t w = waitpid(r->child, &r->cmd_status, WNOHANG);
    if (w == r->child)
        r->cmd_ended = true;
    return r->cmd_ended;
}

/* Forgets the processes of -p whose pidfd polled readable (the command's
 * is among p: its end is seen by waitpid). */
static void note_ended(struct ember_recorder *r, const struct pollfd *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!(p[i].revents & (POLLIN | POLLHUP)))
            continue;
        for (size_t k = 0; r->pidfds && k < r->o.npids; k++) {
            if (r->pidfds[k] == p[i].fd) {
                close(r->pidfds[k]);
                r->pidfds[k] = -1;
                r->alive--;
            }
        }
    }
}

/* The rings still polled (*rings of them), then the pidfds (the
 * command's, or those of -p); returns the count. The command's end wakes
 * the recorder at once, so that the caller's timeout can be long: each
 * wake-up is a context switch on CPUs the program may need. */
static size_t poll_set(struct ember_recorder *r, struct pollfd *p, size_t *rings)
{
    size_t n = 0;
    for (size_t c = 0; c < r->ncpus; c++)
        if (r->rings[c].base && !r->rings[c].hup)
            p[n++] = (struct pollfd){r->rings[c].fd, POLLIN, 0};
    *rings = n;
    if (r->child_pidfd >= 0 && !r->cmd_ended)
        p[n++] = (struct pollfd){r->child_pidfd, POLLIN, 0};
    for (size_t k = 0; r->pidfds && k < r->o.npids; k++)
        if (r->pidfds[k] >= 0)
            p[n++] = (struct pollfd){r->pidfds[k], POLLIN, 0};
    return n;
}

static void mark_hup(struct ember_recorder *r, const struct pollfd *p, size_t rings)
{
    for (size_t i = 0; i < rings; i++)
        if (p[i].revents & POLLHUP)
            for (size_t c = 0; c < r->ncpus; c++)
                if (r->rings[c].fd == p[i].fd)
                    r->rings[c].hup = true;
}

int ember_recorder_poll(struct ember_recorder *r, int timeout_ms, struct ember_diag *d)
{
    if (!r->started || r->stopped)
        return 0;
    struct pollfd *p = calloc(r->ncpus + r->o.npids + 2, sizeof(*p));
    if (!p)
        return -ENOMEM;
    size_t rings;
    size_t total = poll_set(r, p, &rings);
    int n = poll(p, (nfds_t)total, timeout_ms);
    if (n > 0) {
        mark_hup(r, p, rings);
        note_ended(r, p + rings, total - rings);
    }
    free(p);
    int err = rec_drain(r, d);
    if (err < 0)
        return err;
    if (r->o.argv)
        return child_ended(r) ? 0 : 1;
    return r->o.npids && r->alive == 0 ? 0 : 1;
}

/* Waits up to ms for the child to end (a pidfd polled; where there is
 * none, 10 ms naps). */
static void wait_child(struct ember_recorder *r, unsigned ms)
{
    int pidfd = (int)syscall(SYS_pidfd_open, r->child, 0);
    uint64_t until = now_ns() + (uint64_t)ms * 1000000u;
    for (uint64_t now = now_ns(); !child_ended(r) && now < until; now = now_ns()) {
        int left = (int)((until - now + 999999) / 1000000);
        if (pidfd >= 0) {
            struct pollfd p = {pidfd, POLLIN, 0};
            poll(&p, 1, left); /* interrupted: looked at again */
        } else {
            struct timespec nap = {0, 10000000L};
            nanosleep(&nap, NULL);
        }
    }
    if (pidfd >= 0)
        close(pidfd);
}

/* SIGTERM, as perf sends; a command that ignores it is not left running
 * past the recording (the caller would wait for ever): SIGKILL. */
static void end_child(struct ember_recorder *r)
{
    if (r->child <= 0 || r->cmd_ended)
        return;
    if (!child_ended(r)) {
        kill(r->child, SIGTERM);
        wait_child(r, r->o.kill_after_ms);
        if (!r->cmd_ended) {
            kill(r->child, SIGKILL);
            r->cmd_killed = true;
        }
    }
    while (!r->cmd_ended && waitpid(r->child, &r->cmd_status, 0) < 0 && errno == EINTR)
        ;
    r->cmd_ended = true;
}

int ember_recorder_stop(struct ember_recorder *r, struct ember_diag *d)
{
    if (r->stopped)
        return 0;
    r->stopped = true;
    rec_enable(r, false);
    r->t1 = now_ns(); /* the end: nothing is sampled after, nor the wait for the command */
    end_child(r);
    int err = rec_drain(r, d);
    return err ? err : rec_write_tail(r, d);
}

void ember_recorder_stats(const struct ember_recorder *r, struct ember_record_stats *s)
{
    memset(s, 0, sizeof(*s));
    s->samples = r->samples;
    s->switches = r->switches;
    s->lost = r->lost;
    s->duration_ns = r->t1 > r->t0 ? r->t1 - r->t0 : 0;
    s->data_bytes = r->data_size;
    s->event = r->event;
    s->event_fallback = r->event_fallback;
    s->kernel_excluded = r->attr.exclude_kernel;
    s->cmd_ended = r->cmd_ended;
    s->cmd_killed = r->cmd_killed;
    s->cmd_status = r->cmd_status;
    s->exec_errno = r->exec_errno;
    s->pid = r->child;
}

static void close_all(struct ember_recorder *r)
{
    for (size_t c = 0; r->rings && c < r->ncpus; c++)
        if (r->rings[c].base)
            munmap(r->rings[c].base, r->rings[c].len);
    for (size_t k = 0; k < r->nev; k++)
        close(r->ev[k].fd);
    for (size_t k = 0; r->pidfds && k < r->o.npids; k++)
        if (r->pidfds[k] >= 0)
            close(r->pidfds[k]);
    if (r->child_pidfd >= 0)
        close(r->child_pidfd);
    if (r->go_fd >= 0)
        close(r->go_fd); /* the child reads EOF and exits 127 */
    if (r->exec_fd >= 0)
        close(r->exec_fd);
}

void ember_recorder_free(struct ember_recorder *r)
{
    if (!r)
        return;
    close_all(r);
    if (r->child > 0 && !r->cmd_ended) {
        if (r->started)
            kill(r->child, SIGKILL);
        while (waitpid(r->child, &r->cmd_status, 0) < 0 && errno == EINTR)
            ;
    }
    free(r->rings);
    free(r->ev);
    free(r->cs_ids);
    free(r->cpus);
    free(r->pidfds);
    free(r->buf);
    ember_strmap_release(&r->dsos);
    free(r);
}
