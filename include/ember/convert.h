/*
 * ember/convert.h - writing a profile for the tools people already use:
 * pprof (go tool pprof), speedscope, Chrome's trace JSON (Perfetto,
 * speedscope) and CSV/TSV (spreadsheets, pandas).
 *
 * Every writer walks the profile and streams to an ember_sink: memory grows
 * with the number of distinct stacks, never with samples. Frame names are
 * written as they are, except that JSON, which must be UTF-8, gets U+FFFD
 * for invalid bytes. Formats with one value per stack take the last metric
 * of a differential profile (the "after" counts a flame graph draws).
 * Weights stay exact: decimals are written as decimals, or, in pprof's
 * integers, scaled (and the file says by how much, for ember to read back).
 */
#ifndef EMBER_CONVERT_H
#define EMBER_CONVERT_H

#include "ember/error.h"
#include "ember/formats.h"
#include "ember/profile.h"

#define EMBER_SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

struct ember_convert_opts {
    const char *name;     /* the profile's title: speedscope's name, Chrome's process */
    const char *exporter; /* speedscope's "exporter", e.g. "ember@0.1.0" */
    char separator;       /* CSV: ',' or '\t' (TSV) */
};

/* name "profile", exporter "ember", separator ','. Writers take NULL
 * options, or NULL and 0 fields, as these defaults. */
EMBER_API void ember_convert_opts_default(struct ember_convert_opts *o);

/* pprof's profile.proto, gzipped: one sample per stack (location ids leaf
 * first) and labelled part of it, one Function per frame and one Location
 * per frame and the calls inlined at its address, the modules as Mappings
 * (the main program's first), every value as a sample type ("samples"/
 * "count" unless a reader said otherwise; a differential profile gets
 * "before" and "after"), and what the profile says of itself (period,
 * times, comments, frame filters). */
EMBER_API int ember_write_pprof(const struct ember_profile *p, const struct ember_convert_opts *o,
                                const struct ember_sink *out, struct ember_diag *d);

/* speedscope's file format: a sampled profile (stacks root first, with
 * their weights); an evented one (open/close events in arrival order) when
 * the profile kept its arrival sequence. Weights must not be negative. */
EMBER_API int ember_write_speedscope(const struct ember_profile *p,
                                     const struct ember_convert_opts *o,
                                     const struct ember_sink *out, struct ember_diag *d);

/* Chrome's Trace Event JSON: complete ("X") events laid out as a flame
 * chart on one thread, in arrival order when the profile kept it, else in
 * folded-stack order. Time weights become their microseconds; other units
 * (samples, bytes) are drawn 1 unit = 1 us. Weights must not be negative. */
EMBER_API int ember_write_chrome(const struct ember_profile *p, const struct ember_convert_opts *o,
                                 const struct ember_sink *out, struct ember_diag *d);

/* One row per stack, "stack,weight" ("stack,before,after" for differential
 * profiles) after a header row, sorted as folded stacks are; fields quoted
 * as RFC 4180 says (also with a tab separator, as Python's csv and pandas
 * read it). */
EMBER_API int ember_write_csv(const struct ember_profile *p, const struct ember_convert_opts *o,
                              const struct ember_sink *out, struct ember_diag *d);

/*
 * Writers are table rows too: a name, the file name endings that choose it
 * (`ember record -o prof.svg`), a description, whether it is binary (not for
 * a terminal), and the function. Adding a writer is one file with its row,
 * and the row in lib/convert/writers.c.
 */
struct ember_writer_format {
    const char *name;
    const char *extensions; /* space-separated, the longest first: ".pb.gz .pb" */
    const char *description;
    bool binary;
    int (*write)(const struct ember_profile *p, const struct ember_convert_opts *o,
                 const struct ember_sink *out, struct ember_diag *d);
};

/* The writers, ending with NULL. */
EMBER_API const struct ember_writer_format *const *ember_writer_formats(void);
EMBER_API const struct ember_writer_format *ember_writer_find(const char *name);
/* The writer whose extension ends path (NULL: none). */
EMBER_API const struct ember_writer_format *ember_writer_for_path(const char *path);

#endif
