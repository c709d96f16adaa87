/*
 * gen_perf.c - writes large, realistic `perf script` output for benchmarks:
 * several processes and threads (comms with spaces), deep call chains from a
 * fixed set of distinct stacks picked with a skewed distribution, thousands
 * of distinct functions (C, C++ with parameter lists, Java, Rust, kernel,
 * unresolved), offsets, and periods. Deterministic for a given seed.
 *
 * Functions are drawn with a skew (a few are hot, most are rare), as in real
 * profiles; --uniform draws them uniformly, the worst case for caches.
 * --folded writes folded stacks (unsorted, repeated) instead, for
 * benchmarking readers of folded input.
 *
 * usage: gen_perf [--uniform] [--folded] MEGABYTES [STACKS] [SEED] > out.txt
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ULL;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static unsigned below(unsigned n)
{
    return (unsigned)(next() % n);
}

enum { NFUNCS = 20000, MAXDEPTH = 96 };

static char *funcs[NFUNCS];
static const char *mods[NFUNCS];

static const char *const words[] = {"parse",  "read",     "write",  "hash",   "sort",     "alloc",
                                    "free",   "lookup",   "insert", "flush",  "poll",     "encode",
                                    "decode", "compress", "render", "layout", "dispatch", "handle"};
static const char *const types[] = {"Buffer", "Table", "Parser", "Session", "Request",
                                    "Cache",  "Index", "Writer", "Node",    "Tree"};

static void make_funcs(void)
{
    char buf[256];
    for (int i = 0; i < NFUNCS; i++) {
        const char *w = words[below(18)], *t = types[below(10)];
        switch (i % 6) {
        case 0:
            snprintf(buf, sizeof(buf), "%s_%s_%d", w, t, i);
            mods[i] = "/usr/bin/server";
            break;
        case 1:
            snprintf(buf, sizeof(buf),
                     "app::%s::%s%d(std::vector<int, std::allocator<int> > const&, char const*)", t,
                     w, i);
            mods[i] = "/usr/lib/libapp.so.3";
            break;
        case 2:
            snprintf(buf, sizeof(buf), "Lorg/example/%s;::%s%d", t, w, i);
            mods[i] = "/tmp/perf-4242.map";
            break;
        case 3:
            snprintf(buf, sizeof(buf), "do_%s_%d", w, i);
            mods[i] = "[kernel.kallsyms]";
            break;
        case 4:
            snprintf(buf, sizeof(buf), "core::%s::%s%d::h%016llx", t, w, i,
                     (unsigned long long)next());
            mods[i] = "/usr/bin/server";
            break;
        default:
            snprintf(buf, sizeof(buf), "[unknown]");
            mods[i] = i % 12 == 5 ? "[unknown]" : "/usr/lib/x86_64-linux-gnu/libc.so.6";
            break;
        }
        funcs[i] = strdup(buf);
    }
}

/* A function index, skewed towards small ones unless uniform. */
static unsigned pick_func(int uniform)
{
    if (uniform)
        return below(NFUNCS);
    uint64_t a = below(NFUNCS), b = below(NFUNCS), c = below(NFUNCS);
    return (unsigned)(a * b / NFUNCS * c / NFUNCS);
}

int main(int argc, char **argv)
{
    int uniform = 0, folded = 0;
    while (argc > 1 && argv[1][0] == '-') {
        if (strcmp(argv[1], "--uniform") == 0)
            uniform = 1;
        else if (strcmp(argv[1], "--folded") == 0)
            folded = 1;
        argv++, argc--;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: gen_perf [--uniform] [--folded] MEGABYTES [STACKS] [SEED]\n");
        return 2;
    }
    uint64_t limit = strtoull(argv[1], NULL, 10) << 20;
    unsigned nstacks = argc > 2 ? (unsigned)atoi(argv[2]) : 8000;
    if (argc > 3)
        rng ^= strtoull(argv[3], NULL, 10) * 0x9E3779B97F4A7C15ULL;
    make_funcs();
    /* the distinct stacks: prefixes shared through a few roots */
    unsigned(*stacks)[MAXDEPTH] = malloc(sizeof(*stacks) * nstacks);
    unsigned *depth = malloc(sizeof(*depth) * nstacks);
    for (unsigned s = 0; s < nstacks; s++) {
        unsigned base = s > 0 ? below(s) : 0;
        unsigned keep = s > 0 ? below(depth[base] + 1) : 0;
        depth[s] = keep + 2 + below(20);
        if (depth[s] > MAXDEPTH)
            depth[s] = MAXDEPTH;
        for (unsigned d = 0; d < depth[s]; d++)
            stacks[s][d] = d < keep ? stacks[base][d] : pick_func(uniform);
    }
    static const char *const comms[] = {"server", "server",      "V8 WorkerThread",
                                        "java",   "kworker/0:1", "io worker 3"};
    static char out[1 << 16];
    setvbuf(stdout, out, _IOFBF, sizeof(out));
    uint64_t written = 0, t = 1000000;
    while (written < limit) {
        /* skewed choice: hot stacks come up often */
        unsigned s = (unsigned)((uint64_t)below(nstacks) * below(nstacks) / nstacks);
        /* each stack belongs to one thread of one process */
        unsigned c = s % 6, tid = 1000 + s % 7 + c * 10;
        t += 1 + below(1000);
        if (folded) {
            int n = printf("%s", comms[c]);
            for (unsigned d = 0; d < depth[s]; d++)
                n += printf(";%s", funcs[stacks[s][d]]);
            written += (uint64_t)n + (uint64_t)printf(" %u\n", 1 + below(5));
            continue;
        }
        int n = printf("%s %u/%u [%03u] %llu.%06llu: %u cpu-clock:\n", comms[c], 1000 + c, tid,
                       below(64), (unsigned long long)(t / 1000000),
                       (unsigned long long)(t % 1000000), 1000000 + below(3) * 1000);
        written += (uint64_t)n;
        for (unsigned d = depth[s]; d-- > 0;) {
            unsigned f = stacks[s][d];
            unsigned long long pc = 0x7f0000000000ULL + f * 0x1000ULL + below(16) * 4;
            if (strcmp(funcs[f], "[unknown]") == 0)
                n = printf("\t%16llx %s (%s)\n", pc, funcs[f], mods[f]);
            else
                n = printf("\t%16llx %s+0x%x (%s)\n", pc, funcs[f], below(4096), mods[f]);
            written += (uint64_t)n;
        }
        written += (uint64_t)printf("\n");
    }
    free(stacks);
    free(depth);
    for (int i = 0; i < NFUNCS; i++)
        free(funcs[i]);
    return 0;
}
