/*
 * timeline.c - the generic side of reading traces (see ember/tracefile.h
 * and source.h): opening a file with the backend whose format it is,
 * waiting for a live file's header, merging streams into time order,
 * following with cursors kept from poll to poll, and handing out what only
 * one backend has (packets, recorders).
 *
 * Invariants: a pass (ember_trace_visit) starts fresh cursors and frees
 * them; a followed trace keeps one cursor and one queue of events read but
 * not handed out per stream for its life, and a poll hands out only what
 * no late event can precede (see "following"). Merging compares raw
 * timestamps (one clock per file), the lowest ring first on ties; losses
 * are told before the event they precede.
 *
 * This file opens, closes and describes traces; merging and following
 * are in timeline_merge.c.
 */
#include "ember/trace.h"
#include "tracefile/source.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const struct ember_source_ops *const backends[] = {&ember_rings_ops, &ember_ocaml_ops};
enum { NBACKENDS = sizeof(backends) / sizeof(backends[0]), PROBE_BYTES = 4096 };

bool ember_source_pid_alive(uint32_t pid)
{
    if (!pid || (kill((pid_t)pid, 0) < 0 && errno != EPERM))
        return false;
    char path[64], stat[512];
    snprintf(path, sizeof(path), "/proc/%u/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, stat, sizeof(stat) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return true; /* no /proc: kill said it runs */
    stat[n] = '\0';
    const char *state = strrchr(stat, ')'); /* after "pid (comm)" */
    return !(state && state[1] == ' ' && state[2] == 'Z');
}

int ember_source_rings(struct ember_trace *t, unsigned n)
{
    if (n <= t->nrings)
        return 0;
    if (n > t->rings_cap) {
        struct ember_trace_ring *r = realloc(t->rings, (size_t)n * sizeof(*r));
        if (!r)
            return -ENOMEM;
        t->rings = r;
        t->rings_cap = n;
    }
    memset(t->rings + t->nrings, 0, (size_t)(n - t->nrings) * sizeof(*t->rings));
    t->nrings = n;
    return 0;
}

int ember_source_add_site(struct ember_trace *t, const struct ember_trace_site *s)
{
    size_t cap = t->sites_cap;
    if (EMBER_VEC_RESERVE(t->sites, cap, (size_t)t->nsites + 1) < 0)
        return -ENOMEM;
    t->sites_cap = (unsigned)cap;
    t->sites[t->nsites++] = s;
    return 0;
}

int ember_source_corrupt(struct ember_trace *t, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ember_diag_set(
        &t->err, -EINVAL, t->name, 0, "not a valid %s: %s",
        t->format == EMBER_TRACE_OCAML ? "OCaml runtime_events file" : "ember trace", msg);
}

/* The backend whose format the file's first bytes are, or NULL. */
static const struct ember_source_ops *probe(int fd, const char *path, uint64_t size)
{
    unsigned char head[PROBE_BYTES];
    size_t n = size < sizeof(head) ? (size_t)size : sizeof(head);
    if (ember_read_at(fd, head, n, 0) < 0)
        return NULL;
    for (size_t i = 0; i < NBACKENDS; i++)
        if (backends[i]->probe(head, n, path))
            return backends[i];
    return NULL;
}

static struct ember_trace *trace_new(const char *path, int fd)
{
    struct ember_trace *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    snprintf(t->name, sizeof(t->name), "%s", path);
    t->fd = fd;
    return t;
}

/* Opens t with the backend ops; frees t on failure. */
static int open_with(struct ember_trace *t, const struct ember_source_ops *ops,
                     struct ember_diag *d, struct ember_trace **out)
{
    t->ops = ops;
    int err = ops->open(t, d);
    if (err) {
        ember_trace_close(t);
        return err;
    }
    *out = t;
    return 0;
}

int ember_trace_open(struct ember_trace **out, const char *path, struct ember_diag *d)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ember_diag_set(d, -EIO, path, 0, "cannot open: %s", strerror(errno));
    struct stat st;
    struct ember_trace *t = fstat(fd, &st) == 0 ? trace_new(path, fd) : NULL;
    if (!t) {
        close(fd);
        return -ENOMEM;
    }
    t->size = (uint64_t)st.st_size;
    const struct ember_source_ops *ops = probe(fd, path, t->size);
    if (!ops) {
        ember_trace_close(t);
        return ember_diag_set(d, -EINVAL, path, 0,
                              "not a valid ember trace: no ember trace header (the program has "
                              "not started tracing yet?), nor an OCaml runtime_events header");
    }
    return open_with(t, ops, d, out);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One look at a file being created: its backend when its header is
 * complete (*ops set), 0 not yet, < 0 an error. */
static int look(int fd, const char *path, const struct ember_source_ops **ops, struct ember_diag *d)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return ember_diag_set(d, -EIO, path, 0, "cannot read: %s", strerror(errno));
    const struct ember_source_ops *o = probe(fd, path, (uint64_t)st.st_size);
    if (!o)
        return 0;
    int ready = o->ready(fd, path);
    if (ready > 0)
        *ops = o;
    return ready;
}

int ember_trace_follow(struct ember_trace **out, const char *path, int timeout_ms,
                       struct ember_diag *d)
{
    uint64_t deadline = now_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
    const struct ember_source_ops *ops = NULL;
    int fd = -1, err = 0;
    for (;;) {
        if (fd < 0)
            fd = open(path, O_RDWR | O_CLOEXEC); /* drain mode writes the consumer's place */
        if (fd < 0 && errno != ENOENT)
            fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 && errno != ENOENT)
            return ember_diag_set(d, -EIO, path, 0, "cannot open: %s", strerror(errno));
        if (fd >= 0 && (err = look(fd, path, &ops, d)) != 0)
            break;
        if (now_ms() >= deadline) {
            err = ember_diag_set(d, -ETIMEDOUT, path, 0,
                                 fd < 0 ? "no such trace file appeared"
                                        : "the file never got a complete trace header");
            break;
        }
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (err < 0) {
        if (fd >= 0)
            close(fd);
        return err;
    }
    struct stat st;
    struct ember_trace *t = fstat(fd, &st) == 0 ? trace_new(path, fd) : NULL;
    if (!t) {
        close(fd);
        return -ENOMEM;
    }
    t->size = (uint64_t)st.st_size;
    t->live = true;
    return open_with(t, ops, d, out);
}

void ember_source_free_cursors(struct ember_trace *t, struct ember_cursor *cs, unsigned n)
{
    for (unsigned i = 0; cs && i < n; i++)
        t->ops->cursor_free(t, &cs[i]);
    free(cs);
}

void ember_trace_close(struct ember_trace *t)
{
    if (!t)
        return;
    ember_source_free_cursors(t, t->cursors, t->ncursors);
    ember_source_free_queues(t->queues, t->ncursors);
    if (t->ops)
        t->ops->close(t);
    if (t->fd >= 0)
        close(t->fd);
    free(t->rings);
    free(t->sites);
    free(t);
}

int ember_trace_set_ocaml_version(struct ember_trace *t, const char *version)
{
    int which =
        strcmp(version, "5.0") == 0 || strcmp(version, "5.1") == 0 || strcmp(version, "5.2") == 0
            ? 0
        : strcmp(version, "5.3") == 0 || strcmp(version, "5.4") == 0 || strcmp(version, "5.5") == 0
            ? 1
            : -1;
    if (which < 0 || t->started)
        return -EINVAL;
    t->ocaml_names = which;
    return 0;
}

enum ember_trace_format ember_trace_format(const struct ember_trace *t)
{
    return t->format;
}

uint32_t ember_trace_pid(const struct ember_trace *t)
{
    return t->pid;
}

const char *ember_trace_exe(const struct ember_trace *t)
{
    return t->exe;
}

uint64_t ember_trace_ticks_per_sec(const struct ember_trace *t)
{
    return t->ticks_per_sec;
}

uint64_t ember_trace_base_ticks(const struct ember_trace *t)
{
    return t->base_ticks;
}

uint64_t ember_trace_start_realtime(const struct ember_trace *t)
{
    return t->start_realtime;
}

const uint8_t *ember_trace_uuid(const struct ember_trace *t)
{
    return t->uuid;
}

unsigned ember_trace_ring_count(const struct ember_trace *t)
{
    return t->nrings;
}

const struct ember_trace_ring *ember_trace_ring(const struct ember_trace *t, unsigned i)
{
    return i < t->nrings ? &t->rings[i] : NULL;
}

unsigned ember_trace_site_count(const struct ember_trace *t)
{
    return t->nsites;
}

const struct ember_trace_site *ember_trace_site_at(const struct ember_trace *t, unsigned i)
{
    return i < t->nsites ? t->sites[i] : NULL;
}

bool ember_trace_cut_short(const struct ember_trace *t, uint64_t *size, uint64_t *expected)
{
    *size = t->size;
    *expected = t->expected;
    return t->cut_short;
}

const struct ember_diag *ember_trace_error(const struct ember_trace *t)
{
    return &t->err;
}

bool ember_trace_writer_alive(const struct ember_trace *t)
{
    return t->ops->writer_alive(t);
}

bool ember_trace_has_packets(const struct ember_trace *t)
{
    return t->ops->each_packet != NULL;
}

int ember_trace_each_packet(struct ember_trace *t, ember_trace_packet_fn fn, void *ctx)
{
    if (!t->ops->each_packet)
        return -ENOTSUP;
    t->started = true;
    ember_diag_clear(&t->err);
    return t->ops->each_packet(t, fn, ctx);
}

/* ---- recording ---------------------------------------------------------- */

int ember_trace_recorder_new(struct ember_trace_recorder **r, struct ember_trace *t, int fd,
                             int scratch)
{
    if (!t->live || !t->ops->recorder_new)
        return -ENOTSUP;
    t->started = true;
    return t->ops->recorder_new(r, t, fd, scratch);
}

int ember_trace_record_poll(struct ember_trace_recorder *r, bool final)
{
    return r->poll(r, final);
}

int ember_trace_recorder_finish(struct ember_trace_recorder *r, int fd)
{
    return r->finish(r, fd);
}

void ember_trace_recorder_free(struct ember_trace_recorder *r)
{
    if (r)
        r->free(r);
}

/* ---- finding a process's trace ------------------------------------------ */

int ember_trace_find_pid(int pid, char *path, size_t cap)
{
    char maps[64];
    snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
    FILE *f = fopen(maps, "r");
    if (!f)
        return 0;
    char line[4400];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f)) {
        char *p = strchr(line, '/');
        if (!p)
            continue;
        p[strcspn(p, "\n")] = '\0';
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        const struct ember_source_ops *ops = NULL;
        struct ember_diag d;
        if (fd >= 0 && look(fd, p, &ops, &d) > 0) {
            snprintf(path, cap, "%s", p);
            found = 1;
        }
        if (fd >= 0)
            close(fd);
    }
    fclose(f);
    return found;
}
