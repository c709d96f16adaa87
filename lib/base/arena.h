/*
 * arena.h - bump allocation for data that lives and dies together.
 *
 * A profile's names, and every other object whose lifetime is "until the
 * profile is freed", come from one arena so that freeing is one call.
 * Invariants: every pointer returned stays valid and unmoved until
 * ember_arena_release(); allocations are 8-byte aligned.
 */
#ifndef EMBER_BASE_ARENA_H
#define EMBER_BASE_ARENA_H

#include <stddef.h>

struct arena_block;

struct ember_arena {
    struct arena_block *head; /* block being filled; older blocks chain behind */
    size_t bytes;             /* total bytes reserved from the system */
};

void ember_arena_init(struct ember_arena *a);
/* NULL when memory is exhausted. */
void *ember_arena_alloc(struct ember_arena *a, size_t size);
/* A NUL-terminated copy of n bytes of s; NULL when memory is exhausted. */
char *ember_arena_strndup(struct ember_arena *a, const char *s, size_t n);
/* from's blocks made a's (a goes on filling its own): from is left empty. */
void ember_arena_adopt(struct ember_arena *a, struct ember_arena *from);
void ember_arena_release(struct ember_arena *a);

#endif
