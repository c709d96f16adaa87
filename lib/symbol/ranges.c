/*
 * ranges.c - address ranges searched by bisection (see ranges.h).
 *
 * Invariants once finished: starts[] is strictly increasing (one range per
 * start, the first added), ends[i] > starts[i], and maxend[i] is the
 * largest of ends[0..i], so that a lookup bisects to the last start at or
 * below the address and walks back only over ranges that still reach it.
 */
#include "symbol/ranges.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

struct ember_range {
    uint64_t lo, hi, value;
    size_t order;
};

void ember_ranges_init(struct ember_ranges *r)
{
    *r = (struct ember_ranges){0};
}

void ember_ranges_release(struct ember_ranges *r)
{
    free(r->all);
    free(r->starts);
    free(r->ends);
    free(r->maxend);
    free(r->values);
    ember_ranges_init(r);
}

int ember_ranges_add(struct ember_ranges *r, uint64_t lo, uint64_t hi, uint64_t value)
{
    if (hi <= lo)
        return 0;
    if (EMBER_VEC_RESERVE(r->all, r->cap, r->n + 1) < 0)
        return -ENOMEM;
    r->all[r->n] = (struct ember_range){lo, hi, value, r->n};
    r->n++;
    return 0;
}

static int by_start(const void *va, const void *vb)
{
    const struct ember_range *a = va, *b = vb;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

int ember_ranges_finish(struct ember_ranges *r)
{
    size_t m = r->n ? r->n : 1;
    r->starts = malloc(m * sizeof(*r->starts));
    r->ends = malloc(m * sizeof(*r->ends));
    r->maxend = malloc(m * sizeof(*r->maxend));
    r->values = malloc(m * sizeof(*r->values));
    if (!r->starts || !r->ends || !r->maxend || !r->values)
        return -ENOMEM;
    if (r->n)
        qsort(r->all, r->n, sizeof(*r->all), by_start);
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct ember_range *a = &r->all[i];
        if (k && r->starts[k - 1] == a->lo)
            continue;
        r->starts[k] = a->lo;
        r->ends[k] = a->hi;
        r->values[k] = a->value;
        r->maxend[k] = k && r->maxend[k - 1] > a->hi ? r->maxend[k - 1] : a->hi;
        k++;
    }
    r->count = k;
    free(r->all);
    r->all = NULL;
    r->n = r->cap = 0;
    return 0;
}

int ember_ranges_find(const struct ember_ranges *r, uint64_t addr, uint64_t *value, uint64_t *start)
{
    size_t lo = 0, hi = r->count; /* the first start above addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->starts[mid] <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0 && r->maxend[i] > addr;) {
        if (addr < r->ends[i]) {
            *value = r->values[i];
            *start = r->starts[i];
            return 0;
        }
    }
    return -ENOENT;
}
