/*
 * strmap.h - a map from byte strings to pointers, for small tables (palette
 * colours, per-function attributes). Keys are copied into the map's arena.
 */
#ifndef EMBER_BASE_STRMAP_H
#define EMBER_BASE_STRMAP_H

#include "base/arena.h"

#include <stddef.h>
#include <stdint.h>

struct strmap_slot {
    const char *key;
    size_t len;
    void *value;
};

struct ember_strmap {
    struct strmap_slot *slots;
    uint32_t mask;
    size_t count;
    struct ember_arena arena; /* keys, and whatever values callers put here */
};

int ember_strmap_init(struct ember_strmap *m);
void ember_strmap_release(struct ember_strmap *m);
void *ember_strmap_get(const struct ember_strmap *m, const char *key, size_t len);
/* Sets (or replaces) key's value. */
int ember_strmap_put(struct ember_strmap *m, const char *key, size_t len, void *value);
/* The slots in use sorted by key bytes; free() the array. NULL on OOM. */
struct strmap_slot *ember_strmap_sorted(const struct ember_strmap *m);

#endif
