/*
 * perf_data_place.h - placing raw nodes in a profile, shared by the
 * placing on one thread (perf_data_place.c) and on several
 * (perf_data_place_threads.c) (library-internal).
 *
 * A placing puts raw nodes into one profile with one names object: each
 * raw node's profile node is found below its parent's, its raw frame
 * named once per JVM-ness (the memo). A placing of every weighed node in
 * index order makes the profile the reader gives.
 */
#ifndef EMBER_READ_PERF_DATA_PLACE_H
#define EMBER_READ_PERF_DATA_PLACE_H

#include "read/perf/perf_data_build.h"

/* A growing array of ids. */
struct id_vec {
    uint32_t *v;
    size_t n, cap;
};

/* Each raw frame's profile frames, named once (per JVM-ness). */
struct memo {
    int64_t *at[2]; /* offset in pool, -1 unnamed */
    uint32_t *count[2];
    uint32_t *pool;
    size_t npool, pcap;
};

/* A raw node's profile node not found yet (NO_NODE: none, its event not
 * kept). */
enum { UNPLACED = UINT32_MAX - 1 };

/* Placing raw nodes into p: at[] their profile nodes (UNPLACED where not
 * found yet), rframe[] and rjvm[] their roots' frames and JVM-ness. */
struct pd_placing {
    struct reader *r;
    struct ember_profile *p;
    struct pd_names *nm; /* naming into p */
    struct memo m;
    uint32_t *rframe;
    bool *rjvm;
    bool any_jvm;
    uint32_t *at;
    struct id_vec chain;
};

/* A placing into p (with nm, which names into p) of r's raw nodes, at
 * their places in at (r->raw.nnodes of them, set UNPLACED here): the
 * roots' frames of the events kept interned first, in the roots' order. */
int pd_placing_init(struct pd_placing *pl, struct reader *r, struct ember_profile *p,
                    struct pd_names *nm, const bool *keep, uint32_t *at);
void pd_placing_release(struct pd_placing *pl);
/* Raw node i's profile node, as adding its whole stack (root first)
 * would make it, in the same order. */
int pd_placing_place(struct pd_placing *pl, uint32_t i);
/* Whether raw node i's weight counts (attr: each node's event, with
 * off-CPU time shown; else NULL). */
bool pd_place_counted(const struct reader *r, size_t i, const uint32_t *attr);
/* Raw node i's weight (samples, period) in node n of p, added to
 * *total_samples. */
int pd_place_weigh(struct reader *r, struct ember_profile *p, size_t i, uint32_t n,
                   const struct pd_values *v, uint64_t *total_samples);

/* perf_data_place_threads.c: every weighed, counted raw node placed and
 * weighed on r->o->threads threads, each into a profile of its own, then
 * merged into r->p in the nodes' order: the profile one thread makes.
 * nm has every file naming needs open (pd_names_open). 0: done, r's raw
 * nodes then dropped (pd_raw_drop) to make room for the merge; 1: not
 * done (nothing added to r->p), the caller's to do on its thread. */
int pd_place_threads(struct reader *r, struct pd_names *nm, const bool *keep, const uint32_t *attr,
                     const struct pd_values *v);

#endif
