/*
 * table.h - growing open-addressing tables of fixed-size slots (linear
 * probing; a slot is free when used() says so, normally all zero bytes).
 * Each table keeps its own lookup, which knows its keys; growth is shared.
 */
#ifndef EMBER_BASE_TABLE_H
#define EMBER_BASE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A zeroed table of n slots (free() it); a large one is aligned to a huge page. Lookups land
 * anywhere in a table, so a large one asks for huge pages: with 4 KiB pages nearly every lookup
 * would also miss the TLB, which costs most under virtualization. */
void *ember_table_calloc(size_t n, size_t size);
/* The same, not zeroed: for threads that each zero their share. */
void *ember_table_alloc(size_t n, size_t size);

/* A new table of nmask + 1 slots (nmask wider than mask) holding every
 * used slot of slots (mask + 1 of them) at hash(slot) & nmask; slots is
 * only read, so other threads may read it meanwhile. NULL: no memory. */
void *ember_table_regrown(const void *slots, uint32_t mask, uint32_t nmask, size_t slot_size,
                          uint64_t (*hash)(const void *slot), bool (*used)(const void *slot));

/* Doubles *slots (mask + 1 slots of slot_size bytes), placing every used
 * slot at hash(slot) & new mask. Returns 0 or -ENOMEM (the table is then
 * unchanged). */
int ember_table_grow(void **slots, uint32_t *mask, size_t slot_size,
                     uint64_t (*hash)(const void *slot), bool (*used)(const void *slot));

#endif
