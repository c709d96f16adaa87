/*
 * timeline.h - the samples of a recording on their time axis, shared by the
 * timeline's writers (library-internal): gc_timeline.c builds it and writes
 * Chrome's Trace Event JSON, timeline_perfetto.c Perfetto's protobuf.
 *
 * Invariants once built: samples are sorted by (pid, tid, time, arrival);
 * spans by (pid, tid, begin, depth), outer first; a thread's track is named
 * after the command perf gave its last sample (the root frame of every
 * stack perf.data gives is the thread's command), its process's after its
 * main thread's.
 */
#ifndef EMBER_TRACEVIEW_TIMELINE_H
#define EMBER_TRACEVIEW_TIMELINE_H

#include "ember/traceview.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { DOMAIN_TID_BASE = 4194304 }; /* above Linux's largest pid_max */

struct tl_sample {
    uint32_t pid, tid;
    uint64_t time, period;
    uint32_t node;
    size_t order;
};

struct tl_span {
    uint32_t pid, tid, node, depth;
    uint64_t begin, end;
};

struct timeline {
    const struct ember_profile *p;
    const struct ember_gc_phases *g;
    const struct ember_gc_filter *f;
    unsigned vsamples, vtime; /* vtime == vsamples: no time value */
    int64_t scale;            /* 10^decimals */
    struct tl_sample *s;
    size_t ns, next, kept; /* ns: the times, then the samples kept */
    struct tl_span *spans;
    size_t nspans, scap;
    bool mismatch;
};

/* Pairs p's sequence with f's times and lays out the spans: 0, or -EINVAL
 * (d says why) when they do not pair, -ENOMEM. */
int ember_timeline_build(struct timeline *t, struct ember_diag *d);
void ember_timeline_release(struct timeline *t);
/* A thread's track name: its command, and with GC phases what the thread
 * is to the OCaml runtime; a process's: its main thread's command (else
 * its first thread's). Write at most cap - 1 bytes and a NUL. */
void ember_timeline_thread_name(const struct timeline *t, uint32_t pid, uint32_t tid, char *buf,
                                size_t cap);
void ember_timeline_process_name(const struct timeline *t, uint32_t pid, char *buf, size_t cap);

#endif
