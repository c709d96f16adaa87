/*
 * ranges.h - address ranges searched by bisection (library-internal): which
 * range, among many, holds an address, the innermost when they nest.
 *
 * Filled, then finished (sorted) once; a lookup is a binary search, never
 * a scan per address. Used for ELF symbols and for DWARF's functions.
 */
#ifndef EMBER_SYMBOL_RANGES_H
#define EMBER_SYMBOL_RANGES_H

#include <stddef.h>
#include <stdint.h>

struct ember_ranges {
    struct ember_range *all; /* as added, until finished */
    size_t n, cap;
    uint64_t *starts, *ends, *maxend, *values; /* finished: by start */
    size_t count;
};

void ember_ranges_init(struct ember_ranges *r);
void ember_ranges_release(struct ember_ranges *r);

/* Adds [lo, hi) with its value; empty ranges are ignored. Where several
 * start at one address, the first added is kept. 0 or -ENOMEM. */
int ember_ranges_add(struct ember_ranges *r, uint64_t lo, uint64_t hi, uint64_t value);

/* Sorts; nothing may be added after. 0 or -ENOMEM. */
int ember_ranges_finish(struct ember_ranges *r);

/* The value and start of the range holding addr that starts last:
 * 0, or -ENOENT. */
int ember_ranges_find(const struct ember_ranges *r, uint64_t addr, uint64_t *value,
                      uint64_t *start);

#endif
