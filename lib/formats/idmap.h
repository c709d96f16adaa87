/*
 * idmap.h - a map from 64-bit ids to 32-bit values, for readers whose
 * input names things by number and refers to them later (pprof's location
 * ids, xctrace's id= and ref=). Library-internal.
 */
#ifndef EMBER_FORMATS_IDMAP_H
#define EMBER_FORMATS_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ember_idmap_slot {
    uint64_t key;
    uint32_t value;
    uint32_t used;
};

struct ember_idmap {
    struct ember_idmap_slot *slots;
    uint32_t mask;
    size_t count;
};

/* An all-zero map is empty and valid. */
void ember_idmap_release(struct ember_idmap *m);
bool ember_idmap_get(const struct ember_idmap *m, uint64_t key, uint32_t *value);
/* Sets (or replaces) key's value: 0 or -ENOMEM. */
int ember_idmap_put(struct ember_idmap *m, uint64_t key, uint32_t value);

#endif
