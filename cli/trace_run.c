/*
 * trace_run.c - `ember trace record|dump|stats|latency|gc-stats|export --
 * CMD` and `--follow PID|FILE`: the program's trace files are found as they
 * appear (an ember/trace.h ring file, in drain mode, so that the rings are
 * emptied as fast as they fill; an OCaml 5 runtime_events file), each
 * opened once its header is complete (polling, never a fixed sleep),
 * followed while the program runs and recorded; the tools read the
 * recordings at the end.
 *
 * The command's environment: EMBER_TRACE (a file in a private directory)
 * and EMBER_TRACE_MODE=drain; OCAML_RUNTIME_EVENTS_START=1, _PRESERVE=1
 * (its file must outlive it until read: a program that ends within
 * milliseconds is read whole after it exits) and _DIR, the private
 * directory unless the user set one; OCAMLRUNPARAM gets e=N appended when
 * asked (the user's settings are kept, and win). The private directory is
 * removed at the end, or by cleanup.c if a signal ends us; a file the
 * program left in the user's directory is removed unless the user asked to
 * preserve it.
 *
 * Recordings: an ember ring file's packets go to the output as they are
 * read (a packet log); an OCaml file's words to a spool, laid out as a
 * runtime_events file at the end. With -o OUT, OUT; a program traced both
 * ways also gets OUT.events, its OCaml runtime events.
 */
#include "trace_run.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct live {
    char path[4200]; /* the file being followed */
    char name[512];  /* its name in messages when path is ours ("the runtime events of CMD"),
                        else "": a path in our directory names nothing the user knows */
    struct ember_trace *t;
    struct ember_trace_recorder *rec;
    struct cli_output o; /* ember rings recorded into -o OUT */
    bool user_out;
    int fd, scratch;
    char recording[4200];
};

struct runner {
    struct trace_run *r;
    const struct trace_run_opts *o;
    struct live live[TRACE_RUN_MAX]; /* 0: ember's rings, 1: OCaml's events */
    char ember_path[4200], ocaml_dir[4096];
    bool ocaml_dir_ours, ocaml_preserve;
    pid_t pid;
    struct cli_output out; /* o->out, opened before the program runs */
    bool out_ready;        /* out is open and no recording has taken it yet */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    stop = sig;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Whether an OCAMLRUNPARAM sets e= already. */
static bool sets_wsize(const char *params)
{
    for (const char *p = params; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
        if (p[0] == 'e' && p[1] == '=')
            return true;
    return false;
}

/* The environment that makes an OCaml 5 program write its runtime events
 * where we follow them. */
static void ocaml_env(const struct runner *rn)
{
    setenv("OCAML_RUNTIME_EVENTS_START", "1", 1);
    setenv("OCAML_RUNTIME_EVENTS_PRESERVE", "1", 1);
    if (rn->ocaml_dir_ours)
        setenv("OCAML_RUNTIME_EVENTS_DIR", rn->ocaml_dir, 1);
    /* OCaml reads OCAMLRUNPARAM, else CAMLRUNPARAM: append to the one it
     * would read, so that the user's settings stay */
    const char *user = getenv("OCAMLRUNPARAM") ? getenv("OCAMLRUNPARAM") : getenv("CAMLRUNPARAM");
    if (rn->o->ocaml_wsize && !sets_wsize(user)) {
        char params[4096];
        snprintf(params, sizeof(params), "%s%se=%s", user ? user : "", user && *user ? "," : "",
                 rn->o->ocaml_wsize);
        setenv("OCAMLRUNPARAM", params, 1);
    }
}

/* In the child: the environment of a traced run. */
static void child_env(const struct runner *rn)
{
    setenv("EMBER_TRACE", rn->ember_path, 1);
    setenv("EMBER_TRACE_MODE", "drain", 1);
    if (rn->o->ring)
        setenv("EMBER_TRACE_RING", rn->o->ring, 1);
    ocaml_env(rn);
}

/* Runs argv; its exec's failure comes back through a close-on-exec pipe,
 * so that it is told once, by us, with the status a shell gives. */
static pid_t start(struct runner *rn, char **argv, int *exec_err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid_t child = fork();
    if (child == 0) {
        close(p[0]);
        child_env(rn);
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
    errno = fork_err;
    return child;
}

/* A file in the private directory, created for us alone. */
static int private_file(struct runner *rn, const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", rn->r->dir, name);
    return open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
}

/* What the library says about l's file, said with l's name. */
static void live_error(const struct live *l, const struct ember_diag *d, int err)
{
    struct ember_diag named = *d;
    if (l->name[0] && d->file[0])
        snprintf(named.file, sizeof(named.file), "%.*s", (int)sizeof(named.file) - 1, l->name);
    cli_diag_error(&named, err);
}

static const char *live_name(const struct live *l)
{
    return l->name[0] ? l->name : l->path;
}

/* A recording of l's that cannot be made in the private directory: said
 * as where that is (TMPDIR), its own name being ours alone. */
static void cannot_record_here(const struct runner *rn, const struct live *l)
{
    int err = errno;
    const char *slash = strrchr(rn->r->dir, '/');
    cli_error("cannot record %s in %.*s: %s", live_name(l),
              slash ? (int)(slash - rn->r->dir) : (int)strlen(rn->r->dir), rn->r->dir,
              strerror(err));
}

/* o->out, opened before anything runs: one that cannot be written is said
 * at once, not once the program has run. */
static int open_out(struct runner *rn)
{
    if (!rn->o->out)
        return 0;
    if (cli_output_open_mode(&rn->out, rn->o->out, 0600) < 0) /* 0600 as the rings it copies */
        return -1;
    rn->out_ready = true;
    return 0;
}

/* The recording l is made into path: the output opened first when path
 * is it, else path opened now (OUT.events beside OUT). */
static int take_out(struct runner *rn, struct live *l, const char *path)
{
    if (rn->out_ready && strcmp(path, rn->o->out) == 0) {
        l->o = rn->out;
        rn->out_ready = false;
    } else if (cli_output_open_mode(&l->o, path, 0600) < 0) {
        return -1;
    }
    l->user_out = true;
    l->fd = l->o.fd;
    return 0;
}

/* The trace at l->path is there with a complete header: followed and
 * recorded from now on. */
static int begin_recording(struct runner *rn, struct live *l, unsigned slot)
{
    bool ember = ember_trace_format(l->t) != EMBER_TRACE_OCAML;
    static const char *const names[] = {"ember.trace", "ocaml.events"};
    l->fd = l->scratch = -1;
    if (ember && rn->o->out) {
        if (take_out(rn, l, rn->o->out) < 0)
            return -1;
    } else if (ember) {
        l->fd = private_file(rn, names[slot], l->recording, sizeof(l->recording));
    } else {
        char spool[4200];
        l->scratch = private_file(rn, "ocaml.spool", spool, sizeof(spool));
    }
    if ((ember && l->fd < 0) || (!ember && l->scratch < 0)) {
        cannot_record_here(rn, l);
        return -1;
    }
    int err = ember_trace_recorder_new(&l->rec, l->t, l->fd, l->scratch);
    if (err) {
        cli_error("cannot record %s: %s", live_name(l), strerror(-err));
        return -1;
    }
    return 0;
}

/* One look at the trace files not open yet. */
static int look(struct runner *rn)
{
    for (unsigned i = 0; i < TRACE_RUN_MAX; i++) {
        struct live *l = &rn->live[i];
        if (l->t || !l->path[0])
            continue;
        struct ember_diag d;
        ember_diag_clear(&d);
        int err = ember_trace_follow(&l->t, l->path, 0, &d);
        if (err == -ETIMEDOUT)
            continue; /* not there, or its header not written, yet */
        if (err) {
            live_error(l, &d, err);
            return -1;
        }
        if (begin_recording(rn, l, i) < 0)
            return -1;
    }
    return 0;
}

/* Records what each trace gained: how much, or -1 after saying why not. */
static int poll_all(struct runner *rn, bool final)
{
    int total = 0;
    for (unsigned i = 0; i < TRACE_RUN_MAX; i++) {
        struct live *l = &rn->live[i];
        if (!l->rec)
            continue;
        int n = ember_trace_record_poll(l->rec, final);
        if (n < 0) {
            const struct ember_diag *why = ember_trace_error(l->t);
            if (why->msg[0])
                live_error(l, why, n);
            else
                cli_error("%s: %s", live_name(l), strerror(-n));
            return -1;
        }
        total += n;
    }
    return total;
}

/* The OCaml recording: OUT, or OUT.events beside an ember one. */
static int finish_ocaml(struct runner *rn, struct live *l, char *path, size_t cap)
{
    const char *out = rn->o->out;
    char both[4200];
    if (out && rn->live[0].t) {
        snprintf(both, sizeof(both), "%s.events", out);
        out = both;
    }
    if (out) {
        if (take_out(rn, l, out) < 0)
            return -1;
        snprintf(path, cap, "%s", out);
    } else if ((l->fd = private_file(rn, "ocaml.events", path, cap)) < 0) {
        cannot_record_here(rn, l);
        return -1;
    }
    return 0;
}

/* Completes the recordings (or removes them on failure). */
static int finish_all(struct runner *rn, bool ok)
{
    int ret = ok ? 0 : -1;
    for (unsigned i = 0; i < TRACE_RUN_MAX; i++) {
        struct live *l = &rn->live[i];
        if (!l->t)
            continue;
        bool ocaml = ember_trace_format(l->t) == EMBER_TRACE_OCAML;
        char path[4200];
        snprintf(path, sizeof(path), "%s", rn->o->out ? rn->o->out : l->recording);
        int err = ret == 0 && ocaml ? finish_ocaml(rn, l, path, sizeof(path)) : ret;
        if (!err && l->rec && (err = ember_trace_recorder_finish(l->rec, l->fd)) != 0)
            cli_error("cannot record %s: %s", l->user_out ? path : live_name(l), strerror(-err));
        if (l->user_out && (err || cli_output_commit(&l->o) < 0)) {
            if (err)
                cli_output_abort(&l->o);
            err = -1;
        }
        if (!err) {
            struct trace_run *r = rn->r;
            struct trace_run_stat *st = &r->stat[r->n];
            memset(st, 0, sizeof(*st));
            for (unsigned k = 0; k < ember_trace_ring_count(l->t); k++) {
                const struct ember_trace_ring *ring = ember_trace_ring(l->t, k);
                st->events += ring->events, st->lost += ring->lost;
                st->lost_words += ring->lost_words, st->packets += ring->packets;
            }
            snprintf(r->recording[r->n], sizeof(r->recording[r->n]), "%s", path);
            r->format[r->n++] = ember_trace_format(l->t);
        }
        ret = err ? -1 : ret;
    }
    return ret;
}

static void close_all(struct runner *rn)
{
    for (unsigned i = 0; i < TRACE_RUN_MAX; i++) {
        struct live *l = &rn->live[i];
        ember_trace_recorder_free(l->rec);
        ember_trace_close(l->t);
        if (l->scratch >= 0 && l->t)
            close(l->scratch);
        if (!l->user_out && l->fd >= 0 && l->t)
            close(l->fd);
    }
    if (rn->out_ready) /* nothing was recorded into it */
        cli_output_abort(&rn->out);
    rn->out_ready = false;
    /* the OCaml file it left outside our directory, unless asked to keep it */
    if (rn->live[1].path[0] && !rn->ocaml_dir_ours && !rn->ocaml_preserve)
        unlink(rn->live[1].path);
}

/* The run's private directory (private_dir.c): what the program opens by
 * path goes there, and nothing of it outlives us for long. */
static int make_dir(struct trace_run *r)
{
    memset(r, 0, sizeof(*r));
    r->max_rss_kb = r->cpu_ns = -1;
    cli_private_dir_sweep();
    return cli_private_dir_make(r->dir, sizeof(r->dir), &r->dir_lock);
}

void trace_run_done(struct trace_run *r)
{
    cli_private_dir_remove(r->dir, &r->dir_lock);
}

/* Follows until the program ends (or a signal asks us to stop it). */
static int follow_loop(struct runner *rn, bool *exited, int *status, struct rusage *ru)
{
    int err = 0;
    while (!*exited && !err) {
        pid_t w = wait4(rn->pid, status, WNOHANG, ru);
        *exited = w == rn->pid;
        if (stop && !*exited) {
            kill(rn->pid, (int)stop);
            stop = 0;
        }
        if (look(rn) < 0)
            err = -1;
        int n = err ? 0 : poll_all(rn, false);
        err = n < 0 ? -1 : err;
        if (!*exited && n == 0 && !err)
            sleep_ms(5);
    }
    return err;
}

/* Where cmd's process pid writes its runtime events, and their name. */
static void name_ocaml(struct runner *rn, const char *cmd, pid_t pid)
{
    struct live *l = &rn->live[1];
    snprintf(l->path, sizeof(l->path), "%s/%d.events", rn->ocaml_dir, (int)pid);
    if (rn->ocaml_dir_ours)
        snprintf(l->name, sizeof(l->name), "the runtime events of %s", cmd);
}

/* Where the OCaml runtime will write: the user's OCAML_RUNTIME_EVENTS_DIR,
 * else our directory. */
static void choose_ocaml_dir(struct runner *rn)
{
    const char *dir = getenv("OCAML_RUNTIME_EVENTS_DIR");
    rn->ocaml_dir_ours = !dir || !*dir;
    snprintf(rn->ocaml_dir, sizeof(rn->ocaml_dir), "%s", rn->ocaml_dir_ours ? rn->r->dir : dir);
    rn->ocaml_preserve = getenv("OCAML_RUNTIME_EVENTS_PRESERVE") != NULL;
}

int trace_run_command(struct trace_run *r, char **argv, const struct trace_run_opts *o)
{
    struct runner rn = {.r = r, .o = o};
    if (make_dir(r) < 0 || open_out(&rn) < 0) {
        r->status = 1; /* the command never ran: the failure is ours */
        r->failed = true;
        return -1;
    }
    snprintf(rn.ember_path, sizeof(rn.ember_path), "%s/rings", r->dir);
    choose_ocaml_dir(&rn);
    int exec_err = 0;
    rn.pid = start(&rn, argv, &exec_err);
    if (rn.pid < 0 || exec_err) {
        int err = exec_err ? exec_err : errno;
        cli_error("cannot %s %s: %s", exec_err ? "run" : "start", argv[0], strerror(err));
        if (rn.pid > 0)
            waitpid(rn.pid, NULL, 0);
        close_all(&rn);
        /* as a shell: not found, or found but not runnable */
        r->status = rn.pid < 0 ? 1 : err == ENOENT || err == ENOTDIR ? 127 : 126;
        r->failed = true;
        return -1;
    }
    snprintf(rn.live[0].path, sizeof(rn.live[0].path), "%s", rn.ember_path);
    snprintf(rn.live[0].name, sizeof(rn.live[0].name), "the trace of %s", argv[0]);
    name_ocaml(&rn, argv[0], rn.pid);
    for (unsigned i = 0; i < TRACE_RUN_MAX; i++)
        rn.live[i].fd = rn.live[i].scratch = -1;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal); /* the terminal closed: stop CMD, keep what was recorded */
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    bool exited = false;
    int err = follow_loop(&rn, &exited, &status, &ru);
    if (!exited)
        wait4(rn.pid, &status, 0, &ru);
    /* one last look: it may have traced and ended between two looks */
    if (!err && (look(&rn) < 0 || poll_all(&rn, true) < 0))
        err = -1;
    r->status = WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                : WIFEXITED(status) ? WEXITSTATUS(status)
                                    : 1;
    r->max_rss_kb = ru.ru_maxrss;
    r->cpu_ns = (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
                (int64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
    if (!err && !rn.live[0].t && !rn.live[1].t) {
        cli_error("%s did not trace (no <ember/trace.h> ring file, no OCaml runtime_events file)",
                  argv[0]);
        err = -1;
    }
    if (finish_all(&rn, !err) < 0)
        err = -1;
    close_all(&rn);
    r->failed = err < 0;
    return err;
}

int trace_run_follow(struct trace_run *r, const char *what, const struct trace_run_opts *o)
{
    struct runner rn = {.r = r, .o = o};
    for (unsigned i = 0; i < TRACE_RUN_MAX; i++)
        rn.live[i].fd = rn.live[i].scratch = -1;
    rn.ocaml_dir_ours = true; /* nothing of ours to remove outside */
    if (make_dir(r) < 0 || open_out(&rn) < 0) {
        r->failed = true;
        return -1;
    }
    bool pid = what[0] && strspn(what, "0123456789") == strlen(what);
    char path[4096];
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if (pid) {
        /* the process may not have started tracing yet: wait for its file */
        while (ember_trace_find_pid(atoi(what), path, sizeof(path)) <= 0) {
            if (stop || kill((pid_t)atoi(what), 0) < 0) {
                cli_error("process %s %s no trace file", what, stop ? "has" : "ended with");
                close_all(&rn);
                r->failed = true;
                return -1;
            }
            sleep_ms(20);
        }
    } else {
        snprintf(path, sizeof(path), "%s", what);
    }
    struct live *l = &rn.live[0];
    snprintf(l->path, sizeof(l->path), "%s", path);
    struct ember_diag d;
    ember_diag_clear(&d);
    int err = ember_trace_follow(&l->t, path, 60000, &d);
    if (err) {
        cli_diag_error(&d, err);
        close_all(&rn);
        r->failed = true;
        return -1;
    }
    if (ember_trace_format(l->t) == EMBER_TRACE_OCAML) { /* its slot */
        rn.live[1] = *l;
        memset(l, 0, sizeof(*l));
        l->fd = l->scratch = -1;
        l = &rn.live[1];
    }
    err = begin_recording(&rn, l, l == &rn.live[0] ? 0 : 1);
    while (!err) {
        bool alive = ember_trace_writer_alive(l->t) && !stop;
        int n = poll_all(&rn, !alive);
        err = n < 0 ? -1 : 0;
        if (!alive || err)
            break;
        if (n == 0)
            sleep_ms(10);
    }
    if (finish_all(&rn, !err) < 0)
        err = -1;
    close_all(&rn);
    r->failed = err < 0;
    return err;
}

/* ---- beside another tool: ember record ---------------------------------- */

struct trace_side {
    struct trace_run r;
    struct trace_run_opts o;
    struct runner rn;
    bool failed;
};

int trace_side_begin(struct trace_side **out, const char *events_out)
{
    struct trace_side *s = calloc(1, sizeof(*s));
    *out = s;
    if (!s) {
        cli_error("out of memory");
        return -1;
    }
    s->o.out = events_out;
    s->rn.r = &s->r;
    s->rn.o = &s->o;
    for (unsigned i = 0; i < TRACE_RUN_MAX; i++)
        s->rn.live[i].fd = s->rn.live[i].scratch = -1;
    if (make_dir(&s->r) < 0 || open_out(&s->rn) < 0)
        return -1;
    choose_ocaml_dir(&s->rn);
    ocaml_env(&s->rn);
    return 0;
}

void trace_side_command(struct trace_side *s, const char *cmd, pid_t pid)
{
    name_ocaml(&s->rn, cmd, pid);
}

int trace_side_poll(struct trace_side *s, bool final)
{
    if (s->failed || !s->rn.live[1].path[0])
        return 0;
    if (look(&s->rn) < 0 || poll_all(&s->rn, final) < 0) {
        s->failed = true;
        return -1;
    }
    return s->rn.live[1].t != NULL;
}

const char *trace_side_finish(struct trace_side *s)
{
    if (!s->rn.live[1].t)
        return NULL;
    if (finish_all(&s->rn, !s->failed) < 0 || s->r.n == 0)
        return NULL;
    return s->r.recording[0];
}

void trace_side_free(struct trace_side *s)
{
    if (!s)
        return;
    close_all(&s->rn);
    trace_run_done(&s->r);
    free(s);
}
