/*
 * arena.c - bump allocator (see arena.h).
 *
 * Blocks double in size up to 1 MiB so that small profiles stay small and
 * large ones make few system calls; a request larger than a block gets a
 * block of its own.
 */
#include "base/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
    struct arena_block *prev;
    size_t size; /* usable bytes in data[] */
    size_t used;
    max_align_t data[];
};

enum { ARENA_MIN_BLOCK = 4096, ARENA_MAX_BLOCK = 1 << 20 };

void ember_arena_init(struct ember_arena *a)
{
    a->head = NULL;
    a->bytes = 0;
}

static struct arena_block *arena_grow(struct ember_arena *a, size_t need)
{
    size_t size = a->head ? a->head->size * 2 : ARENA_MIN_BLOCK;
    if (size > ARENA_MAX_BLOCK)
        size = ARENA_MAX_BLOCK;
    if (size < need)
        size = need;
    struct arena_block *b = malloc(sizeof(*b) + size);
    if (!b)
        return NULL;
    b->prev = a->head;
    b->size = size;
    b->used = 0;
    a->head = b;
    a->bytes += size;
    return b;
}

void *ember_arena_alloc(struct ember_arena *a, size_t size)
{
    size = (size + 7) & ~(size_t)7;
    if (size == 0)
        size = 8;
    struct arena_block *b = a->head;
    if (!b || b->size - b->used < size) {
        b = arena_grow(a, size);
        if (!b)
            return NULL;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    return p;
}

char *ember_arena_strndup(struct ember_arena *a, const char *s, size_t n)
{
    char *p = ember_arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void ember_arena_adopt(struct ember_arena *a, struct ember_arena *from)
{
    struct arena_block *last = from->head;
    if (!last)
        return;
    while (last->prev)
        last = last->prev;
    if (a->head) { /* from's chain goes behind a's head */
        last->prev = a->head->prev;
        a->head->prev = from->head;
    } else {
        a->head = from->head;
    }
    a->bytes += from->bytes;
    ember_arena_init(from);
}

void ember_arena_release(struct ember_arena *a)
{
    struct arena_block *b = a->head;
    while (b) {
        struct arena_block *prev = b->prev;
        free(b);
        b = prev;
    }
    a->head = NULL;
    a->bytes = 0;
}
