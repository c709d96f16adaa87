/*
 * vec.c - growing arrays (see vec.h).
 */
#include "base/vec.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int ember_vec_reserve(void *ptr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap + *cap / 2 : 16;
    if (ncap < need)
        ncap = need;
    if (ncap > SIZE_MAX / elem)
        return -ENOMEM;
    void *old;
    memcpy(&old, ptr, sizeof(old));
    void *n = realloc(old, ncap * elem);
    if (!n)
        return -ENOMEM;
    memcpy(ptr, &n, sizeof(n));
    *cap = ncap;
    return 0;
}
