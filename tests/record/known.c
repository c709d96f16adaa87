/*
 * known.c - a program with known answers for ember record: main calls f60,
 * f30 and f10 in 60/30/10 proportions (by loop count, each call the same
 * work), and each of them calls leaf, which does all the work. Built with
 * -O2 -fno-omit-frame-pointer, leaf sets up no frame (GCC's leaf functions
 * do not): a frame-pointer walk from inside it skips its caller, so perf -g
 * gives everything to main. Exits with 7, for the exit status test.
 *
 * usage: known [ITERATIONS [WORK]]
 */
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long leaf(unsigned long n)
{
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++)
        s += (i * i) ^ (s >> 3);
    return s;
}

/* Not tail calls: each adds after the call, so its return address is real. */
__attribute__((noinline)) void f60(unsigned long n)
{
    sink += leaf(n);
}

__attribute__((noinline)) void f30(unsigned long n)
{
    sink += leaf(n);
}

__attribute__((noinline)) void f10(unsigned long n)
{
    sink += leaf(n);
}

int main(int argc, char **argv)
{
    unsigned long iterations = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
    unsigned long work = argc > 2 ? strtoul(argv[2], NULL, 10) : 200000;
    for (unsigned long i = 0; i < iterations; i++) {
        unsigned long r = i % 10;
        if (r < 6)
            f60(work);
        else if (r < 9)
            f30(work);
        else
            f10(work);
    }
    return 7;
}
