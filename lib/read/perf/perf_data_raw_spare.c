/*
 * perf_data_raw_spare.c - the reader's trie grown ahead (struct
 * pd_raw_spare): its node arrays and child table made bigger on a worker
 * while a batch is built, the trie unchanged meanwhile, and taken by the
 * reading thread before the batch's merge, where the trie is still as it
 * was planned for (else let go: the merge grows the trie as it would
 * have).
 * Invariants: making a spare only reads the trie; taking one renumbers
 * nothing (nodes keep their places, entries their keys).
 */
#include "read/perf/perf_data_build.h"
#include "base/table.h"

#include <stdlib.h>
#include <string.h>

/* cap doubled till it holds n, as grow_nodes grows it. */
static size_t grown_cap(size_t cap, size_t n)
{
    while (cap < n && cap * 2 > cap)
        cap *= 2;
    return cap;
}

/* A table's mask once it holds count entries, at most half full. */
static uint32_t grown_mask(uint32_t mask, size_t count)
{
    while (count * 2 > (size_t)mask + 1 && mask * 2 + 1 > mask)
        mask = mask * 2 + 1;
    return mask;
}

void pd_raw_spare_plan(const struct pd_raw *raw, size_t more, struct pd_raw_spare *sp)
{
    *sp = (struct pd_raw_spare){0};
    size_t cap = raw->ncap ? grown_cap(raw->ncap, raw->nnodes + more) : 0;
    uint32_t mask = grown_mask(raw->children.mask, (size_t)raw->children.count + more);
    if (cap == raw->ncap && mask == raw->children.mask)
        return;
    sp->nnodes = raw->nnodes;
    sp->ncap = cap;
    sp->mask = mask;
}

/* A copy of the first n of an array of cap, the rest zeroed (their pages
 * touched here, not where they are written). */
static void *copied(const void *from, size_t n, size_t cap, size_t size)
{
    char *to = malloc(cap * size);
    if (to) {
        memcpy(to, from, n * size);
        memset(to + n * size, 0, (cap - n) * size);
    }
    return to;
}

void pd_raw_spare_make(const struct pd_raw *raw, struct pd_raw_spare *sp)
{
    size_t n = raw->nnodes;
    if (sp->ncap != raw->ncap) {
        sp->parent = copied(raw->parent, n, sp->ncap, sizeof(*raw->parent));
        sp->key = copied(raw->key, n, sp->ncap, sizeof(*raw->key));
        sp->samples = copied(raw->samples, n, sp->ncap, sizeof(*raw->samples));
        sp->period = copied(raw->period, n, sp->ncap, sizeof(*raw->period));
    }
    if (sp->mask != raw->children.mask)
        sp->slots = ember_table_regrown(raw->children.slots, raw->children.mask, sp->mask,
                                        sizeof(*sp->slots), ember_u64slot_hash, ember_u64slot_used);
}

void pd_raw_spare_release(struct pd_raw_spare *sp)
{
    free(sp->parent);
    free(sp->key);
    free(sp->samples);
    free(sp->period);
    free(sp->slots);
    *sp = (struct pd_raw_spare){0};
}

void pd_raw_spare_take(struct pd_raw *raw, struct pd_raw_spare *sp)
{
    bool as_planned = sp->nnodes && sp->nnodes == raw->nnodes;
    if (as_planned && sp->parent && sp->key && sp->samples && sp->period) {
        free(raw->parent);
        free(raw->key);
        free(raw->samples);
        free(raw->period);
        raw->parent = sp->parent;
        raw->key = sp->key;
        raw->samples = sp->samples;
        raw->period = sp->period;
        raw->ncap = sp->ncap;
        sp->parent = sp->key = NULL;
        sp->samples = sp->period = NULL;
    }
    if (as_planned && sp->slots) {
        free(raw->children.slots);
        raw->children.slots = sp->slots;
        raw->children.mask = sp->mask;
        sp->slots = NULL;
    }
    pd_raw_spare_release(sp);
}
