/*
 * ember/traceview.h - what `ember trace` shows of a trace: the events one
 * per line, per-span statistics and latency histograms, and exports to
 * Chrome trace JSON, Perfetto and CTF (for babeltrace2); and an OCaml 5
 * program's GC phases beside CPU samples of the same program.
 */
#ifndef EMBER_TRACEVIEW_H
#define EMBER_TRACEVIEW_H

#include "ember/base.h"
#include "ember/read.h"
#include "ember/tracefile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One line per event, in time order: seconds since the start (or raw
 * ticks), thread, kind, name, fields; names escaped as by
 * ember_trace_escape, string values quoted. */
EMBER_API int ember_trace_dump(struct ember_trace *t, const struct ember_sink *out, bool ticks);

/* An OCaml runtime_events file as OCaml's own consumer reads it (the text
 * of the corpus's *.expected.txt): -EINVAL for another format. */
EMBER_API int ember_trace_dump_ocaml(struct ember_trace *t, const struct ember_sink *out);

/* One event as dump prints it, with its thread's name, into buf (a line
 * ending in '\n', cut to cap). Returns the length. */
EMBER_API size_t ember_trace_event_line(const struct ember_trace_event *e, const char *thread,
                                        bool ticks, char *buf, size_t cap);

/* A name (of an event, field or thread) as the text tools print it, one
 * event per line whatever it holds: '\' as "\\", control bytes and DEL as
 * \xNN. Writes whole escapes into buf, cut to cap with its NUL; returns
 * the length of the whole text, as snprintf does. */
EMBER_API size_t ember_trace_escape(const char *name, char *buf, size_t cap);

/* Per span name: count, total, mean, min, percentiles, max. Spans still
 * open at the end of the trace are counted apart, not as spans. */
EMBER_API int ember_trace_stats(struct ember_trace *t, const struct ember_sink *out);

/* Durations of the spans named span (NULL: all): the percentile table in
 * HdrHistogram's classic format, every value exact, then a bar chart.
 * Percentiles, here and in stats and gc-stats, are by nearest rank: the
 * pth of n durations is the ceil(p/100 * n)-th smallest. */
EMBER_API int ember_trace_latency(struct ember_trace *t, const char *span,
                                  const struct ember_sink *out, struct ember_diag *d);

/* OCaml 5 programs: olly's gc-stats (wall time, domain time - the sum of
 * the domains' lifetimes, which olly calls CPU time - and GC time per
 * domain, GC pause percentiles, allocations, collections) as text or JSON
 * (olly's keys, version 3: cpu_time is the command's CPU time, null when
 * unknown, domain_time olly's cpu_time); a program that died without a
 * stop event, open pauses and lost words are said. */
struct ember_gc_options {
    int64_t max_rss_kb; /* the program's peak RSS when ember ran it; -1 unknown */
    int64_t cpu_ns;     /* its user + system CPU time likewise; -1 unknown */
    bool json;
};
EMBER_API int ember_trace_gc_stats(struct ember_trace *t, const struct ember_gc_options *o,
                                   const struct ember_sink *out, struct ember_diag *d);
/* The GC pauses of an OCaml 5 program as `latency` shows spans. */
EMBER_API int ember_trace_gc_latency(struct ember_trace *t, const struct ember_sink *out,
                                     struct ember_diag *d);

EMBER_API int ember_trace_export_chrome(struct ember_trace *t, const struct ember_sink *out);
EMBER_API int ember_trace_export_perfetto(struct ember_trace *t, const struct ember_sink *out);
/* A CTF 1.8 trace directory: metadata and one stream file per thread. */
EMBER_API int ember_trace_export_ctf(struct ember_trace *t, const char *dir, struct ember_diag *d);

/* ---- GC phases
 *
 * an OCaml 5 program's GC phases (from its runtime
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
/* A profile's counters over time (a heap recording's heap in use) as
 * Perfetto's protobuf trace: a process named name, under it a counter
 * track per counter (a TrackDescriptor with a CounterDescriptor, its unit
 * bytes or count when it is one), each point a TYPE_COUNTER TrackEvent at
 * its time (ns from the recording's start), in time order. -ENODATA (d
 * says so) when p has no counter. */
EMBER_API int ember_counters_perfetto(const struct ember_profile *p, const char *name,
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
