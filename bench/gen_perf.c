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
 * --deep N writes exactly N distinct folded stacks, with call chains as
 * deep as the perf mode's (up to 96 frames below a process frame, each a
 * prefix of an earlier stack and 2 to 21 frames of its own), each stack
 * once with a count of 1 to 1000, in the
 * order they were made: each stack shares a prefix with a random earlier
 * one, so consecutive lines rarely share more than their process (the hard
 * case for a reader that reuses the previous line). --after writes the
 * same profile changed, for diffs: 5% of the stacks gone, 10% with another
 * count, and N/20 new stacks. Every choice of a stack is a hash of its
 * index, so BEFORE and AFTER agree on the stacks they share.
 *
 * usage: gen_perf [--uniform] [--folded] MEGABYTES [STACKS] [SEED] > out.txt
 *        gen_perf --deep N [--after] [SEED] > out.folded
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

/* ---- --deep: N distinct stacks ------------------------------------------ */

struct deep_stack {
    uint32_t base; /* the earlier stack whose first keep frames this one shares */
    uint8_t keep;  /* frames taken from base */
    uint8_t depth; /* frames below the process frame */
    uint8_t salt;  /* bumped until the stack differs from every earlier one */
    uint8_t comm;  /* the process: its base's */
};

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t z = a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Frame d of stack s when s does not take it from its base: skewed like
 * pick_func, from hashes instead of the sequential generator. */
static unsigned own_frame(uint64_t seed, uint32_t s, unsigned d, unsigned salt)
{
    uint64_t h = mix(seed ^ ((uint64_t)salt << 56), (uint64_t)s << 8 | d);
    uint64_t a = h % NFUNCS, b = (h >> 20) % NFUNCS, c = (h >> 40) % NFUNCS;
    return (unsigned)(a * b / NFUNCS * c / NFUNCS);
}

/* The frames of stack s, outermost first, into out; returns its depth. */
static unsigned deep_frames(const struct deep_stack *st, uint64_t seed, uint32_t s, unsigned *out)
{
    unsigned depth = st[s].depth, limit = depth;
    for (uint32_t cur = s; limit > 0; cur = st[cur].base) {
        for (unsigned d = st[cur].keep; d < limit; d++)
            out[d] = own_frame(seed, cur, d, st[cur].salt);
        if (st[cur].keep < limit)
            limit = st[cur].keep;
    }
    return depth;
}

/* A hash of the stack's names (every "[unknown]" function is one name). */
static uint64_t frames_hash(const unsigned *f, unsigned n, unsigned comm)
{
    uint64_t h = mix(comm, n);
    for (unsigned i = 0; i < n; i++)
        h = mix(h, strcmp(funcs[f[i]], "[unknown]") == 0 ? NFUNCS : f[i]);
    return h;
}

/* Inserts h into the open-addressed set; false if it was there. */
static int set_insert(uint64_t *set, uint64_t mask, uint64_t h)
{
    h |= 1; /* 0 marks an empty slot */
    for (uint64_t i = h & mask;; i = (i + 1) & mask) {
        if (set[i] == h)
            return 0;
        if (!set[i]) {
            set[i] = h;
            return 1;
        }
    }
}

static int gen_deep(uint32_t n, int after, uint64_t seed)
{
    static const char *const comms[] = {"server", "worker", "java", "kworker/0:1", "io", "db"};
    uint32_t total = after ? n + n / 20 : n;
    struct deep_stack *st = calloc(total ? total : 1, sizeof(*st));
    uint64_t mask = 1;
    while (mask < (uint64_t)total * 2)
        mask <<= 1;
    uint64_t *set = calloc(mask, sizeof(*set));
    if (!st || !set) {
        fprintf(stderr, "gen_perf: out of memory\n");
        return 1;
    }
    mask--;
    static char out[1 << 16];
    setvbuf(stdout, out, _IOFBF, sizeof(out));
    unsigned frames[128];
    for (uint32_t s = 0; s < total; s++) {
        uint64_t h = mix(seed, s);
        struct deep_stack *t = &st[s];
        t->base = s ? (uint32_t)(h % s) : 0;
        /* as the call chains of the perf mode: a prefix of the base, then
         * 2 to 21 frames of its own, at most MAXDEPTH */
        unsigned keep = s ? (unsigned)((h >> 40) % (st[t->base].depth + 1u)) : 0;
        unsigned want = keep + 2 + (unsigned)((h >> 32) % 20);
        t->depth = (uint8_t)(want < MAXDEPTH ? want : MAXDEPTH);
        t->keep = (uint8_t)(keep < t->depth ? keep : t->depth - 1u);
        t->comm = (uint8_t)(s ? st[t->base].comm : 0);
        if (t->keep == 0)
            t->comm = (uint8_t)((h >> 48) % 6);
        unsigned comm = t->comm;
        unsigned depth = deep_frames(st, seed, s, frames);
        while (!set_insert(set, mask, frames_hash(frames, depth, comm))) {
            t->salt++;
            deep_frames(st, seed, s, frames);
        }
        /* the fate of the stack in AFTER: kept, gone, or another count */
        uint64_t fate = mix(seed ^ 0xAF7E5, s);
        unsigned count = 1 + (unsigned)(fate >> 32) % 1000;
        if (after && s < n && fate % 100 < 5)
            continue;
        if (after && s < n && fate % 100 < 15)
            count = 1 + (unsigned)(fate >> 16) % 2000;
        fputs(comms[comm], stdout);
        for (unsigned d = 0; d < depth; d++) {
            putchar(';');
            fputs(funcs[frames[d]], stdout);
        }
        printf(" %u\n", count);
    }
    free(st);
    free(set);
    return 0;
}

int main(int argc, char **argv)
{
    int uniform = 0, folded = 0, after = 0;
    long long deep = -1;
    while (argc > 1 && argv[1][0] == '-') {
        if (strcmp(argv[1], "--uniform") == 0)
            uniform = 1;
        else if (strcmp(argv[1], "--folded") == 0)
            folded = 1;
        else if (strcmp(argv[1], "--after") == 0)
            after = 1;
        else if (strcmp(argv[1], "--deep") == 0 && argc > 2)
            deep = strtoll(argv[2], NULL, 10), argv++, argc--;
        argv++, argc--;
    }
    if (deep >= 0 && deep <= UINT32_MAX / 2) {
        uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
        make_funcs();
        int ret = gen_deep((uint32_t)deep, after, seed);
        for (int i = 0; i < NFUNCS; i++)
            free(funcs[i]);
        return ret;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: gen_perf [--uniform] [--folded] MEGABYTES [STACKS] [SEED]\n"
                        "       gen_perf --deep N [--after] [SEED]\n");
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
