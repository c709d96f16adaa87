/*
 * perf_data.c - perf.data (what `perf record` writes) as a profile: the
 * same stacks as `perf script -i FILE | ember collapse`, with the same
 * options, read directly.
 *
 * Building the profile is a client of the perf.data reader
 * (perf_reader.h): its records come, in perf's time order, to the
 * callbacks here, which feed the model of threads and maps
 * (perf_data_tasks.c) and turn each sample into a raw stack
 * (perf_data_stacks.c); at the end of the file, where perf writes the
 * build-ids and event names that naming needs, the raw stacks are named
 * and added to the profile (perf_data_place.c). A recording with context
 * switches and their switch records (ember record --off-cpu) also has
 * off-CPU time (perf_data_offcpu.c): each interval a thread was away
 * weighs its nanoseconds in a mark frame, [off-cpu] or [preempted], under
 * the stack of the switch, and the profile shows wall time (cpu +
 * off-CPU).
 * Invariants: the builder's state (perf_data_build.h) is one struct
 * reader, made and released here; the file is the reader's, read once.
 */
#include "read/perf/perf_data_build.h"
#include "read/read_impl.h"
#include "symbol/symbolizer.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- off-CPU time --------------------------------------------------------- */

/* An interval away: a mark under its stack, weighing its nanoseconds. */
static int add_interval(struct reader *r, const struct pd_offcpu_interval *iv)
{
    uint32_t *mark = &r->mark[iv->preempted];
    uint32_t node;
    int err = 0;
    if (*mark == UINT32_MAX)
        err = pd_raw_frame(&r->raw, 0, iv->preempted ? MARK_PREEMPTED_IP : MARK_BLOCKED_IP, mark);
    if (!err)
        err = pd_raw_child(&r->raw, iv->node, *mark, &node);
    if (!err)
        err = pd_raw_add_weight(r, node, iv->ns);
    return err ? err : pd_raw_note_time(r, iv->pid, iv->tid, iv->start);
}

static int on_switch(void *ctx, const struct pd_record *rec, const struct pd_sample_id *id)
{
    struct reader *r = ctx;
    struct pd_offcpu_interval iv;
    int err = pd_jobs_drain(r->jobs);
    if (err || !id->has_tid)
        return err;
    int got = pd_offcpu_switch(r->oc, id->tid, id->time, rec->misc, &iv);
    return got > 0 ? add_interval(r, &iv) : got;
}

/* Threads still away when the recording ended were away until then: the
 * latest time the file holds, its records' or the one its header gives
 * (where ember record says when it stopped; perf's is its last sample). */
static int close_intervals(struct reader *r)
{
    struct pd_offcpu_interval iv;
    uint64_t last = pd_reader_last_time(r->rd);
    uint64_t end = r->f->time_end > last ? r->f->time_end : last;
    int got, err = 0;
    while (!err && (got = pd_offcpu_close_next(r->oc, end, &iv)) > 0)
        err = add_interval(r, &iv);
    return err;
}

/* ---- the reader's callbacks ---------------------------------------------- */

/* Whether the kernel's symbols are read from the data's start, where
 * threads are to spare (perf_data_kernel.c): where an event of f's may
 * sample the kernel, and the data is long enough for reading it to hide
 * the 90-110 ms of reading /proc/kallsyms (the rest of the time, it is
 * read where the records are placed, if a kernel frame is in them). */
static bool kernel_early(const struct pd_file *f)
{
    enum { EARLY_DATA_MIN = 8 << 20 };
    for (size_t i = 0; i < f->nattrs; i++)
        if (!f->attrs[i].exclude_kernel)
            return f->data_size >= EARLY_DATA_MIN;
    return false;
}

static void *debuginfod_main(void *arg)
{
    (void)arg;
    ember_symbol_debuginfod_load();
    return NULL;
}

/* libdwfl's debuginfod client loaded on a thread from the data's start
 * (-j 2 and more): naming would load it on the caller's thread, where
 * the workers wait (symbolizer.h). Where no thread can be made, naming
 * loads it as before. */
static void debuginfod_ahead(struct reader *r)
{
    if (r->o->threads > 1 && !r->debuginfod_loading)
        r->debuginfod_loading = pthread_create(&r->debuginfod, NULL, debuginfod_main, NULL) == 0;
}

/* The events of a file, known from its header (a pipe's come later). */
static int on_header(void *ctx, const struct pd_file *f)
{
    struct reader *r = ctx;
    if (f->nattrs && EMBER_VEC_RESERVE(r->seen, r->seencap, f->nattrs) < 0)
        return -ENOMEM;
    if (f->nattrs)
        memset(r->seen, 0, f->nattrs * sizeof(*r->seen));
    r->records_jobs = pd_jobs_records_start(r->jobs);
    debuginfod_ahead(r);
    return r->o->threads > 1 && kernel_early(f) ? pd_kernel_read_early(&r->kernel_early) : 0;
}

/* Pipe mode: events arrive as records. */
static int on_attr(void *ctx, const struct pd_record *rec, size_t attr)
{
    struct reader *r = ctx;
    (void)rec;
    if (EMBER_VEC_RESERVE(r->seen, r->seencap, attr + 1) < 0)
        return -ENOMEM;
    r->seen[attr] = (struct pd_seen){0};
    return 0;
}

static int on_sample(void *ctx, const struct pd_record *rec, int attr, const struct pd_sample *s)
{
    struct reader *r = ctx;
    if (attr < 0) {
        r->unknown_ids++;
        r->st->skipped++;
        return 0;
    }
    return r->jobs ? pd_jobs_sample(r->jobs, rec, attr, s) : pd_raw_sample(r, attr, s);
}

/* Samples are decoded where they are built (pd_jobs_record), at -j 2 and
 * more: on this thread an fp sample's decoding and handing over cost more
 * than its stack. */
static int on_sample_record(void *ctx, const struct pd_record *rec)
{
    struct reader *r = ctx;
    return r->records_jobs ? pd_jobs_record(r->jobs, rec) : 0;
}

/* The same of a run of them, held, where the reader sorts its rounds on
 * threads: handed over at once, not one by one. */
static int on_sample_records(void *ctx, const struct pd_held_record *recs, size_t n)
{
    struct reader *r = ctx;
    return r->records_jobs ? pd_jobs_records(r->jobs, recs, n) : 0;
}

/* The records that change threads and maps. */
static int on_task(void *ctx, const struct pd_record *rec, const struct pd_sample_id *id)
{
    struct reader *r = ctx;
    (void)id;
    int err = pd_jobs_drain(r->jobs); /* the samples before it see the maps before it */
    return err ? err : pd_tasks_record(r->t, r->f, rec, r->d);
}

static int on_exit_record(void *ctx, const struct pd_record *rec, const struct pd_sample_id *id)
{
    struct reader *r = ctx;
    int err = pd_jobs_drain(r->jobs);
    if (err)
        return err;
    if (rec->size >= 8 + 16) /* pid, ppid, tid */
        pd_offcpu_exit(r->oc, pd_u32(rec->data + 16));
    return on_task(ctx, rec, id);
}

static int on_lost(void *ctx, const struct pd_record *rec, const struct pd_sample_id *id)
{
    struct reader *r = ctx;
    (void)id;
    if (rec->size >= 8 + 16)
        r->lost += pd_u64(rec->data + 16);
    return 0;
}

static void on_progress(void *ctx)
{
    struct reader *r = ctx;
    if (r->o->progress)
        r->o->progress(r->o->progress_ctx, r->in);
}

/* The samples a batch holds built: at the data's end, before the features
 * are read (an error in one names its event as one thread does, by its
 * attribute: the features may name it otherwise, "cpu-clock:ppp"), and
 * before one of perf's own records changes the events the threads read
 * samples by. */
static int drain_jobs(void *ctx)
{
    struct reader *r = ctx;
    return pd_jobs_drain(r->jobs);
}

static const struct pd_reader_tool profile_tool = {
    .header = on_header,
    .attr = on_attr,
    .sample = on_sample,
    .sample_record = on_sample_record,
    .sample_records = on_sample_records,
    .mmap = on_task,
    .comm = on_task,
    .fork = on_task,
    .exit = on_exit_record,
    .context_switch = on_switch,
    .lost = on_lost,
    .throttle = on_task,
    .other = on_task,
    .data_end = drain_jobs,
    .file_changes = drain_jobs,
    .progress = on_progress,
};

/* ---- the format ----------------------------------------------------------- */

/* Not inlined, nor is reader_release, so that profiles name them: what
 * they do (threads made and joined, tables made and freed) is the
 * caller's alone, the workers idle (bench/perfdata_phases.py). */
__attribute__((noinline)) static int reader_init(struct reader *r, struct ember_profile *p,
                                                 struct ember_input *in,
                                                 const struct ember_read_opts *o,
                                                 struct ember_read_stats *st, struct ember_diag *d)
{
    memset(r, 0, sizeof(*r));
    r->p = p;
    r->o = o;
    r->po = ember_perf_opts_of(o);
    r->st = st;
    r->d = d;
    r->in = in;
    r->keep_seq = ember_profile_has_sequence(p);
    r->mark[0] = r->mark[1] = UINT32_MAX;
    int err = pd_reader_new(&r->rd, in);
    if (!err) {
        r->f = pd_reader_file(r->rd);
        pd_reader_threads(r->rd, o->threads);
    }
    if (!err)
        err = pd_tasks_new(&r->t);
    if (!err)
        err = pd_raw_init(&r->raw, r->t, NULL);
    if (!err)
        err = pd_unwind_new(&r->uw, r->t);
    if (!err && o->threads > 1)
        err = pd_jobs_new(&r->jobs, r, o->threads);
    if (!err)
        err = pd_offcpu_new(&r->oc);
    return err;
}

__attribute__((noinline)) static void reader_release(struct reader *r)
{
    pd_jobs_free(r->jobs); /* first: its batch holds the reader's records */
    pd_kernel_ahead_free(r->kernel_early);
    if (r->debuginfod_loading)
        pthread_join(r->debuginfod, NULL);
    pd_reader_free(r->rd);
    pd_unwind_free(r->uw);
    pd_offcpu_free(r->oc);
    pd_raw_release(&r->raw);
    pd_tasks_free(r->t);
    free(r->seen);
    free(r->seq);
    free(r->times);
}

static void warn_lost(struct reader *r)
{
    struct ember_diag w;
    if (r->o->warn && r->lost) {
        ember_diag_set(&w, 0, r->f->name, 0,
                       "%llu samples were lost while recording (perf record could not keep up)",
                       (unsigned long long)r->lost);
        r->o->warn(r->o->warn_ctx, &w);
    }
    if (r->o->warn && r->unknown_ids) {
        ember_diag_set(&w, 0, r->f->name, 0,
                       "%llu samples skipped: their event id is none of the file's events",
                       (unsigned long long)r->unknown_ids);
        r->o->warn(r->o->warn_ctx, &w);
    }
}

static int perf_data_read(struct ember_profile *p, struct ember_input *in,
                          const struct ember_read_opts *o, struct ember_read_stats *st,
                          struct ember_diag *d)
{
    struct reader r;
    int err = reader_init(&r, p, in, o, st, d);
    if (!err)
        err = pd_reader_run(r.rd, &profile_tool, &r, d);
    /* also where the reader stopped: the samples waiting in a batch came
     * before, so their error is the one one thread meets first */
    int jerr = pd_jobs_finish(r.jobs);
    err = jerr ? jerr : err;
    pd_jobs_free(r.jobs); /* its workers and overlays: their memory is placing's now */
    r.jobs = NULL;
    if (!err && r.raw.dwarf)
        err = pd_file_check_arch(r.f, d);
    if (!err)
        err = close_intervals(&r);
    if (!err) {
        warn_lost(&r);
        err = pd_place_profile(&r);
    }
    if (o->progress)
        o->progress(o->progress_ctx, in);
    reader_release(&r);
    return err;
}

/* perf's magic, and those of the files the reader refuses by name: a
 * big-endian one, perf's first format. */
static enum ember_probe perf_data_probe(const char *data, size_t len)
{
    static const char *const magic[] = {PD_MAGIC, PD_MAGIC_SWAPPED, PD_MAGIC_V1};
    for (size_t i = 0; len >= PD_MAGIC_LEN && i < sizeof(magic) / sizeof(magic[0]); i++)
        if (memcmp(data, magic[i], PD_MAGIC_LEN) == 0)
            return EMBER_PROBE_YES;
    return EMBER_PROBE_NO;
}

const struct ember_format ember_format_perf_data = {
    .name = "perf.data",
    .description = "perf.data, as perf record writes it (fp and DWARF call graphs)",
    .probe = perf_data_probe,
    .read = perf_data_read,
    .options = ember_perf_options,
    .options_heading = EMBER_PERF_OPTIONS_HEADING,
};
