/*
 * report_trie.h - what the text reports compute on the stack trie
 * (library-internal; report_trie.c): each node's inclusive weight, its
 * children, and whether its function occurs above it on its path (only
 * the outer occurrence counts towards the function's total, so recursion
 * is not counted twice); and the per-function sums the tables sort.
 */
#ifndef EMBER_WRITE_REPORT_TRIE_H
#define EMBER_WRITE_REPORT_TRIE_H

#include "ember/model.h"

#include <stdbool.h>
#include <stdint.h>

struct ember_report_trie {
    const struct ember_profile *p;
    unsigned m;
    int64_t *incl;   /* inclusive weight, by node */
    uint32_t *first; /* children of n: kids[first[n] .. first[n + 1]) */
    uint32_t *kids;
    bool *outer; /* the node's function is not on its path above it */
    int64_t total;
    /* a second value's inclusive weights (ember_report_trie_second), for
     * a memory profile's objects beside its bytes; NULL: none */
    int64_t *incl2;
    unsigned m2;
    int64_t total2;
};

/* The trie of p for metric (differential profiles: 0 before, 1 after;
 * else the selected value). Release it even on an error. */
int ember_report_trie_build(struct ember_report_trie *t, const struct ember_profile *p,
                            unsigned metric);
void ember_report_trie_release(struct ember_report_trie *t);
/* Adds value m2's inclusive weights (incl2, total2). */
int ember_report_trie_second(struct ember_report_trie *t, unsigned m2);

/* A function's weights, summed over its nodes. */
struct frame_stat {
    uint32_t frame;
    int64_t self, total;
    int64_t self2, total2; /* the trie's second value, if any */
};

/* qsort orders: heaviest self (then total, then frame) first; heaviest
 * total first. */
int ember_report_by_self(const void *a, const void *b);
int ember_report_by_total(const void *a, const void *b);

#endif
