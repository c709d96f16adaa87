/*
 * callgrind_rec.c - the program behind the callgrind self-cost test
 * (tests/golden/callgrind.py): the call graphs that a proportional
 * expansion gets wrong. Direct recursion that calls a leaf at every level
 * (callgrind names the deeper levels rec'2), mutual recursion (even'2,
 * odd'2), a three-function cycle, callees far below 1/10000 of the total
 * (tiny, strcmp), a function called from all of them (leaf), and a thread
 * (a second root in the call graph).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static volatile int sink;

NOINLINE static int leaf(int x)
{
    int s = 0;
    for (int i = 0; i < x; i++)
        s += i * i;
    return s;
}

NOINLINE static int tiny(int x)
{
    return x + 1;
}

NOINLINE static int rec(int n)
{
    if (n == 0)
        return leaf(200);
    return leaf(20) + rec(n - 1);
}

NOINLINE static int odd(int n);

NOINLINE static int even(int n)
{
    return n == 0 ? leaf(50) : leaf(3) + odd(n - 1);
}

NOINLINE static int odd(int n)
{
    return n == 0 ? leaf(60) : leaf(4) + even(n - 1);
}

NOINLINE static int cycle_b(int n);
NOINLINE static int cycle_c(int n);

NOINLINE static int cycle_a(int n)
{
    return n <= 0 ? leaf(30) : cycle_b(n - 1) + 1;
}

NOINLINE static int cycle_b(int n)
{
    return leaf(2) + cycle_c(n);
}

NOINLINE static int cycle_c(int n)
{
    return (n % 5 == 0 ? tiny(n) : 0) + cycle_a(n - 1);
}

static void *worker(void *arg)
{
    int n = *(int *)arg, t = 0;
    for (int i = 0; i < n; i++)
        t += rec(i % 7) + cycle_a(i % 11);
    sink = t;
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200, t = 0;
    pthread_t th;
    if (pthread_create(&th, NULL, worker, &n) != 0)
        return 1;
    for (int i = 0; i < n; i++) {
        t += rec(10) + even(i % 13) + cycle_a(i % 17);
        if (i % 50 == 0)
            t += tiny(i);
    }
    t += strcmp(argv[0], "x") != 0;
    pthread_join(th, NULL);
    printf("%d\n", t + sink);
    return 0;
}
