/*
 * ember/report.h - a profile as text tables: the top functions (as
 * `pprof -top`), the call tree with percentages, a function's callers and
 * callees; as aligned text, CSV or TSV.
 *
 * A function's self weight is the weight of the stacks it ends; its total
 * weight is that of the stacks it is on, counted once per stack however
 * often it recurses. Percentages are of the profile's total.
 */
#ifndef EMBER_REPORT_H
#define EMBER_REPORT_H

#include "ember/formats.h"
#include "ember/profile.h"

#include <stdbool.h>
#include <stddef.h>

enum ember_table { EMBER_TABLE_TEXT, EMBER_TABLE_CSV, EMBER_TABLE_TSV };

struct ember_report_opts {
    unsigned metric;      /* differential profiles: 0 before, 1 after; else the selected value */
    size_t top;           /* rows of the top table (0: all) */
    bool by_total;        /* top: sorted by total weight rather than self */
    double percent_limit; /* rows (tree nodes) below this % of the total left out */
    enum ember_table format;
};

/* The functions by self (or total) weight. */
EMBER_API int ember_report_top(const struct ember_profile *p, const struct ember_report_opts *o,
                               const struct ember_sink *out);
/* The call tree from the roots, heaviest child first, one line per node. */
EMBER_API int ember_report_tree(const struct ember_profile *p, const struct ember_report_opts *o,
                                const struct ember_sink *out);
/* The callers (or callees) of the function named name, with the weight of
 * the calls; -ENOENT when no frame has that name. */
EMBER_API int ember_report_neighbours(const struct ember_profile *p,
                                      const struct ember_report_opts *o, const char *name,
                                      bool callers, const struct ember_sink *out);

#endif
