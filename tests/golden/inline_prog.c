/* A program whose hot loop is inlined three levels deep, for the --inline
 * test: ember must find the same inline chains as addr2line -i. */
#include <stdio.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) unsigned leaf_mix(unsigned x)
{
    return (x ^ (x >> 7)) * 2654435761u;
}

static inline __attribute__((always_inline)) unsigned middle_step(unsigned x, int n)
{
    for (int i = 0; i < n; i++)
        x = leaf_mix(x + (unsigned)i);
    return x;
}

__attribute__((noinline)) unsigned outer_work(unsigned seed, int rounds)
{
    unsigned x = seed;
    for (int r = 0; r < rounds; r++)
        x = middle_step(x, r & 15);
    return x;
}

int main(int argc, char **argv)
{
    printf("%u\n", outer_work(argc > 1 ? (unsigned)atoi(argv[1]) : 1u, 1000));
    return 0;
}
