/*
 * callgrind_prog.c - a small program for the callgrind reader's test: a
 * function called from two places (leaf), one that allocates (other), a
 * recursive one (fib, which callgrind names fib'2 below its first level).
 */
#include <stdio.h>
#include <stdlib.h>

static int leaf(int x)
{
    int s = 0;
    for (int i = 0; i < x; i++)
        s += i * i;
    return s;
}

static int mid(int x)
{
    return leaf(x) + leaf(x / 2);
}

static int fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static int other(int x)
{
    int *p = malloc(sizeof(int) * 100);
    int s = 0;
    if (!p)
        return 0;
    for (int i = 0; i < 100; i++)
        p[i] = i * x;
    for (int i = 0; i < 100; i++)
        s += p[i];
    free(p);
    return s + leaf(x);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000, t = 0;
    for (int i = 0; i < n; i++) {
        t += mid(i % 100);
        t += other(i % 50);
    }
    t += fib(15);
    printf("%d\n", t);
    return 0;
}
