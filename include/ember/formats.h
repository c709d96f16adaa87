/*
 * ember/formats.h - reading profiles in the formats people have, and
 * writing folded stacks.
 *
 * Formats are table entries: a name, a probe that looks at the first bytes
 * of an input, and a reader that streams the input into a profile.
 */
#ifndef EMBER_FORMATS_H
#define EMBER_FORMATS_H

#include "ember/error.h"
#include "ember/input.h"
#include "ember/profile.h"

#include <stdbool.h>
#include <stddef.h>

/* Options of stackcollapse-perf.pl, with the same meaning. */
struct ember_perf_opts {
    bool include_pid;         /* root frame "comm-PID" */
    bool include_tid;         /* root frame "comm-PID/TID" */
    bool annotate_kernel;     /* "_[k]" on kernel frames */
    bool annotate_jit;        /* "_[j]" on JIT frames */
    bool include_addrs;       /* "[module <ADDR>]" for unresolved frames */
    const char *event_filter; /* NULL: the first event seen */
    bool srcline;             /* input from `perf script -F+srcline` */
    bool inline_frames;       /* expand inlined calls from DWARF */
    bool context;             /* with inline_frames: "func:file:line" */
};

struct ember_read_opts {
    struct ember_perf_opts perf;
    unsigned threads; /* parser threads for formats that support them; 0 = 1 */
    /* pprof: the sample type to read ("cpu", "alloc_space", or its index);
     * NULL: default_sample_type, else the last one, as pprof does */
    const char *sample_type;
    bool no_modules;     /* macOS sample: "func", not "module`func" */
    bool include_offset; /* DTrace: callers keep their "+0x..." offsets */
    const char *event;   /* callgrind: the event (cost column) to read; NULL: the first */
    ember_warn_fn warn;  /* skipped lines and other non-fatal problems */
    void *warn_ctx;
    /* Called now and then with the bytes consumed of the current input. */
    void (*progress)(void *ctx, const struct ember_input *in);
    void *progress_ctx;
};

/* What a reader reports beyond the profile. */
struct ember_read_stats {
    uint64_t samples;      /* stacks added */
    uint64_t skipped;      /* lines or samples that could not be used */
    uint64_t filtered;     /* perf: samples of other events than the one kept */
    char kept_event[128];  /* perf: the event kept ("" if none was named) */
    char other_event[128]; /* perf: the first other event dropped */
};

/* A probe's answer. MORE: the bytes shown end inside the first line, and
 * the format can only tell from a whole one (a folded stack deeper than the
 * probing window): detection shows it more, up to the end of that line. */
enum ember_probe {
    EMBER_PROBE_NO = 0,
    EMBER_PROBE_MAYBE = 1,
    EMBER_PROBE_YES = 2,
    EMBER_PROBE_MORE = 3
};

struct ember_format {
    const char *name;
    const char *description;
    /* Looks at the first bytes of an input. */
    enum ember_probe (*probe)(const char *data, size_t len);
    int (*read)(struct ember_profile *p, struct ember_input *in, const struct ember_read_opts *o,
                struct ember_read_stats *st, struct ember_diag *d);
};

/* The registry, in probing order, ending with NULL. */
EMBER_API const struct ember_format *const *ember_formats(void);
EMBER_API const struct ember_format *ember_format_find(const char *name);
/* Chooses the format of an input from its first bytes; -EINVAL when none
 * fits (d says what the input looks like). */
EMBER_API int ember_format_detect(struct ember_input *in, const struct ember_format **fmt,
                                  struct ember_diag *d);
/* Reads in as fmt into p: fmt->read, and one rule for every format: an
 * input in which the reader found no sample, or after which p holds no
 * weight at all (samples that all weigh 0), is an error (-ENODATA, "no
 * samples in FILE"), never an empty result. */
EMBER_API int ember_format_read(const struct ember_format *fmt, struct ember_profile *p,
                                struct ember_input *in, const struct ember_read_opts *o,
                                struct ember_read_stats *st, struct ember_diag *d);

/* Where writers put their bytes. write returns 0 or a negative error. */
struct ember_sink {
    int (*write)(void *ctx, const char *buf, size_t len);
    void *ctx;
};

/* Folded stacks, one line per distinct stack, sorted bytewise:
 * "frame;frame;frame COUNT" (two counts for differential profiles). */
EMBER_API int ember_write_folded(const struct ember_profile *p, const struct ember_sink *out);

#endif
