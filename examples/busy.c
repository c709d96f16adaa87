/*
 * busy.c - a small program with a recognisable profile, for ember's demo:
 * main spends about half its time parsing, a third hashing, and the rest
 * sorting, through a few levels of calls, including recursion.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

__attribute__((noinline)) static uint64_t hash_block(const char *p, size_t n)
{
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++)
        h = mix(h, (unsigned char)p[i]);
    return h;
}

__attribute__((noinline)) static int parse_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : -1;
}

__attribute__((noinline)) static long parse_number(const char *s)
{
    long v = 0;
    for (; *s; s++) {
        int d = parse_digit(*s);
        if (d < 0)
            break;
        v = v * 10 + d;
    }
    return v;
}

__attribute__((noinline)) static void format_number(char *out, unsigned v)
{
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *out++ = tmp[--n];
    *out = '\0';
}

__attribute__((noinline)) static void parse_lines(int rounds)
{
    char line[32];
    for (int r = 0; r < rounds; r++) {
        format_number(line, (unsigned)r * 7919u);
        sink += (uint64_t)parse_number(line);
    }
}

__attribute__((noinline)) static void quicksort(int *a, int lo, int hi)
{
    if (lo >= hi)
        return;
    int pivot = a[(lo + hi) / 2], i = lo, j = hi;
    while (i <= j) {
        while (a[i] < pivot)
            i++;
        while (a[j] > pivot)
            j--;
        if (i <= j) {
            int t = a[i];
            a[i++] = a[j];
            a[j--] = t;
        }
    }
    quicksort(a, lo, j);
    quicksort(a, i, hi);
}

__attribute__((noinline)) static void sort_numbers(int n)
{
    int *a = malloc((size_t)n * sizeof(*a));
    if (!a)
        return;
    for (int i = 0; i < n; i++)
        a[i] = (int)((i * 2654435761u) % 100000);
    quicksort(a, 0, n - 1);
    sink += (uint64_t)a[n / 2];
    free(a);
}

__attribute__((noinline)) static void hash_data(int rounds)
{
    char buf[4096];
    memset(buf, 'x', sizeof(buf));
    for (int r = 0; r < rounds; r++)
        sink += hash_block(buf, sizeof(buf));
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 40;
    for (int i = 0; i < scale; i++) {
        parse_lines(300000);
        hash_data(60);
        sort_numbers(150000);
    }
    printf("%llu\n", (unsigned long long)sink);
    return 0;
}
