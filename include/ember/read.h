/*
 * ember/read.h - reading profiles in the formats people have.
 *
 * Formats are table entries: a name, a probe that looks at the first bytes
 * of an input, a reader that streams the input into a profile, and the
 * reader's own options (name, kind, default, help), which a program offers
 * on its command line and passes back by name (ember_read_opts_set). Adding
 * a format is adding one file with its row, and the row to the registry
 * (docs/adding-a-format.md).
 */
#ifndef EMBER_READ_H
#define EMBER_READ_H

#include "ember/base.h"
#include "ember/model.h"

#include <stdbool.h>
#include <stddef.h>

/* A format's own option, as its row declares it. */
enum ember_option_type {
    EMBER_OPTION_FLAG,   /* set or not ("1") */
    EMBER_OPTION_STRING, /* a value */
};
struct ember_format_option {
    const char *name; /* the command line's "--name"; formats may share one */
    enum ember_option_type type;
    const char *arg;  /* the value's name in help ("EVENT"); NULL for flags */
    const char *def;  /* the default, as help shows it; NULL: none */
    const char *help; /* one line */
};

enum { EMBER_READ_SETTINGS = 32 };

struct ember_read_opts {
    unsigned threads; /* parser threads for formats that support them; 0 = 1 */
    /* keep each frame's address and module (pprof's locations and
     * mappings): more distinct frames, for writers that carry them */
    bool addresses;
    /* the value to show, by name or index (--event, --sample-type): pprof
     * picks its default with it, callgrind computes that event; NULL:
     * the format's default */
    const char *value;
    /* formats' options, by name (ember_read_opts_set) */
    struct {
        const char *name, *value;
    } settings[EMBER_READ_SETTINGS];
    unsigned nsettings;
    ember_warn_fn warn; /* skipped lines and other non-fatal problems */
    void *warn_ctx;
    /* perf.data: asked for each sample, in time order, whether to keep it:
     * its process, thread and time (ns on the recording's clock); NULL:
     * every sample (ember --during gc / --outside gc) */
    bool (*keep_sample)(void *ctx, uint32_t pid, uint32_t tid, uint64_t time);
    void *keep_sample_ctx;
    /* perf.data with the profile's sequence kept: told each sample's process,
     * thread and time in the sequence's order, once per sample the profile
     * counts (k times for an entry of k samples; an off-CPU interval is one,
     * at its start), after the samples not kept and the events not shown
     * are left out; NULL: not told */
    void (*sample_time)(void *ctx, uint32_t pid, uint32_t tid, uint64_t time);
    void *sample_time_ctx;
    /* --from/--to: a window of a recording's time, ns from its start (to_ns
     * 0: to its end). Formats whose row says `window` keep the allocations
     * made in it and count what is held at its end (heap recordings,
     * memtrace); ember_format_read refuses a window for the others
     * (-ENOTSUP). */
    uint64_t from_ns, to_ns;
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
    /* Its own options, ending with a NULL name (NULL: none), and their
     * heading in help ("perf script options (as stackcollapse-perf.pl)"). */
    const struct ember_format_option *options;
    const char *options_heading;
    bool window; /* it honours ember_read_opts' from_ns and to_ns */
};

/* Sets option name (a flag: "1") for the formats that know it; -ENOSPC when
 * too many are set. Getting an option no row declares is a reader's bug:
 * the getters then act as if it were not set. */
EMBER_API int ember_read_opts_set(struct ember_read_opts *o, const char *name, const char *value);
EMBER_API bool ember_read_opts_flag(const struct ember_read_opts *o, const char *name);
EMBER_API const char *ember_read_opts_string(const struct ember_read_opts *o, const char *name);

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

#endif
