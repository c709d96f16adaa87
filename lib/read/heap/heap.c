/*
 * heap.c - the format row "heap": ember's heap recordings (`ember record
 * --heap`, wire/heap_format.h), one process file after another, as a
 * profile of seven values (heap_views.c says what each counts):
 * alloc_objects, alloc_space, inuse_objects, inuse_space (Go's names and
 * units, so that `go tool pprof -sample_index=` works on the pprof
 * export), and heaptrack's peak, leaked and temporary.
 *
 * The value shown unless --event says: peak. It answers "where does my
 * memory go" for every program: inuse_space of a whole run is what is
 * held at exit, empty for a program that frees what it allocates, and
 * alloc_space weighs a buffer reused a million times a million times,
 * while the peak is the memory the program needed (heaptrack shows it
 * first for that reason).
 *
 * Processes: one recording of one process has no process frame; with
 * several (fork, exec), each stack starts with its process as `ember
 * collapse --pid` spells processes of perf.data, "comm-PID" (comm: the
 * program's file name), because a forked child runs the same program as
 * its parent and only the pid tells them apart. Each process has its own
 * counter of the heap in use: "heap" for one process, "heap comm-PID"
 * for each of several (their heaps are separate). Times are ns from the
 * first process's start.
 * Invariants: values are added once per stack and process, after its
 * last event; a profile is left partial only with an error returned.
 */
#include "read/heap/heap_impl.h"
#include "read/read_impl.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct reader {
    struct ember_profile *p;
    const struct ember_read_opts *o;
    struct ember_read_stats *st;
    const char *input;
    struct ember_input *in;
    struct heap_src *src;
    struct heap_symbols *sym;
    struct heap_proc proc;
    unsigned vmap[HEAP_VALUES];
    uint64_t origin; /* the first process's start_mono_ns */
    uint64_t procs, end_ns;
    bool several;
    struct {
        uint64_t n, procs; /* frees ignored [0] or missed [1], and in how many processes */
        uint32_t first_pid;
    } odd[2];
    uint32_t *frames;
    size_t nframes, fcap;
};

static enum ember_probe probe(const char *data, size_t len)
{
    uint64_t magic;
    if (len < sizeof(magic))
        return EMBER_PROBE_NO;
    memcpy(&magic, data, sizeof(magic));
    return magic == EMBER_HEAP_MAGIC ? EMBER_PROBE_YES : EMBER_PROBE_NO;
}

static int values(struct reader *r, struct ember_diag *d)
{
    ember_profile_value_rename(r->p, 0, heap_value_names[0][0], heap_value_names[0][1]);
    for (unsigned k = 0; k < HEAP_VALUES; k++) {
        int err =
            ember_profile_value(r->p, heap_value_names[k][0], heap_value_names[k][1], &r->vmap[k]);
        if (err)
            return err;
    }
    const char *want = r->o->value ? r->o->value : "peak";
    if (ember_profile_select(r->p, want) < 0)
        return ember_diag_set(d, -ENOENT, r->input, 0,
                              "no value '%s' in a heap recording (it has alloc_objects, "
                              "alloc_space, inuse_objects, inuse_space, peak, leaked, temporary)",
                              want);
    return 0;
}

/* The program's file name, as a process frame names it. */
static const char *comm(const struct heap_proc *p, size_t *len)
{
    size_t n = strnlen(p->h.exe, sizeof(p->h.exe));
    const char *slash = memrchr(p->h.exe, '/', n);
    const char *s = slash ? slash + 1 : p->h.exe;
    *len = n - (size_t)(s - p->h.exe);
    return s;
}

static int process_root(struct reader *r, uint32_t *id)
{
    size_t n;
    const char *name = comm(&r->proc, &n);
    struct ember_frame fr = {.name = n ? name : "[unknown]",
                             .name_len = n ? n : 9,
                             .module = EMBER_NO_MODULE,
                             .kind = EMBER_FRAME_PROCESS,
                             .pid = r->proc.h.pid,
                             .tid = -1,
                             .kind_in_name = true};
    return ember_profile_intern_frame(r->p, &fr, id);
}

/* Stack id's frames into r->frames, its process first when several. */
static int stack_frames(struct reader *r, uint64_t id)
{
    r->nframes = 0;
    uint32_t f;
    int err;
    if (r->several &&
        ((err = process_root(r, &f)) < 0 || (err = EMBER_VEC_RESERVE(r->frames, r->fcap, 1)) < 0))
        return err;
    if (r->several)
        r->frames[r->nframes++] = f;
    if ((err = heap_symbols_stack(r->sym, &r->proc, id, &r->frames, &r->nframes, &r->fcap)) < 0)
        return err;
    if (r->nframes > (r->several ? 1u : 0u))
        return 0;
    /* a stack the recorder kept no frame of */
    if ((err = ember_profile_intern(r->p, "[unknown]", 9, &f)) < 0 ||
        (err = EMBER_VEC_RESERVE(r->frames, r->fcap, r->nframes + 1)) < 0)
        return err;
    r->frames[r->nframes++] = f;
    return 0;
}

static int add_stacks(struct reader *r, const int64_t *w)
{
    int64_t weights[EMBER_MAX_VALUES];
    for (uint64_t id = 1; id < r->proc.nstacks; id++) {
        const int64_t *row = w + id * HEAP_VALUES;
        bool any = false;
        memset(weights, 0, sizeof(weights));
        for (unsigned k = 0; k < HEAP_VALUES; k++) {
            weights[r->vmap[k]] = row[k];
            any |= row[k] != 0;
        }
        if (!any)
            continue;
        int err = stack_frames(r, id);
        if (err || (err = ember_profile_add_stack(r->p, r->frames, r->nframes, EMBER_ROOT_FIRST,
                                                  weights, NULL)) < 0)
            return err;
        r->st->samples++;
    }
    return 0;
}

static int comments(struct reader *r)
{
    const struct ember_heap_header *h = &r->proc.h;
    char s[512];
    int n = snprintf(s, sizeof(s), "process %u (parent %u): %.*s", h->pid, h->ppid,
                     (int)strnlen(h->exe, sizeof(h->exe)), h->exe);
    int err = ember_profile_add_comment(r->p, s, (size_t)n);
    if (h->flags & EMBER_HEAP_SAMPLED)
        n = snprintf(s, sizeof(s), "mode: sampled, one sample per %llu bytes on average",
                     (unsigned long long)h->sample_bytes);
    else
        n = snprintf(s, sizeof(s), "mode: every allocation");
    if (!err)
        err = ember_profile_add_comment(r->p, s, (size_t)n);
    const char *how = !r->proc.ended                           ? "none (killed?)"
                      : r->proc.end_how == EMBER_HEAP_END_EXEC ? "exec"
                                                               : "exit";
    n = snprintf(s, sizeof(s), "end: %s", how);
    return err ? err : ember_profile_add_comment(r->p, s, (size_t)n);
}

/* Counts a process's ignored frees and missed ones, said once for the
 * whole recording (warn_totals): a shell pipeline's processes each free a
 * few blocks allocated before the recorder began. */
static void report(struct reader *r, const struct heap_counts *c)
{
    uint32_t pid = r->proc.h.pid;
    if (!r->proc.ended)
        ember_read_warn(r->o, r->input, "the recording of %u ends without its end record (killed?)",
                        pid);
    for (int k = 0; k < 2; k++) {
        uint64_t n = k ? c->missed_frees : c->unknown_frees;
        if (n && !r->odd[k].procs++)
            r->odd[k].first_pid = pid;
        r->odd[k].n += n;
    }
}

static void warn_totals(struct reader *r)
{
    static const char *const what[2] = {
        "frees of addresses never allocated in the recording (allocated before it began, or "
        "by the parent before fork) were ignored",
        "allocations at an address still in use (a free the recorder missed) ended the older "
        "block there"};
    for (int k = 0; k < 2; k++) {
        if (!r->odd[k].n)
            continue;
        char where[96] = "";
        if (r->several)
            snprintf(where, sizeof(where), " (in %llu of the %llu processes, the first %u)",
                     (unsigned long long)r->odd[k].procs, (unsigned long long)r->procs,
                     r->odd[k].first_pid);
        ember_read_warn(r->o, r->input, "%llu %s%s", (unsigned long long)r->odd[k].n, what[k],
                        where);
    }
}

static int counter(struct reader *r, struct heap_window *w)
{
    char name[300] = "heap";
    size_t n;
    const char *c = comm(&r->proc, &n);
    if (r->several)
        snprintf(name, sizeof(name), "heap %.*s-%u", (int)n, c, r->proc.h.pid);
    w->prof = r->p;
    return ember_profile_counter_new(r->p, name, "bytes", &w->counter);
}

/* The events of the process read, through the views. */
static int replay(struct reader *r, const struct heap_window *w, int64_t **vals,
                  struct heap_counts *c, struct ember_diag *d)
{
    struct heap_merge *m = NULL;
    struct heap_views *v = NULL;
    struct heap_event e;
    int err = heap_merge_new(&m, &r->proc, d);
    if (!err)
        err = heap_views_new(&v, &r->proc, w);
    while (!err && (err = heap_merge_next(m, &e, d)) > 0)
        err = heap_views_event(v, &e);
    if (!err)
        err = heap_views_finish(v, vals, c);
    heap_views_free(v);
    heap_merge_free(m);
    return err;
}

static int one_process(struct reader *r, struct ember_diag *d)
{
    const struct ember_heap_header *h = &r->proc.h;
    bool more;
    int err = heap_src_more(r->src, &more, d);
    if (err)
        return err;
    if (r->procs++ == 0) {
        r->origin = h->start_mono_ns;
        r->several = more;
        struct ember_profile_meta meta = *ember_profile_meta(r->p);
        meta.time_nanos = (int64_t)h->start_real_ns;
        if ((err = ember_profile_set_meta(r->p, &meta)) < 0)
            return err;
    }
    struct heap_window w = {r->o->from_ns, r->o->to_ns, 0, NULL, 0};
    w.shift = h->start_mono_ns > r->origin ? h->start_mono_ns - r->origin : 0;
    if ((err = counter(r, &w)) < 0)
        return err;
    int64_t *vals = NULL;
    struct heap_counts c;
    if (!(err = replay(r, &w, &vals, &c, d)) && !(err = add_stacks(r, vals)))
        err = comments(r);
    free(vals);
    if (err)
        return err;
    report(r, &c);
    r->end_ns = w.shift + c.last_ns > r->end_ns ? w.shift + c.last_ns : r->end_ns;
    heap_symbols_reset(r->sym);
    return 0;
}

static int read_all(struct reader *r, struct ember_diag *d)
{
    int err = values(r, d);
    while (!err && (err = heap_proc_read(&r->proc, r->src, d)) > 0) {
        err = one_process(r, d);
        if (r->o->progress)
            r->o->progress(r->o->progress_ctx, r->in);
    }
    if (err)
        return err;
    warn_totals(r);
    struct ember_profile_meta meta = *ember_profile_meta(r->p);
    meta.duration_nanos = (int64_t)r->end_ns;
    return ember_profile_set_meta(r->p, &meta);
}

static int read_heap(struct ember_profile *p, struct ember_input *in,
                     const struct ember_read_opts *o, struct ember_read_stats *st,
                     struct ember_diag *d)
{
    struct reader r = {.p = p, .o = o, .st = st, .input = ember_input_name(in), .in = in};
    r.proc.input = r.input;
    int err = heap_src_new(&r.src, in);
    if (!err)
        err = heap_symbols_new(&r.sym, p, o, r.input);
    if (!err)
        err = read_all(&r, d);
    heap_proc_release(&r.proc);
    heap_symbols_free(r.sym);
    heap_src_free(r.src);
    free(r.frames);
    return err;
}

static const struct ember_format_option options[] = {
    {"inline", EMBER_OPTION_FLAG, NULL, NULL, "expand inlined functions from DWARF (elfutils)"},
    {"context", EMBER_OPTION_FLAG, NULL, NULL, "with --inline: add source file:line"},
    {NULL, 0, NULL, NULL, NULL},
};

const struct ember_format ember_format_heap = {
    .name = "heap",
    .description = "ember's heap recordings (ember record --heap): allocations by stack; values "
                   "alloc_objects, alloc_space, inuse_objects, inuse_space, peak (the default), "
                   "leaked, temporary; --from/--to keep the allocations made in the window, "
                   "inuse_* and peak count what of them is held at its end and its peak",
    .probe = probe,
    .read = read_heap,
    .options = options,
    .options_heading = "heap recording options",
    .window = true,
};
