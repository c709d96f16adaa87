/*
 * heap_loop.c - a malloc-bound loop for the heap recorders' cost
 * (bench/run_heap.sh): N malloc + free pairs of varied sizes (16 to 1024
 * bytes, from a fixed linear congruential sequence), LIVE blocks held at
 * any time in a ring, each replaced by the next allocation; all freed at
 * the end. The allocations: exactly N (default 5,000,000), from two sites
 * (the ring's and the first fill's), so a recorder's stack table stays
 * small and its cost is the per-allocation path.
 *
 * usage: heap_loop [N [LIVE]]     (LIVE <= 4096, default 64)
 */
#include <stdlib.h>

#define MAX_LIVE 4096

static void *ring[MAX_LIVE];
static volatile unsigned char sink;

__attribute__((noinline)) static void *take(size_t size)
{
    unsigned char *p = malloc(size);
    if (!p)
        abort();
    p[0] = (unsigned char)size; /* used, so that the pair is not optimised away */
    sink += p[0];
    return p;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 5000000;
    unsigned long live = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
    if (live == 0 || live > MAX_LIVE || n < live)
        return 2;
    unsigned int x = 12345;
    for (unsigned long i = 0; i < live; i++)
        ring[i] = take(16);
    for (unsigned long i = live; i < n; i++) {
        x = x * 1103515245u + 12345u;
        free(ring[i % live]);
        ring[i % live] = take(16 + ((x >> 16) % 1009));
    }
    for (unsigned long i = 0; i < live; i++)
        free(ring[i]);
    return 0;
}
