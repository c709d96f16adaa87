/*
 * table.c - growing open-addressing tables (see table.h).
 */
#include "base/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { HUGE_PAGE = 2 << 20 };

void *ember_table_alloc(size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes))
        return NULL;
    if (bytes < HUGE_PAGE)
        return malloc(bytes ? bytes : 1); /* small: the cache holds it anyway */
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, bytes) != 0)
        return NULL;
    madvise(p, bytes, MADV_HUGEPAGE); /* only a hint */
    return p;
}

void *ember_table_calloc(size_t n, size_t size)
{
    void *p = ember_table_alloc(n, size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void *ember_table_regrown(const void *slots, uint32_t mask, uint32_t nmask, size_t slot_size,
                          uint64_t (*hash)(const void *slot), bool (*used)(const void *slot))
{
    char *ns = ember_table_calloc((size_t)nmask + 1, slot_size);
    if (!ns)
        return NULL;
    const char *old = slots;
    for (uint32_t i = 0; i <= mask; i++) {
        const void *s = old + (size_t)i * slot_size;
        if (!used(s))
            continue;
        uint32_t j = (uint32_t)hash(s) & nmask;
        while (used(ns + (size_t)j * slot_size))
            j = (j + 1) & nmask;
        memcpy(ns + (size_t)j * slot_size, s, slot_size);
    }
    return ns;
}

int ember_table_grow(void **slots, uint32_t *mask, size_t slot_size,
                     uint64_t (*hash)(const void *slot), bool (*used)(const void *slot))
{
    uint32_t nmask = *mask * 2 + 1;
    if (nmask <= *mask)
        return -ENOMEM;
    void *ns = ember_table_regrown(*slots, *mask, nmask, slot_size, hash, used);
    if (!ns)
        return -ENOMEM;
    free(*slots);
    *slots = ns;
    *mask = nmask;
    return 0;
}
