/*
 * gen_ocaml_events.c - writes a large OCaml 5 runtime_events file (version
 * 1) for measuring ember's reader: DOMAINS rings, each EVENTS events of
 * what an OCaml program's domains write (ring_start or domain_spawn, minor
 * collections with their sub-phases and counters, major slices, user spans
 * and ints, stop-the-world phases, ring_stop or domain_terminate), with
 * OCaml's own write protocol (runtime/runtime_events.c, write_to_ring):
 * padding to the ring's end when a message would straddle it, head moved
 * past the oldest messages when the ring is full. Timestamps are made up:
 * 20 to 2000 ns apart. The rings are as large as needed to hold every
 * event (or 2^WSIZE words when given: then the oldest are overwritten).
 *
 * usage: gen_ocaml_events OUT [EVENTS_PER_DOMAIN] [DOMAINS] [WSIZE]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { NAMES = 8192, NAME_BYTES = 128, RING_HEADER = 80 };
/* runtime message types and ids (OCaml 5.0-5.2 numbering) */
enum { LIFECYCLE = 1, BEGIN = 2, EXIT = 3, COUNTER = 4 };
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
enum { U_INT = 1, U_SPAN_BEGIN = 2, U_SPAN_END = 3 };

struct ring {
    uint64_t *words, *head, *tail, mask, size;
    uint64_t ts, rng;
};

static uint64_t header(unsigned len, int user, unsigned type, unsigned id)
{
    return (uint64_t)len << 54 | (uint64_t)(user ? 1 : 0) << 53 | (uint64_t)type << 49 |
           (uint64_t)id << 36;
}

/* OCaml's write_to_ring: padding, then room made by moving head. */
static void put(struct ring *r, int user, unsigned type, unsigned id, const uint64_t *payload,
                unsigned n)
{
    uint64_t len = 2 + n, tail = *r->tail, head = *r->head;
    uint64_t off = tail & r->mask, to_end = r->size - off, pad = to_end < len ? to_end : 0;
    while (tail + len + pad - head >= r->size)
        head += r->words[head & r->mask] >> 54;
    *r->head = head;
    if (pad) {
        r->words[off] = pad << 54;
        tail += pad;
        off = 0;
    }
    r->rng = r->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    r->ts += 20 + (r->rng >> 33) % 1980;
    r->words[off] = header((unsigned)len, user, type, id);
    r->words[off + 1] = r->ts;
    memcpy(&r->words[off + 2], payload, n * 8);
    *r->tail = tail + len;
}

static void phase(struct ring *r, unsigned id, int begin)
{
    put(r, 0, begin ? BEGIN : EXIT, id, NULL, 0);
}

/* One round of a domain's work: ~20 events. */
static unsigned round_of(struct ring *r, uint64_t i)
{
    uint64_t v;
    put(r, 1, U_SPAN_BEGIN, 0, NULL, 0);
    phase(r, P_STW_LEADER, 1);
    phase(r, P_MINOR, 1);
    phase(r, P_MINOR_LOCAL_ROOTS, 1);
    phase(r, P_MINOR_LOCAL_ROOTS, 0);
    v = 300000 + i % 50000;
    put(r, 0, COUNTER, C_PROMOTED, &v, 1);
    v = 2097136;
    put(r, 0, COUNTER, C_ALLOCATED, &v, 1);
    phase(r, P_MINOR, 0);
    phase(r, P_MINOR_FINALIZED, 1);
    phase(r, P_MINOR_FINALIZED, 0);
    phase(r, P_MINOR_CLEAR, 1);
    phase(r, P_MINOR_CLEAR, 0);
    phase(r, P_STW_LEADER, 0);
    phase(r, P_MAJOR, 1);
    phase(r, P_MAJOR_SLICE, 1);
    phase(r, P_MAJOR_SLICE, 0);
    phase(r, P_MAJOR, 0);
    v = i;
    put(r, 1, U_INT, 1, &v, 1);
    put(r, 1, U_SPAN_END, 0, NULL, 0);
    return 19;
}

static uint64_t words_for(uint64_t events)
{
    return events * 2 + events / 19 * 3 + 64; /* 3 of 19 events carry a word */
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gen_ocaml_events OUT [EVENTS_PER_DOMAIN] [DOMAINS] [WSIZE]\n");
        return 2;
    }
    uint64_t events = argc > 2 ? strtoull(argv[2], NULL, 10) : 10000000;
    unsigned domains = argc > 3 ? (unsigned)atoi(argv[3]) : 3;
    uint64_t size = 64;
    if (argc > 4)
        size = 1ull << atoi(argv[4]);
    else
        while (size < words_for(events))
            size <<= 1;
    if (!domains || domains > 128 || size > (1ull << 32)) {
        fprintf(stderr, "gen_ocaml_events: 1 to 128 domains, rings up to 2^32 words\n");
        return 2;
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
    uint64_t h[8] = {1, domains, RING_HEADER, size * 8, size, 64, data, names};
    memcpy(map, h, sizeof(h));
    strcpy(map + names, "bench.request");
    strcpy(map + names + NAME_BYTES, "bench.items");
    uint64_t written = 0;
    for (unsigned d = 0; d < domains; d++) {
        struct ring r = {(uint64_t *)(void *)(map + data + d * size * 8),
                         (uint64_t *)(void *)(map + 64 + d * RING_HEADER),
                         (uint64_t *)(void *)(map + 64 + d * RING_HEADER + 8),
                         size - 1,
                         size,
                         1000000000ull + d * 777,
                         d + 1};
        uint64_t pid = 4242, n = 1;
        put(&r, 0, LIFECYCLE, d ? DOMAIN_SPAWN : RING_START, &pid, 1);
        for (uint64_t i = 0; n + 19 + 1 <= events; i++)
            n += round_of(&r, i);
        put(&r, 0, LIFECYCLE, d ? DOMAIN_TERMINATE : RING_STOP, d ? &pid : NULL, d ? 1 : 0);
        written += n + 1;
    }
    munmap(map, total);
    close(fd);
    printf("%s: %u domains, %llu events, rings of %llu words\n", argv[1], domains,
           (unsigned long long)written, (unsigned long long)size);
    return 0;
}
