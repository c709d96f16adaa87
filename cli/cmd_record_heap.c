/*
 * cmd_record_heap.c - `ember record --heap`: runs a command with the
 * allocation recorder (libember-heap.so, lib/heap/) preloaded, then makes
 * one recording of every process image it wrote (the command, its forks,
 * what they exec'd): -o X.heap keeps that archive as it is, any other
 * output is made by reading it back (the registry's "heap" format) and
 * writing by the extension, as `ember record` does.
 *
 * Invariants: what cannot work is said before the command runs (a static
 * or setuid program, no recorder library, an output that cannot be
 * written); the per-process files go to a private directory
 * (private_dir.c: removed at the end, or by the next run after a kill -9)
 * and the archive to the output's temporary, renamed at the end
 * (output.c) or an unnamed file (record_back.c): nothing is left behind.
 * Ctrl-C (SIGINT, SIGTERM, SIGHUP) stops the command (SIGTERM, SIGKILL
 * after 2 s) and still writes OUT. The exit status is the command's.
 * The archive's processes are in the order they started (the headers'
 * start_mono_ns); each one is its file's size from its header (4096 +
 * chunks * chunk_size), padded with zeros if the file is shorter.
 */
#include "cli.h"
#include "commands.h"
#include "record_back.h"
#include "ember/record.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { KILL_AFTER_MS = 2000 };

static bool readable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

/* libember-heap.so: EMBER_HEAP_LIB, else beside this program, else in
 * ../lib (installed). 0, or -1 after saying why. */
static int find_library(char *out, size_t cap)
{
    const char *env = getenv("EMBER_HEAP_LIB");
    if (env && *env) {
        if (readable_file(env) && snprintf(out, cap, "%s", env) < (int)cap)
            return 0;
        cli_error("EMBER_HEAP_LIB=%s: no such library (the allocation recorder, "
                  "libember-heap.so)",
                  env);
        return -1;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    const char *where[] = {"%s/libember-heap.so", "%s/../lib/libember-heap.so"};
    for (size_t i = 0; i < 2; i++)
        if (snprintf(out, cap, where[i], self) < (int)cap && readable_file(out))
            return 0;
    cli_error("cannot find libember-heap.so (the allocation recorder) beside %s or in %s/../lib; "
              "set EMBER_HEAP_LIB to its path",
              self, self);
    return -1;
}

/* cmd as execvp finds it (PATH, or /bin:/usr/bin without one): false
 * when it finds nothing (the exec will say why). */
static bool resolve(const char *cmd, char *out, size_t cap)
{
    if (strchr(cmd, '/'))
        return snprintf(out, cap, "%s", cmd) < (int)cap;
    const char *path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin";
    for (const char *p = path;; p++) {
        const char *end = strchrnul(p, ':');
        int len = (int)(end - p);
        if (snprintf(out, cap, "%.*s%s%s", len, p, len ? "/" : "", cmd) < (int)cap &&
            access(out, X_OK) == 0 && readable_file(out))
            return true;
        if (!*end)
            return false;
        p = end;
    }
}

/* Whether the ELF file fd has a PT_INTERP (a dynamic loader that honours
 * LD_PRELOAD); -1 when it is not an ELF file we can read. */
static int has_interp(int fd)
{
    Elf64_Ehdr eh;
    if (pread(fd, &eh, sizeof(eh), 0) < (ssize_t)EI_NIDENT + 12 ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
        return -1;
    bool is64 = eh.e_ident[EI_CLASS] == ELFCLASS64;
    Elf32_Ehdr *e32 = (Elf32_Ehdr *)&eh;
    uint64_t off = is64 ? eh.e_phoff : e32->e_phoff;
    unsigned n = is64 ? eh.e_phnum : e32->e_phnum, size = is64 ? eh.e_phentsize : e32->e_phentsize;
    for (unsigned i = 0; i < n && size >= 8; i++) {
        uint32_t type;
        if (pread(fd, &type, sizeof(type), (off_t)(off + (uint64_t)i * size)) != sizeof(type))
            return -1;
        if (type == PT_INTERP)
            return 1;
    }
    return 0;
}

/* Whether path can be recorded; says why not. A script is judged by its
 * interpreter (#!), one level. */
static bool preloadable(const char *path, int depth)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0) {
        if (fd >= 0)
            close(fd);
        return true; /* the exec says why it cannot run it */
    }
    char head[256] = "";
    ssize_t n = pread(fd, head, sizeof(head) - 1, 0);
    head[n > 0 ? n : 0] = '\0';
    int interp = has_interp(fd);
    close(fd);
    bool ours = head[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32);
    if (n > EI_CLASS && memcmp(head, ELFMAG, SELFMAG) == 0 && !ours) {
        cli_error("%s is a %s-bit program: the recorder (libember-heap.so) is %zu-bit, and the "
                  "dynamic loader would not load it there",
                  path, head[EI_CLASS] == ELFCLASS32 ? "32" : "64", sizeof(void *) * 8);
        return false;
    }
    if (st.st_mode & (S_ISUID | S_ISGID)) {
        cli_error("%s is set-user-ID or set-group-ID: the dynamic loader ignores LD_PRELOAD for it "
                  "(secure execution), so its allocations cannot be recorded",
                  path);
        return false;
    }
    if (interp == 0) {
        cli_error("%s is statically linked: its malloc is inside it, where a preloaded library "
                  "cannot replace it, so its allocations cannot be recorded",
                  path);
        return false;
    }
    if (interp < 0 && head[0] == '#' && head[1] == '!' && depth == 0) {
        char *p = head + 2 + strspn(head + 2, " \t");
        p[strcspn(p, " \t\n")] = '\0';
        return !*p || preloadable(p, 1);
    }
    return true;
}

/* The child's side: the environment, then the command; errno through the
 * pipe when it cannot run. */
static void run_child(char **argv, const char *lib, const char *dir, const char *sample_bytes,
                      bool fp, int err_fd)
{
    const char *old = getenv("LD_PRELOAD");
    char *preload = NULL;
    if (old && *old ? asprintf(&preload, "%s:%s", lib, old) < 0 : asprintf(&preload, "%s", lib) < 0)
        _exit(126);
    setenv("LD_PRELOAD", preload, 1);
    setenv("EMBER_HEAP_DIR", dir, 1);
    setenv("EMBER_HEAP_SAMPLE_BYTES", sample_bytes, 1);
    setenv("EMBER_HEAP_UNWIND", fp ? "fp" : "cfi", 1);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    execvp(argv[0], argv);
    int e = errno;
    if (write(err_fd, &e, sizeof(e)) < 0)
        _exit(127);
    _exit(e == ENOENT || e == ENOTDIR ? 127 : 126);
}

/* Waits for pid; a stop asked ends it (SIGTERM, then SIGKILL). */
static int wait_command(pid_t pid)
{
    int status = 0;
    bool termed = false;
    struct timespec t0 = {0};
    for (;;) {
        if (cli_stop_asked && !termed) {
            kill(pid, SIGTERM);
            termed = true;
            clock_gettime(CLOCK_MONOTONIC, &t0);
        }
        pid_t r = waitpid(pid, &status, termed ? WNOHANG : 0);
        if (r == pid)
            return status;
        if (r < 0 && errno != EINTR)
            return 0;
        if (termed) {
            struct timespec t, nap = {0, 10 * 1000 * 1000};
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > KILL_AFTER_MS)
                kill(pid, SIGKILL);
            nanosleep(&nap, NULL);
        }
    }
}

struct heap_run {
    char **argv;
    const char *out;
    const char *sample_bytes; /* "0": every allocation */
    bool fp;
    char lib[PATH_MAX];
    char dir[PATH_MAX];
    int exec_errno;
    int status;
};

/* Runs the command to its end: 0, or 1 after saying why it could not start. */
static int run_command(struct heap_run *r)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        cli_error("cannot run %s: %s", r->argv[0], strerror(errno));
        return 1;
    }
    cli_catch_stop_signals();
    pid_t pid = fork();
    if (pid < 0) {
        cli_error("cannot run %s: %s", r->argv[0], strerror(errno));
        close(pipefd[0]);
        close(pipefd[1]);
        return 1;
    }
    if (pid == 0)
        run_child(r->argv, r->lib, r->dir, r->sample_bytes, r->fp, pipefd[1]);
    close(pipefd[1]);
    int e = 0;
    while (read(pipefd[0], &e, sizeof(e)) < 0 && errno == EINTR)
        ;
    close(pipefd[0]);
    r->status = wait_command(pid);
    cli_cleanup_install();
    r->exec_errno = e;
    if (e)
        cli_error("cannot run %s: %s", r->argv[0], strerror(e));
    return 0;
}

/* A shell's status for the command: its exit code, 128 + a signal. */
static int command_status(const struct heap_run *r)
{
    if (r->exec_errno)
        return r->exec_errno == ENOENT || r->exec_errno == ENOTDIR ? 127 : 126;
    if (WIFEXITED(r->status))
        return WEXITSTATUS(r->status);
    return WIFSIGNALED(r->status) ? 128 + WTERMSIG(r->status) : 1;
}

static bool is_heap(const char *path)
{
    size_t n = strlen(path);
    return n >= 5 && strcmp(path + n - 5, ".heap") == 0;
}

/* The recording's archive into fd: 0, or 1 after saying why. */
static int make_archive(const struct heap_run *r, int fd, const char *name,
                        struct ember_heap_archive_stats *st)
{
    struct ember_diag d;
    ember_diag_clear(&d);
    int err = ember_heap_archive(r->dir, fd, st, &d);
    if (err) {
        cli_diag_error(&d, err);
        return 1;
    }
    if (st->processes == 0) {
        cli_error("%s recorded nothing: no process of it started the recorder (%s)", r->argv[0],
                  name);
        return 1;
    }
    return 0;
}

/* The value named type's total in p, -1 when it has none. */
static int64_t total_of(const struct ember_profile *p, const char *type)
{
    for (unsigned v = 0; v < ember_profile_values(p); v++)
        if (strcmp(ember_profile_value_type(p, v), type) == 0)
            return ember_profile_total(p, v);
    return -1;
}

/* "peak 1234 B at 0.52 s" from the profile's heap counter, or "". */
static void peak_of(const struct ember_profile *p, char *out, size_t cap)
{
    out[0] = '\0';
    for (unsigned c = 0; c < ember_profile_counter_count(p); c++) {
        const uint64_t *t;
        const int64_t *v;
        size_t n = ember_profile_counter_points(p, c, &t, &v);
        if (strcmp(ember_profile_counter_name(p, c), "heap") != 0 || !n)
            continue;
        size_t at = 0;
        for (size_t i = 1; i < n; i++)
            if (v[i] > v[at])
                at = i;
        snprintf(out, cap, ", peak %lld B at %.3f s", (long long)v[at], (double)t[at] / 1e9);
    }
}

/* What was recorded, from the profile when it was read back (else the
 * archive's counts of allocations and frees), and what was written. */
static void summary(const struct ember_heap_archive_stats *st, const struct ember_profile *p,
                    const char *out)
{
    char what[256];
    if (p) {
        char peak[96];
        peak_of(p, peak, sizeof(peak));
        snprintf(what, sizeof(what), "%lld allocations of %lld B%s",
                 (long long)total_of(p, "alloc_objects"), (long long)total_of(p, "alloc_space"),
                 peak);
    } else {
        snprintf(what, sizeof(what), "%llu allocations and frees", (unsigned long long)st->events);
    }
    fprintf(stderr, "%s: %s in %u process%s, wrote %s\n", cli_command_name(), what, st->processes,
            st->processes == 1 ? "" : "es", out);
}

/* The archive in fd read back as a profile and written by w into o
 * (finished here): 0, or 1 after saying why. */
static int read_back(const struct heap_run *r, int fd, const struct ember_writer_format *w,
                     struct cli_output *o, const struct ember_heap_archive_stats *st)
{
    struct cli_reader rd;
    cli_reader_init(&rd);
    rd.input_fd = fd;
    rd.verb = "write";
    rd.format = "heap";
    rd.ro.addresses = strcmp(w->name, "pprof") == 0; /* pprof keeps addresses and mappings */
    struct ember_profile *p = ember_profile_new();
    char name[PATH_MAX + 32];
    snprintf(name, sizeof(name), "the heap recording of %s", r->argv[0]);
    char *names[] = {name};
    int ret = !p || lseek(fd, 0, SEEK_SET) < 0;
    if (ret)
        cli_error("cannot read %s back: %s", name, p ? strerror(errno) : "out of memory");
    if (!ret)
        ret = cli_read_profile(&rd, p, names, 1);
    if (!ret) {
        struct ember_convert_opts co;
        ember_convert_opts_default(&co);
        const char *slash = strrchr(r->argv[0], '/');
        co.name = slash ? slash + 1 : r->argv[0];
        co.exporter = "ember@" EMBER_VERSION;
        struct ember_diag d;
        ember_diag_clear(&d);
        struct ember_sink sink = cli_output_sink(o);
        ret = cli_output_finish(o, w->write(p, &co, &sink, &d), &d);
    } else {
        cli_output_abort(o);
    }
    if (!ret)
        summary(st, p, r->out);
    ember_profile_free(p);
    cli_reader_release(&rd);
    return ret;
}

/* After the command: the output from the directory's files. */
static int write_output(struct heap_run *r, const struct ember_writer_format *w,
                        struct cli_output *o)
{
    struct ember_heap_archive_stats st;
    if (!w) {
        int ret = make_archive(r, o->fd, r->out, &st);
        if (ret) {
            cli_output_abort(o);
            return ret;
        }
        if (cli_output_commit(o) < 0)
            return 1;
        summary(&st, NULL, r->out);
        return 0;
    }
    struct record_back b = {.w = w};
    snprintf(b.name, sizeof(b.name), "the heap recording of %s", r->argv[0]);
    int fd = record_back_scratch(&b);
    int ret = fd < 0 ? 1 : make_archive(r, fd, b.name, &st);
    if (ret)
        cli_output_abort(o);
    else
        ret = read_back(r, fd, w, o, &st);
    if (fd >= 0)
        close(fd);
    return ret;
}

/* OUT's writer (NULL: .heap, the archive itself): 0, or the exit code
 * after saying why there is none. */
static int out_format(const char *out, const struct ember_writer_format **w)
{
    *w = NULL;
    if (is_heap(out))
        return 0;
    *w = ember_writer_for_path(out);
    if (!*w) {
        cli_error("-o %s: which format? name it .heap (the recording), .svg, .pb.gz, .folded, "
                  ".speedscope.json or .json",
                  out);
        return EXIT_USAGE;
    }
    if (!ember_format_find("heap")) {
        cli_error("-o %s: this ember cannot read heap recordings back; record to a .heap file",
                  out);
        return 1;
    }
    return 0;
}

/* Whether the command can be recorded, said before it runs. */
static bool can_record(char **argv)
{
    char path[PATH_MAX];
    return !resolve(argv[0], path, sizeof(path)) || preloadable(path, 0);
}

int cmd_record_heap(const struct heap_record_args *a)
{
    struct heap_run r = {.argv = a->argv, .out = a->out, .fp = a->fp};
    char sample[32];
    snprintf(sample, sizeof(sample), "%llu", (unsigned long long)a->sample_bytes);
    r.sample_bytes = sample;
    const struct ember_writer_format *w;
    int ret = out_format(a->out, &w);
    if (ret)
        return ret;
    if (find_library(r.lib, sizeof(r.lib)) < 0 || !can_record(a->argv))
        return 1;
    struct cli_output o;
    if (cli_output_open(&o, a->out) < 0)
        return 1;
    int lock = -1;
    cli_private_dir_sweep();
    if (cli_private_dir_make(r.dir, sizeof(r.dir), &lock) < 0) {
        cli_output_abort(&o);
        return 1;
    }
    ret = run_command(&r);
    if (ret || r.exec_errno)
        cli_output_abort(&o);
    else
        ret = write_output(&r, w, &o);
    cli_private_dir_remove(r.dir, &lock);
    return ret ? ret : command_status(&r);
}
