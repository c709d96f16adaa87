/*
 * ember/gcphases.h - an OCaml 5 program's GC phases (from its runtime
 * events) beside CPU samples of the same program: which samples were taken
 * inside a GC phase (`--during gc`, `--outside gc`), and the phases on the
 * samples' time axis (the Chrome timeline of `ember record -o x.json`).
 *
 * Times are CLOCK_MONOTONIC nanoseconds: OCaml stamps its runtime events
 * with that clock on Linux (caml_time_counter), and ember record stamps its
 * samples with it (use_clockid), so no conversion is made.
 *
 * A GC phase of a domain: from the begin of a runtime phase while none is
 * open on that domain to the end of that phase, every runtime phase but
 * domain_condition_wait (a domain blocked on a condition, which is not
 * collecting; the STW work it takes part in meanwhile is). Phases still
 * open at the end of the trace end at its last event.
 *
 * Domains and threads: runtime events carry no thread ids, and a domain
 * is not one thread (a blocked domain's stop-the-world work runs on its
 * backup thread), so which domain a thread runs cannot be read from them,
 * except that domain 0 is the main thread (tid == pid). Stop-the-world
 * phases (stw_leader, stw_handler, interrupt_remote and other stw_*) stop
 * every domain: a domain waiting to join one (spinning in
 * caml_try_run_on_all_domains_with_spin_work) has no phase open yet, and
 * is collecting all the same. So a sample of the main thread is inside GC
 * when domain 0 is in a GC phase or any domain in a stop-the-world one; a
 * sample of another thread when any domain of the process is in a GC
 * phase. With one domain this is exact; with several, a domain's
 * concurrent major slice also covers the other domains' mutator samples
 * taken meanwhile.
 */
#ifndef EMBER_GCPHASES_H
#define EMBER_GCPHASES_H

#include "ember/error.h"
#include "ember/formats.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ember_gc_phases;

/* A phase, paired: [begin, end) in CLOCK_MONOTONIC ns; depth 0 is a GC
 * phase as above, deeper ones are phases inside it. */
struct ember_gc_slice {
    uint64_t begin, end;
    const char *name;
    unsigned depth;
    bool open_at_end; /* its end was not in the trace */
};

/* Reads the phases of an OCaml 5 runtime_events file; -ENODATA (d says
 * so) when it has no runtime phase. */
EMBER_API int ember_gc_phases_read(struct ember_gc_phases **out, const char *path,
                                   struct ember_diag *d);
EMBER_API void ember_gc_phases_free(struct ember_gc_phases *g);
/* The process the events are of. */
EMBER_API uint32_t ember_gc_phases_pid(const struct ember_gc_phases *g);
EMBER_API unsigned ember_gc_phases_domains(const struct ember_gc_phases *g);
/* Domain's slices, ordered by begin (outer before inner on ties). */
EMBER_API size_t ember_gc_phases_count(const struct ember_gc_phases *g, unsigned domain);
EMBER_API const struct ember_gc_slice *ember_gc_phases_slice(const struct ember_gc_phases *g,
                                                             unsigned domain, size_t i);
/* Whether a sample of thread tid of process pid at time was taken inside a
 * GC phase (see above); another process's samples are outside. */
EMBER_API bool ember_gc_phases_during(const struct ember_gc_phases *g, uint32_t pid, uint32_t tid,
                                      uint64_t time);

/* A sample's process, thread and time. */
struct ember_sample_time {
    uint32_t pid, tid;
    uint64_t time;
};

/* ember_read_opts.keep_sample's context: keeps the samples inside (during)
 * or outside GC phases (g NULL: every sample), counting both; and
 * sample_time's: when times is set, the times of the samples the profile
 * counts, in its sequence's order (which ember_gc_timeline_chrome pairs
 * them with). */
struct ember_gc_filter {
    const struct ember_gc_phases *g;
    bool during;
    bool times;
    uint64_t kept, dropped;
    uint64_t foreign; /* samples of other processes than the events' */
    struct ember_sample_time *v;
    size_t n, cap;
    bool nomem; /* a time could not be kept */
};
EMBER_API bool ember_gc_filter_keep(void *ctx, uint32_t pid, uint32_t tid, uint64_t time);
EMBER_API void ember_gc_filter_time(void *ctx, uint32_t pid, uint32_t tid, uint64_t time);
EMBER_API void ember_gc_filter_release(struct ember_gc_filter *f);

/*
 * One timeline in Chrome's Trace Event JSON: the CPU samples of p (read
 * with its arrival sequence kept, f's times recorded) as a flame chart per
 * thread, on a track (pid, tid) named after the thread's command (its
 * process after its main thread's), each sample from its time until the
 * thread's next sample or its period, and g's phases (NULL: none) on a
 * track per domain ("OCaml domain N: GC phases", tid 4194304 + N: above
 * any Linux thread id); times are the recording's (CLOCK_MONOTONIC for
 * ember record) in microseconds, to the nanosecond. -EINVAL (d says why)
 * when the sequence and the times do not pair (transforms that dropped
 * samples).
 */
/* The same timeline as Perfetto's protobuf trace (ui.perfetto.dev,
 * trace_processor): a track per thread and per domain, nested slices. */
EMBER_API int ember_gc_timeline_perfetto(const struct ember_profile *p,
                                         const struct ember_gc_filter *f,
                                         const struct ember_gc_phases *g,
                                         const struct ember_sink *out, struct ember_diag *d);
EMBER_API int ember_gc_timeline_chrome(const struct ember_profile *p,
                                       const struct ember_gc_filter *f,
                                       const struct ember_gc_phases *g,
                                       const struct ember_sink *out, struct ember_diag *d);
/* The same timeline in speedscope's file format (title: its name): an
 * evented profile per thread and per domain's GC phases, in nanoseconds
 * from the timeline's first time, all on that one axis. */
EMBER_API int ember_gc_timeline_speedscope(const struct ember_profile *p,
                                           const struct ember_gc_filter *f,
                                           const struct ember_gc_phases *g, const char *title,
                                           const struct ember_sink *out, struct ember_diag *d);

#endif
