/*
 * gen_ocaml_events.c - writes a large OCaml 5 runtime_events file (version
 * 1) for measuring readers: DOMAINS rings, each written as an OCaml
 * program's domain writes its own: a lifecycle start (ring_start on domain
 * 0, domain_spawn on the others), then rounds of minor collections with
 * their sub-phases and counters, major slices, stop-the-world phases,
 * allocation histograms (EV_ALLOC, 20 buckets), and user events of every
 * kind (unit, int, span begin and end, custom payloads padded as OCaml pads
 * them), then a lifecycle end (ring_stop, or domain_terminate).
 *
 * Rings are written with OCaml's own protocol (runtime/runtime_events.c,
 * write_to_ring): a padding message up to the ring's end when a message
 * would straddle it, and head moved past the oldest messages when the ring
 * is full. By default the rings are too small for what is written, so each
 * one wraps and loses its oldest events, as a busy program's rings do; a
 * reader reads what survives (the script counts it with a dump). The
 * domains run at once, each in bursts as OCaml's do: a round's events are
 * 10 to 300 ns apart, rounds 10 to 150 us apart, so that in time order one
 * event in ten or so comes from another domain than the one before, as in
 * the corpus's domains.events (11%). A fixed seed: the same file each time.
 * Numbering of ids: OCaml 5.0 to 5.2.
 *
 * usage: gen_ocaml_events OUT [EVENTS_PER_DOMAIN] [DOMAINS] [WSIZE]
 *   defaults: 8000000 events, 4 domains, rings of 2^24 words (each wraps);
 *   WSIZE 0: rings large enough to keep every event.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { NAMES = 8192, NAME_BYTES = 128, RING_HEADER = 80, ALLOC_BUCKETS = 20 };
/* runtime message types and ids (OCaml 5.0-5.2 numbering) */
enum { LIFECYCLE = 1, BEGIN = 2, EXIT = 3, COUNTER = 4, ALLOC = 5 };
enum { RING_START = 0, RING_STOP = 1, DOMAIN_SPAWN = 6, DOMAIN_TERMINATE = 7 };
enum {
    P_MAJOR = 6,
    P_MINOR = 10,
    P_MINOR_LOCAL_ROOTS = 11,
    P_MINOR_FINALIZED = 12,
    P_MAJOR_SLICE = 24,
    P_MINOR_CLEAR = 26,
    P_STW_LEADER = 32,
};
enum { C_PROMOTED = 4, C_ALLOCATED = 5 };
enum { U_UNIT = 0, U_INT = 1, U_SPAN_BEGIN = 2, U_SPAN_END = 3, U_CUSTOM = 4 };
/* user events: their ids are their slots in the name table */
enum { ID_REQUEST, ID_ITEMS, ID_TICK, ID_NOTE };
static const char *const user_names[] = {"bench.request", "bench.items", "bench.tick",
                                         "bench.note"};

/* A ring being written; words == NULL only counts the words a domain
 * writes (for sizing rings that keep everything). */
struct ring {
    uint64_t *words, *head, *tail, mask, size;
    uint64_t ts, rng, count;
    int idle; /* the next event comes after a pause (between rounds) */
};

static uint64_t header(uint64_t len, int user, unsigned type, unsigned id)
{
    return len << 54 | (uint64_t)(user ? 1 : 0) << 53 | (uint64_t)type << 49 | (uint64_t)id << 36;
}

/* OCaml's write_to_ring: padding, then room made by moving head. */
static void put(struct ring *r, int user, unsigned type, unsigned id, const uint64_t *payload,
                unsigned n)
{
    uint64_t len = 2 + n;
    r->count++;
    if (!r->words) {
        *r->tail += len;
        return;
    }
    uint64_t tail = *r->tail, head = *r->head;
    uint64_t off = tail & r->mask, to_end = r->size - off, pad = to_end < len ? to_end : 0;
    while (tail + len + pad - head >= r->size)
        head += r->words[head & r->mask] >> 54;
    *r->head = head;
    if (pad) {
        r->words[off] = header(pad, 0, 0, 0);
        tail += pad;
        off = 0;
    }
    r->rng = r->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    r->ts += r->idle ? 10000 + (r->rng >> 33) % 140000 : 10 + (r->rng >> 33) % 290;
    r->idle = 0;
    r->words[off] = header(len, user, type, id);
    r->words[off + 1] = r->ts;
    if (n)
        memcpy(&r->words[off + 2], payload, n * 8);
    *r->tail = tail + len;
}

static void phase(struct ring *r, unsigned id, int begin)
{
    put(r, 0, begin ? BEGIN : EXIT, id, NULL, 0);
}

static void counter(struct ring *r, unsigned id, uint64_t v)
{
    put(r, 0, COUNTER, id, &v, 1);
}

/* A custom payload as Runtime_events.User.write pads it: the bytes, then
 * zeros up to the word, the last byte the number of padding bytes. */
static void custom(struct ring *r, uint64_t i)
{
    char text[64];
    uint64_t words[8] = {0};
    int n = snprintf(text, sizeof(text), "request %llu done", (unsigned long long)i);
    unsigned w = (unsigned)(n + 8) / 8;
    memcpy(words, text, (size_t)n);
    ((unsigned char *)words)[w * 8 - 1] = (unsigned char)(w * 8 - 1 - (unsigned)n);
    put(r, 1, U_CUSTOM, ID_NOTE, words, w);
}

static void alloc_histogram(struct ring *r, uint64_t i)
{
    uint64_t b[ALLOC_BUCKETS];
    for (unsigned k = 0; k < ALLOC_BUCKETS; k++)
        b[k] = (i * 7 + k * 13) % 1000;
    put(r, 0, ALLOC, 0, b, ALLOC_BUCKETS);
}

/* One round of a domain's work: a request with a minor collection and a
 * major slice inside; every 4th a custom event, every 16th an allocation
 * histogram. */
static void round_of(struct ring *r, uint64_t i)
{
    r->idle = 1;
    put(r, 1, U_SPAN_BEGIN, ID_REQUEST, NULL, 0);
    phase(r, P_STW_LEADER, 1);
    phase(r, P_MINOR, 1);
    phase(r, P_MINOR_LOCAL_ROOTS, 1);
    phase(r, P_MINOR_LOCAL_ROOTS, 0);
    counter(r, C_PROMOTED, 300000 + i % 50000);
    counter(r, C_ALLOCATED, 2097136);
    phase(r, P_MINOR, 0);
    phase(r, P_MINOR_FINALIZED, 1);
    phase(r, P_MINOR_FINALIZED, 0);
    phase(r, P_MINOR_CLEAR, 1);
    phase(r, P_MINOR_CLEAR, 0);
    phase(r, P_STW_LEADER, 0);
    phase(r, P_MAJOR, 1);
    phase(r, P_MAJOR_SLICE, 1);
    if (i % 16 == 0)
        alloc_histogram(r, i);
    phase(r, P_MAJOR_SLICE, 0);
    phase(r, P_MAJOR, 0);
    uint64_t v = i;
    put(r, 1, U_INT, ID_ITEMS, &v, 1);
    put(r, 1, U_UNIT, ID_TICK, NULL, 0);
    if (i % 4 == 0)
        custom(r, i);
    put(r, 1, U_SPAN_END, ID_REQUEST, NULL, 0);
}

/* A domain's whole life: about `events` events. */
static void domain(struct ring *r, unsigned d, uint64_t events)
{
    uint64_t pid = 4242;
    put(r, 0, LIFECYCLE, d ? DOMAIN_SPAWN : RING_START, &pid, 1);
    for (uint64_t i = 0; r->count + 24 < events; i++)
        round_of(r, i);
    put(r, 0, LIFECYCLE, d ? DOMAIN_TERMINATE : RING_STOP, d ? &pid : NULL, d ? 1 : 0);
}

static int usage(void)
{
    fprintf(stderr, "usage: gen_ocaml_events OUT [EVENTS_PER_DOMAIN] [DOMAINS] [WSIZE]\n"
                    "  (1 to 128 domains, WSIZE 6 to 32, 0: rings that keep every event)\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 5)
        return usage();
    uint64_t events = argc > 2 ? strtoull(argv[2], NULL, 10) : 8000000;
    long domains = argc > 3 ? atol(argv[3]) : 4, wsize = argc > 4 ? atol(argv[4]) : 24;
    if (!events || domains < 1 || domains > 128 || (wsize && (wsize < 6 || wsize > 32)))
        return usage();
    uint64_t size = 1ull << wsize;
    if (!wsize) { /* large enough for the busiest domain, padding included */
        uint64_t most = 0;
        for (long d = 0; d < domains; d++) {
            uint64_t head = 0, tail = 0;
            struct ring c = {.head = &head, .tail = &tail};
            domain(&c, (unsigned)d, events);
            most = tail > most ? tail : most;
        }
        for (size = 64; size < most + most / 8 + 1024;)
            size <<= 1;
        if (size > 1ull << 32) {
            fprintf(stderr, "gen_ocaml_events: rings would be over 2^32 words\n");
            return 2;
        }
    }
    uint64_t data = 64 + (uint64_t)domains * RING_HEADER;
    uint64_t names = data + (uint64_t)domains * size * 8, total = names + NAMES * NAME_BYTES;
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)total) < 0) {
        fprintf(stderr, "gen_ocaml_events: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    char *map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        fprintf(stderr, "gen_ocaml_events: cannot map %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    uint64_t h[8] = {1, (uint64_t)domains, RING_HEADER, size * 8, size, 64, data, names};
    memcpy(map, h, sizeof(h));
    for (unsigned i = 0; i < sizeof(user_names) / sizeof(user_names[0]); i++)
        strcpy(map + names + i * NAME_BYTES, user_names[i]);
    uint64_t written = 0, lost = 0;
    for (long d = 0; d < domains; d++) {
        struct ring r = {.words = (uint64_t *)(void *)(map + data + (uint64_t)d * size * 8),
                         .head = (uint64_t *)(void *)(map + 64 + d * RING_HEADER),
                         .tail = (uint64_t *)(void *)(map + 64 + d * RING_HEADER + 8),
                         .mask = size - 1,
                         .size = size,
                         .ts = 1000000000ull + (uint64_t)d * 777,
                         .rng = (uint64_t)d + 1};
        domain(&r, (unsigned)d, events);
        written += r.count;
        lost += *r.head;
    }
    if (munmap(map, total) < 0 || close(fd) < 0) {
        fprintf(stderr, "gen_ocaml_events: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    printf("%s: %ld domains, %llu events written, rings of %llu words, %llu words overwritten\n",
           argv[1], domains, (unsigned long long)written, (unsigned long long)size,
           (unsigned long long)lost);
    return 0;
}
