/*
 * record_back.c - `ember record`'s outputs other than perf.data (a flame
 * graph, pprof, folded stacks, a timeline...): the recording is made into
 * a file of ember's alone and read back through the perf.data reader, as
 * every ember command reads one, then written by the writer OUT's
 * extension names into the output opened before recording began.
 *
 * Invariants: the recording's file has no name (O_TMPFILE in TMPDIR; where
 * the system has none, a file unlinked as soon as made), so that nothing
 * is left of it however ember ends, kill -9 included; messages name it by
 * what was recorded ("the recording of CMD"), never by a path of ours.
 */
#include "record_back.h"
#include "ember/transform.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void record_back_names(struct record_back *b, const struct ember_record_opts *ro)
{
    size_t cap = sizeof(b->name);
    if (ro->system_wide) {
        snprintf(b->name, cap, "the system-wide recording");
        b->title = "system";
        return;
    }
    if (ro->npids) {
        size_t n =
            (size_t)snprintf(b->name, cap, "the recording of process%s", ro->npids > 1 ? "es" : "");
        for (size_t i = 0; i < ro->npids && n < cap; i++)
            n += (size_t)snprintf(b->name + n, cap - n, "%s%d", i ? "," : " ", (int)ro->pids[i]);
        b->title = "processes";
        return;
    }
    snprintf(b->name, cap, "the recording of %s", ro->argv[0]);
    const char *slash = strrchr(ro->argv[0], '/');
    b->title = slash && slash[1] ? slash + 1 : ro->argv[0];
}

const char *record_back_dir(void)
{
    const char *dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

/* Where O_TMPFILE is not: a file unlinked as soon as it is made, the
 * signals that would end us blocked in between. */
static int unlinked_file(const char *dir)
{
    char *path;
    if (asprintf(&path, "%s/ember-record-XXXXXX", dir) < 0) {
        errno = ENOMEM;
        return -1;
    }
    sigset_t old;
    cli_cleanup_block(&old);
    int fd = mkostemp(path, O_CLOEXEC);
    int saved = errno;
    if (fd >= 0)
        unlink(path);
    cli_cleanup_unblock(&old);
    free(path);
    errno = saved;
    return fd;
}

int record_back_scratch(const struct record_back *b)
{
    const char *dir = record_back_dir();
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    /* kernels without O_TMPFILE see O_DIRECTORY | O_RDWR: EISDIR */
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL))
        fd = unlinked_file(dir);
    if (fd < 0)
        cli_error("cannot create %s in %s: %s", b->name, dir, strerror(errno));
    return fd;
}

/* How r reads the recording for b's writer. */
static int set_reader(struct cli_reader *r, const struct record_back *b, int fd)
{
    const struct ember_writer_format *w = b->w;
    r->input_fd = fd;
    r->verb = "write";
    r->format = "perf.data";
    r->gc_events = b->events;
    r->during = b->during;
    r->outside = b->outside;
    /* the samples (and GC phases) on their time axis, a track per thread */
    r->timeline = !w || strcmp(w->name, "chrome") == 0;
    r->ro.addresses = w && strcmp(w->name, "pprof") == 0; /* pprof keeps addresses and mappings */
    r->flamechart = w && strcmp(w->name, "chrome") == 0;  /* samples in time order */
    /* names people read: OCaml's camlFixture.descend_771 as Fixture.descend,
     * C++ and Rust symbols perf left mangled */
    struct ember_diag d;
    ember_diag_clear(&d);
    r->transform = ember_transform_new();
    if (r->transform && ember_transform_add(r->transform, EMBER_STEP_DEMANGLE, NULL, &d) == 0)
        return 0;
    cli_error("out of memory");
    return 1;
}

/* p as b's writer writes it, into o (finished here). */
static int write_profile(const struct record_back *b, struct cli_reader *r,
                         const struct ember_profile *p, struct cli_output *o)
{
    if (r->timeline && (!b->w || r->gc.times))
        return cli_write_gc_timeline(r, p, o, b->w ? CLI_TIMELINE_CHROME : CLI_TIMELINE_PERFETTO);
    struct ember_convert_opts co;
    ember_convert_opts_default(&co);
    co.name = b->title;
    co.exporter = "ember@" EMBER_VERSION;
    struct ember_diag d;
    ember_diag_clear(&d);
    struct ember_sink sink = cli_output_sink(o);
    int err = b->w->write(p, &co, &sink, &d);
    return cli_output_finish(o, err, &d);
}

int record_back_write(const struct record_back *b, int fd, struct cli_output *o)
{
    struct cli_reader r;
    cli_reader_init(&r);
    int ret = set_reader(&r, b, fd);
    if (!ret && lseek(fd, 0, SEEK_SET) < 0) {
        cli_error("cannot read %s back: %s", b->name, strerror(errno));
        ret = 1;
    }
    struct ember_profile *p = ret ? NULL : ember_profile_new();
    if (!ret && !p) {
        cli_error("out of memory");
        ret = 1;
    }
    char *name = (char *)b->name; /* only a name: r.input_fd is read */
    if (!ret)
        ret = cli_read_profile(&r, p, &name, 1);
    if (!ret)
        ret = write_profile(b, &r, p, o);
    else
        cli_output_abort(o);
    ember_profile_free(p);
    cli_reader_release(&r);
    return ret;
}
