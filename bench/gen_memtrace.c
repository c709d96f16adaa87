/*
 * gen_memtrace.c - writes a valid memtrace .ctf trace of a made-up OCaml
 * program, of any number of events and format version 1, 2 or 3, and prints
 * what it wrote (its truth) in the key: value lines of the corpus's
 * *.expected.txt header, for the bench (10 M events) and for tests of the
 * versions no real trace in the corpus has.
 *
 * usage: gen_memtrace OUT.ctf EVENTS [VERSION [SEED [DOMAINS]]]  (DOMAINS 2: v3 only)
 *
 * Independent of ember's decoder: the encoders (vints, move-to-front
 * location tables, the backtrace cache with predictions, packets of at most
 * 32 KiB) are written from memtrace's format description (memtrace.tsdl,
 * trace.ml), writer side. The program: 60 location codes (the entry code
 * has no location, every 7th has an inlined second one) in 5 files, 200
 * call stacks of depth 2 to 12 (and one empty) and 4 recursive ones of 300 frames (for
 * long prediction runs); allocations of 1-16 words in the minor heap
 * (short events), larger ones in the major heap with several samples, a
 * few external ones; collections of live blocks, mostly young ones, some
 * promotions.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NCODES = 60, NSTACKS = 204, MAXDEPTH = 300, PACKET = 32 << 10, CACHE = 1 << 14 };

static uint64_t rng = 88172645463325252u;
static uint64_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

struct buf {
    uint8_t d[PACKET * 2];
    size_t n;
};
static void put(struct buf *b, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        b->d[b->n++] = (uint8_t)(v >> (8 * i));
}
static void put_vint(struct buf *b, uint64_t v)
{
    if (v < 253)
        put(b, v, 1);
    else if (v <= 0xffff)
        put(b, 253, 1), put(b, v, 2);
    else if (v <= 0x7fffffff)
        put(b, 254, 1), put(b, v, 4);
    else
        put(b, 255, 1), put(b, v, 8);
}
static void put_str(struct buf *b, const char *s)
{
    memcpy(b->d + b->n, s, strlen(s) + 1);
    b->n += strlen(s) + 1;
}

static FILE *out;
static int version;
static uint64_t pid = 4242, t0 = 1700000000000000u, now, packets;
static uint64_t alloc_id, packet_id_begin, packet_t_begin;
static struct buf pk; /* the current packet's events */
/* v3 with DOMAINS 2: packets alternate between domains 0 and 1, each with
 * its own backtrace cache and previous backtrace, domain 1's clock 3 ms
 * behind (times go forward per domain, not in the file). */
static int dom, ndomains = 1;
static uint64_t cache_loc_d[2][CACHE];
static uint16_t cache_pred_d[2][CACHE];
#define cache_loc  cache_loc_d[dom]
#define cache_pred cache_pred_d[dom]
static uint64_t last_time; /* the packet's last event's */

static uint64_t dtime(void)
{
    uint64_t lag = dom ? 3000 : 0;
    return now - (now - t0 < lag ? now - t0 : lag);
}

static void flush_packet(void)
{
    struct buf h = {.n = 0};
    size_t hsize = version >= 3 ? 68 : 66;
    put(&h, 0xc1fc1fc1u, 4), put(&h, (hsize + pk.n) * 8, 4);
    if (!pk.n)
        packet_t_begin = last_time = dtime();
    put(&h, packet_t_begin, 8), put(&h, last_time, 8), put(&h, 0, 4), put(&h, (uint64_t)version, 2);
    put(&h, pid, 8);
    if (version >= 3)
        put(&h, (uint64_t)dom, 2);                    /* domain */
    put(&h, 0xffff, 2), put(&h, 0, 2), put(&h, 0, 8); /* no cache check */
    put(&h, packet_id_begin, 8), put(&h, alloc_id, 8);
    fwrite(h.d, 1, h.n, out);
    fwrite(pk.d, 1, pk.n, out);
    packets++;
    pk.n = 0;
    packet_id_begin = alloc_id;
}

static void event(unsigned code)
{
    if (pk.n > PACKET - 4096)
        flush_packet();
    if (!pk.n)
        packet_t_begin = dtime();
    last_time = dtime();
    put(&pk, (uint64_t)code << 25 | (last_time & 0x1ffffff), 4);
}

/* Locations: the file move-to-front table, each file with its own table of
 * function names, as the writer keeps them (never more than 31 files, so
 * that no entry falls off). */
struct fentry {
    const char *name;
    const char *defs[31];
};
static struct fentry ftab[31];

static unsigned mtf(const char **t, const char *s)
{
    unsigned i = 0;
    while (i < 31 && t[i] && strcmp(t[i], s) != 0)
        i++;
    if (i < 31 && t[i]) {
        const char *x = t[i];
        memmove(t + 1, t, i * sizeof(*t));
        t[0] = x;
        return i;
    }
    memmove(t + 1, t, 30 * sizeof(*t));
    t[0] = s;
    return 31;
}

static unsigned mtf_file(const char *s)
{
    unsigned i = 0;
    while (i < 31 && ftab[i].name && strcmp(ftab[i].name, s) != 0)
        i++;
    struct fentry e = {.name = s};
    unsigned ix = 31;
    if (i < 31 && ftab[i].name)
        e = ftab[i], ix = i;
    else
        i = 30;
    memmove(ftab + 1, ftab, i * sizeof(*ftab));
    ftab[0] = e;
    return ix;
}

static uint64_t code_value(int c)
{
    return 0x55d0a0001000u + (uint64_t)c * 0x24;
}
static unsigned bucket(uint64_t code)
{
    return (unsigned)((code * 0x9e3779b97f4a7c15u) >> 50);
}

static void location(int c)
{
    static const char *const fname[5] = {"gen/a.ml", "gen/b.ml", "gen/c.ml", "gen/d.ml",
                                         "gen/e.ml"};
    static char names[NCODES][2][32];
    int nlocs = c == 0 ? 0 : c % 7 == 0 ? 2 : 1;
    event(1);
    put(&pk, code_value(c), 8), put(&pk, (uint64_t)nlocs, 1);
    for (int l = 0; l < nlocs; l++) {
        const char *file = fname[(c + l) % 5];
        snprintf(names[c][l], sizeof(names[c][l]), "Gen.f%d%s", c + l, l ? "_inl" : "");
        unsigned fi = mtf_file(file);
        unsigned di = mtf(ftab[0].defs, names[c][l]);
        uint64_t line = (uint64_t)(10 + c * 3 + l), sc = (uint64_t)(2 + l), ec = 40;
        uint64_t w = line | sc << 20 | ec << 28 | (uint64_t)fi << 38 | (uint64_t)di << 43;
        put(&pk, w & 0xffffffffu, 4), put(&pk, w >> 32, 2);
        if (fi == 31)
            put_str(&pk, file);
        if (di == 31)
            put_str(&pk, names[c][l]);
    }
}

/* The backtrace cache, writer side: a hit says the bucket's code, then as
 * many of the following frames as the buckets' predicted successors give
 * (at most 255 a codeword); the reader updates cache_pred on every
 * codeword, and so does this. Returns the number of codewords. */
static unsigned encode_backtrace(struct buf *b, const uint64_t *bt, int n, int from)
{
    unsigned ncw = 0, pred = 0;
    for (int i = from; i < n; ncw++) {
        unsigned bk = bucket(bt[i]);
        cache_pred[pred] = (uint16_t)bk;
        if (cache_loc[bk] != bt[i]) {
            put(b, (uint64_t)bk << 2 | 3, 2), put(b, bt[i], 8);
            cache_loc[bk] = bt[i];
            pred = bk, i++;
            continue;
        }
        unsigned k = 0, p = bk;
        while (i + 1 + (int)k < n && k < 255 && cache_loc[cache_pred[p]] == bt[i + 1 + k])
            p = cache_pred[p], k++;
        put(b, (uint64_t)bk << 2 | (k < 2 ? k : 2), 2);
        if (k >= 2)
            put(b, k, 1);
        pred = p, i += 1 + (int)k;
    }
    return ncw;
}

static uint64_t stacks[NSTACKS][MAXDEPTH];
static int depth[NSTACKS];
static uint64_t prev_d[2][MAXDEPTH];
static int prev_n_d[2];
#define prev   prev_d[dom]
#define prev_n prev_n_d[dom]

static void make_stacks(void)
{
    for (int s = 0; s < NSTACKS; s++) {
        stacks[s][0] = code_value(0);
        if (s >= NSTACKS - 4) { /* recursion: one code repeated */
            depth[s] = MAXDEPTH;
            for (int i = 1; i < MAXDEPTH; i++)
                stacks[s][i] = code_value(i == MAXDEPTH - 1 ? 1 + s % 5 : 50 + s % 4);
            continue;
        }
        depth[s] = s == NSTACKS - 5 ? 0 : 2 + (int)(next() % 11); /* one empty */
        for (int i = 1; i < depth[s]; i++)
            stacks[s][i] = code_value(1 + (int)(next() % (NCODES - 1)));
    }
}

struct truth {
    uint64_t events, allocs, samples, words, promotes, collects, src[3][3];
    uint64_t live_allocs, live_samples, live_words;
    unsigned char used[NSTACKS];
};
static struct truth T;

struct live {
    uint64_t id, nsamples, words;
};
static struct live *live;
static size_t nlive, live_cap;

static void alloc(void)
{
    int s = (int)(next() % 100 < 90 ? next() % 20 : next() % NSTACKS);
    uint64_t r = next() % 1000, len, ns = 1, src = 0;
    if (r < 950)
        len = 1 + next() % 16;
    else if (r < 995)
        len = 256 + next() % 2000, ns = 1 + next() % 8, src = 1;
    else
        len = 131072, ns = 100 + next() % 100, src = 2;
    int common = 0;
    while (common < prev_n && common < depth[s] && prev[common] == stacks[s][common])
        common++;
    struct buf bt = {.n = 0};
    unsigned ncw = encode_backtrace(&bt, stacks[s], depth[s], common);
    memcpy(prev, stacks[s], sizeof(uint64_t) * (size_t)depth[s]);
    prev_n = depth[s];
    if (src == 0 && ns == 1 && len <= 16 && ncw <= 255) {
        event(100 + (unsigned)len);
        put_vint(&pk, (uint64_t)common), put(&pk, ncw, 1);
    } else {
        event(2);
        put_vint(&pk, len), put_vint(&pk, ns), put(&pk, src, 1);
        put_vint(&pk, (uint64_t)common), put(&pk, ncw, 2);
    }
    memcpy(pk.d + pk.n, bt.d, bt.n);
    pk.n += bt.n;
    T.allocs++, T.samples += ns, T.words += len, T.used[s] = 1;
    T.src[src][0]++, T.src[src][1] += ns, T.src[src][2] += len;
    if (nlive == live_cap &&
        !(live = realloc(live, (live_cap = live_cap * 2 + 64) * sizeof(*live))))
        exit(2);
    live[nlive++] = (struct live){alloc_id++, ns, len};
}

/* Most blocks die young (a generational heap's premise, and what real traces
 * show): 9 events in 10 name one of the 64 latest live blocks. */
static void object_event(unsigned code)
{
    size_t young = nlive < 64 ? nlive : 64;
    size_t i = next() % 10 ? nlive - 1 - next() % young : next() % nlive;
    event(code);
    put_vint(&pk, alloc_id - 1 - live[i].id);
    if (code == 4)
        live[i] = live[--nlive], T.collects++;
    else
        T.promotes++;
}

static void info_packet(void)
{
    event(0);
    uint64_t rate;
    double r = 1e-4;
    memcpy(&rate, &r, 8);
    put(&pk, rate, 8), put(&pk, 64, 1);
    put_str(&pk, "/bench/gen.exe"), put_str(&pk, "genhost"), put_str(&pk, "s=4M");
    put(&pk, pid, 8);
    if (version >= 2)
        put_str(&pk, "gen_memtrace");
    flush_packet();
}

int main(int argc, char **argv)
{
    if (argc < 3 || !(out = fopen(argv[1], "wb"))) {
        fprintf(stderr, "usage: gen_memtrace OUT.ctf EVENTS [VERSION [SEED [DOMAINS]]]\n");
        return 2;
    }
    uint64_t events = strtoull(argv[2], NULL, 10);
    version = argc > 3 ? atoi(argv[3]) : 2;
    if (argc > 4)
        rng ^= strtoull(argv[4], NULL, 10) * 0x9e3779b97f4a7c15u;
    now = packet_t_begin = last_time = t0;
    ndomains = argc > 5 && version >= 3 ? atoi(argv[5]) == 2 ? 2 : 1 : 1;
    info_packet();
    for (int c = 0; c < NCODES; c++)
        location(c);
    flush_packet();
    make_stacks();
    for (uint64_t e = 0; e < events; e++) {
        now += next() % 4 == 0;
        if (pk.n > PACKET - 4096) { /* between events: a backtrace is per domain */
            flush_packet();
            dom ^= ndomains == 2;
        }
        uint64_t r = next() % 100;
        if (nlive == 0 || r < 50 || (nlive < 1000 && r < 60))
            alloc();
        else
            object_event(r < 55 ? 3 : 4);
    }
    flush_packet();
    fclose(out);
    for (size_t i = 0; i < nlive; i++)
        T.live_allocs++, T.live_samples += live[i].nsamples, T.live_words += live[i].words;
    unsigned bts = 0;
    for (int s = 0; s < NSTACKS; s++) { /* distinct by content: random ones may repeat */
        int same = 0;
        for (int o = 0; o < s && !same; o++)
            same = T.used[o] && depth[o] == depth[s] &&
                   !memcmp(stacks[o], stacks[s], sizeof(uint64_t) * (size_t)depth[s]);
        bts += T.used[s] && !same;
    }
    static const char *const src[3] = {"minor", "major", "external"};
    printf("packets: %" PRIu64 "\nevents: %" PRIu64 "\nalloc_events: %" PRIu64 "\n", packets,
           events, T.allocs);
    for (int i = 0; i < 3; i++)
        printf("alloc_%s: %" PRIu64 " samples=%" PRIu64 " words=%" PRIu64 "\n", src[i], T.src[i][0],
               T.src[i][1], T.src[i][2]);
    printf("promote_events: %" PRIu64 "\ncollect_events: %" PRIu64 "\n", T.promotes, T.collects);
    printf("total_samples: %" PRIu64 "\ntotal_words: %" PRIu64 "\n", T.samples, T.words);
    printf("live_allocs: %" PRIu64 "\nlive_samples: %" PRIu64 "\nlive_words: %" PRIu64 "\n",
           T.live_allocs, T.live_samples, T.live_words);
    printf("distinct_backtraces: %u\n", bts);
    free(live);
    return 0;
}
