/*
 * callgrind_impl.h - the call graph that callgrind.c reads and
 * callgrind_stacks.c turns into stacks (library-internal).
 *
 * Invariants: a function's self cost is the sum of its own cost lines, its
 * total that plus the inclusive cost of the calls it makes, its incoming
 * the inclusive cost of the calls made to it; each (caller, callee) pair
 * has one edge, the calls' costs summed; costs are never negative.
 */
#ifndef EMBER_READ_CALLGRIND_IMPL_H
#define EMBER_READ_CALLGRIND_IMPL_H

#include "ember/read.h"
#include "ember/model.h"

#include <stdbool.h>
#include <stdint.h>

#define CG_NONE UINT32_MAX

struct cg_func {
    uint32_t name; /* in the reader's name table, with callgrind's 'N suffix */
    uint32_t file; /* its source file there (fl=) */
    int64_t self, total, incoming;
    uint32_t first_edge, last_edge; /* calls made, in the file's order; CG_NONE: none */
    bool called;
};

struct cg_edge {
    uint32_t to, next;
    int64_t cost;
};

struct cg_graph {
    struct cg_func *funcs;
    size_t nfuncs, fcap;
    struct cg_edge *edges;
    size_t nedges, ecap;
    /* Every event's costs, `stride` per function or edge: the reader fills
     * these, and copies one event's into the scalars above to expand it. */
    int64_t *self, *total, *incoming; /* by function */
    size_t scap, tcap, icap;
    int64_t *cost; /* by edge */
    size_t ccap;
    unsigned stride;
};

/* Where the stacks go, and what to tell. */
struct cg_out {
    struct ember_profile *p;
    const struct ember_profile *names; /* the graph's function names */
    const struct ember_read_opts *o;
    struct ember_read_stats *st;
    const char *file;
    struct ember_diag *d;
    unsigned value; /* the profile's value the stacks weigh */
    bool quiet;     /* not the event shown: no warnings, not counted as samples */
};

/* Adds the graph's stacks to out->p: every function's self cost exactly,
 * under its callers in proportion to their calls. */
int ember_callgrind_stacks(const struct cg_graph *g, const struct cg_out *out);

#endif
