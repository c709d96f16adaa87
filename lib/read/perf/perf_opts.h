/*
 * perf_opts.h - the options of stackcollapse-perf.pl, with the same meaning,
 * shared by the readers of perf's output (library-internal): their row in
 * the format table, and their values read back from ember_read_opts.
 */
#ifndef EMBER_READ_PERF_OPTS_H
#define EMBER_READ_PERF_OPTS_H

#include "ember/read.h"

struct ember_perf_opts {
    bool include_pid;         /* root frame "comm-PID" */
    bool include_tid;         /* root frame "comm-PID/TID" */
    bool annotate_kernel;     /* "_[k]" on kernel frames */
    bool annotate_jit;        /* "_[j]" on JIT frames */
    bool include_addrs;       /* "[module <ADDR>]" for unresolved frames */
    const char *event_filter; /* NULL: the first event seen */
    bool srcline;             /* input from `perf script -F+srcline` */
    bool inline_frames;       /* expand inlined calls from DWARF */
    bool context;             /* with inline_frames: "func:file:line" (implies it) */
};

/* The options' row (ends with a NULL name), and its heading. */
extern const struct ember_format_option ember_perf_options[];
#define EMBER_PERF_OPTIONS_HEADING "perf script options (as stackcollapse-perf.pl):"

/* The options as set in o (--all is --kernel --jit, --context implies
 * --inline). */
struct ember_perf_opts ember_perf_opts_of(const struct ember_read_opts *o);

#endif
