/*
 * vec.h - growing arrays.
 */
#ifndef EMBER_BASE_VEC_H
#define EMBER_BASE_VEC_H

#include <stddef.h>

/* Makes *ptr hold at least need elements of elem bytes, growing by half
 * again each time. Returns 0 or -ENOMEM (then *ptr is unchanged). */
int ember_vec_reserve(void *ptr, size_t *cap, size_t need, size_t elem);

/* The room there is answered inline: readers reserve once per record, and
 * the call to grow is rare (cap and need are read twice: no side effects). */
#define EMBER_VEC_RESERVE(ptr, cap, need)                                                          \
    ((need) <= (cap) ? 0 : ember_vec_reserve(&(ptr), &(cap), (need), sizeof(*(ptr))))

#endif
