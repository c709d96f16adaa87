/*
 * hot.c - a program whose time goes to a few distinct hot functions, for
 * comparing ember record with perf record (against_perf.py): each round
 * main calls mix (4 units of work), scan (3), walk (2, through a recursion
 * 8 deep) and fold (1), so their self shares are about 40/30/20/10. Every
 * function does its own work, in its own loop, and keeps a frame (built
 * with -fno-omit-frame-pointer, and each calls seed first): perf's frame-pointer
 * walk is right on it, so the two tools can only differ by how they sample
 * and name, not by how they unwind.
 *
 * usage: hot [ROUNDS [WORK]]
 */
#include <stdlib.h>

static volatile unsigned long sink;

/* Called by each hot function before its loop: a call makes the caller
 * set up its frame, and before the loop (GCC gives functions that call
 * nothing no frame, even with -fno-omit-frame-pointer, and its shrink-
 * wrapping sets the frame up only on the way to a call). noipa: no call
 * is hoisted out of main's loop, merged or inlined, whatever GCC proves. */
__attribute__((noipa)) unsigned long seed(unsigned long n)
{
    return n ^ 0x9e3779b97f4a7c15ul;
}

__attribute__((noipa)) unsigned long mix(unsigned long n)
{
    unsigned long h = seed(n);
    for (unsigned long i = 0; i < 4 * n; i++)
        h = (h ^ i) * 0x100000001b3ul;
    return h;
}

__attribute__((noipa)) unsigned long scan(unsigned long n)
{
    unsigned long s = seed(n);
    for (unsigned long i = 0; i < 3 * n; i++)
        s += (i * i) ^ (s >> 3);
    return s;
}

/* Each level does its share of the work, then the one below: a recursion
 * whose frames are all on the frame-pointer chain. */
__attribute__((noipa)) unsigned long walk(unsigned long n, int depth)
{
    unsigned long s = seed((unsigned long)depth);
    for (unsigned long i = 0; i < 2 * n / 8; i++)
        s = s * 31 + (i ^ (s >> 7));
    if (depth > 1)
        s += walk(n, depth - 1);
    return s;
}

__attribute__((noipa)) unsigned long fold(unsigned long n)
{
    unsigned long s = seed(n);
    for (unsigned long i = 0; i < n; i++)
        s = (s << 1 | s >> 63) ^ i;
    return s;
}

int main(int argc, char **argv)
{
    unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 100;
    unsigned long work = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000000;
    for (unsigned long r = 0; r < rounds; r++) {
        sink += mix(work);
        sink += scan(work);
        sink += walk(work, 8);
        sink += fold(work);
    }
    return 0;
}
