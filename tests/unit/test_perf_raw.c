/*
 * test_perf_raw.c - perf_data_raw.c's overlays: random stacks (roots of a
 * few threads and commands, frames in a few maps) built by one trie in
 * sample order, and again in batches cut into pieces of consecutive
 * samples, each piece built in one of three overlays on the reader's trie
 * (each overlay's pieces in increasing order, as the threads take them),
 * the pieces merged in order and the overlays emptied after each batch.
 * Both tries must number maps, frames, roots and nodes alike and give
 * each sample the same node. Each world has its own maps: the reader's
 * trie keeps its numbers in them (pd_map.ref), which an overlay reads.
 * Given room for all its overlays made first (pd_raw_room, as a merge
 * behind is), a batch's merge moves none of the trie's tables or arrays:
 * the threads that read them meanwhile find them where they were.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "read/perf/perf_data_build.h"

#include <stdlib.h>
#include "unit_random.h"

enum { SAMPLES = 3000, BATCH = 200, OVERLAYS = 3, MAPS = 4, DEPTH = 7 };

struct sample {
    uint32_t attr, pid, tid;
    const char *comm;
    size_t depth;
    uint32_t map[DEPTH]; /* a map's index, MAPS: none */
    uint64_t ip[DEPTH];
};

static void make_samples(struct sample *s, uint64_t *seed)
{
    static const char *const comm[] = {"alpha", "beta", "a-much-longer-command-name"};
    for (size_t i = 0; i < SAMPLES; i++) {
        s[i].attr = (uint32_t)(next_random(seed) % 2);
        s[i].pid = 100 + (uint32_t)(next_random(seed) % 3);
        s[i].tid = s[i].pid + (uint32_t)(next_random(seed) % 2);
        s[i].comm = comm[next_random(seed) % 3];
        s[i].depth = 1 + next_random(seed) % DEPTH;
        for (size_t d = 0; d < s[i].depth; d++) {
            s[i].map[d] = (uint32_t)(next_random(seed) % (MAPS + 1));
            s[i].ip[d] = 0x1000 * (d + 1) + next_random(seed) % 40; /* past a table's first size */
        }
    }
}

/* Sample i's stack in raw (an overlay or the reader's trie). */
static uint32_t build(struct pd_raw *raw, struct pd_map *maps, const struct sample *s)
{
    uint32_t root, node, frame, ref;
    assert_int_equal(pd_raw_root(raw, s->attr, s->pid, s->tid, s->comm, strlen(s->comm), &root), 0);
    node = pd_raw_root_at(raw, root)->node;
    for (size_t d = 0; d < s->depth; d++) {
        ref = 0;
        if (s->map[d] < MAPS)
            assert_int_equal(pd_raw_mapref(raw, &maps[s->map[d]], &ref), 0);
        assert_int_equal(pd_raw_frame(raw, ref, s->ip[d], &frame), 0);
        assert_int_equal(pd_raw_child(raw, node, frame, &node), 0);
    }
    return node;
}

static void init_maps(struct pd_map *maps)
{
    for (uint32_t m = 0; m < MAPS; m++)
        maps[m] = (struct pd_map){.start = 0x1000 * m, .end = 0x1000 * (m + 1), .dso = m % 2};
}

/* Where the trie's tables and arrays are. */
struct where {
    const void *fslots, *children, *parent, *key, *samples, *period, *frames;
};

static struct where where_of(const struct pd_raw *raw)
{
    return (struct where){raw->fslots,  raw->children.slots, raw->parent, raw->key,
                          raw->samples, raw->period,         raw->frames};
}

/* Room in dst for all the overlays made, before their merge. */
static bool with_room;

static struct where give_room(struct pd_raw *dst, const struct pd_raw *ov)
{
    size_t frames = 0, nodes = 0;
    for (unsigned o = 0; o < OVERLAYS; o++) {
        frames += ov[o].nframes;
        nodes += ov[o].nnodes;
    }
    assert_int_equal(pd_raw_room(dst, frames, nodes), 0);
    return where_of(dst);
}

/* A batch [from, to): pieces of 1 to 40 samples, each given to a random
 * overlay, merged in order. */
static void run_batch(struct pd_raw *dst, struct pd_raw *ov, struct pd_raw_merge *m,
                      struct pd_map *maps, const struct sample *s, size_t from, size_t to,
                      uint32_t *node, uint64_t *seed)
{
    struct {
        size_t from, to;
        unsigned ov;
        struct pd_raw_count n;
    } piece[BATCH];
    size_t np = 0;
    for (size_t i = from; i < to; np++) {
        size_t len = 1 + next_random(seed) % 40;
        piece[np].from = i;
        piece[np].to = i + len < to ? i + len : to;
        piece[np].ov = (unsigned)(next_random(seed) % OVERLAYS);
        i = piece[np].to;
    }
    for (size_t k = 0; k < np; k++) { /* each overlay's pieces in increasing order */
        struct pd_raw *o = &ov[piece[k].ov];
        for (size_t i = piece[k].from; i < piece[k].to; i++)
            node[i] = build(o, maps, &s[i]);
        piece[k].n = pd_raw_count(o);
    }
    struct where room = with_room ? give_room(dst, ov) : where_of(dst);
    for (size_t k = 0; k < np; k++) {
        struct pd_raw_merge *mk = &m[piece[k].ov];
        assert_int_equal(pd_raw_merge(dst, &ov[piece[k].ov], mk, piece[k].n), 0);
        for (size_t i = piece[k].from; i < piece[k].to; i++)
            node[i] = pd_raw_merged(mk, node[i]);
    }
    struct where now = where_of(dst);
    if (with_room)
        assert_memory_equal(&room, &now, sizeof(room));
    for (unsigned o = 0; o < OVERLAYS; o++) {
        assert_int_equal(pd_raw_reset(&ov[o]), 0);
        pd_raw_merge_reset(&m[o]);
    }
}

static void assert_same(const struct pd_raw *a, const struct pd_raw *b)
{
    assert_int_equal(a->nnodes, b->nnodes);
    assert_int_equal(a->nframes, b->nframes);
    assert_int_equal(a->nmaprefs, b->nmaprefs);
    assert_int_equal(a->nroots, b->nroots);
    assert_memory_equal(a->parent, b->parent, a->nnodes * sizeof(*a->parent));
    assert_memory_equal(a->key, b->key, a->nnodes * sizeof(*a->key));
    for (size_t i = 0; i < a->nframes; i++) {
        assert_int_equal(a->frames[i].ip, b->frames[i].ip);
        assert_int_equal(a->frames[i].mapref, b->frames[i].mapref);
    }
    for (size_t i = 1; i <= a->nmaprefs; i++)
        assert_int_equal(a->maprefs[i].start, b->maprefs[i].start);
    for (size_t i = 0; i < a->nroots; i++) {
        assert_int_equal(a->roots[i].tid, b->roots[i].tid);
        assert_int_equal(a->roots[i].attr, b->roots[i].attr);
        assert_int_equal(a->roots[i].node, b->roots[i].node);
        assert_string_equal(a->roots[i].comm, b->roots[i].comm);
    }
}

static void merged_in_order(bool room)
{
    with_room = room;
    uint64_t seed = 0x5eed;
    struct sample *s = malloc(SAMPLES * sizeof(*s));
    uint32_t *want = malloc(SAMPLES * sizeof(*want)), *got = malloc(SAMPLES * sizeof(*got));
    struct pd_map one_maps[MAPS], maps[MAPS];
    struct pd_raw one, dst, ov[OVERLAYS];
    struct pd_raw_merge m[OVERLAYS] = {0};
    make_samples(s, &seed);
    init_maps(one_maps);
    init_maps(maps);
    assert_int_equal(pd_raw_init(&one, NULL, NULL), 0);
    assert_int_equal(pd_raw_init(&dst, NULL, NULL), 0);
    for (unsigned o = 0; o < OVERLAYS; o++)
        assert_int_equal(pd_raw_init(&ov[o], NULL, &dst), 0);
    for (size_t i = 0; i < SAMPLES; i++)
        want[i] = build(&one, one_maps, &s[i]);
    for (size_t from = 0; from < SAMPLES; from += BATCH)
        run_batch(&dst, ov, m, maps, s, from, from + BATCH < SAMPLES ? from + BATCH : SAMPLES, got,
                  &seed);
    assert_same(&one, &dst);
    assert_memory_equal(want, got, SAMPLES * sizeof(*want));
    for (unsigned o = 0; o < OVERLAYS; o++) {
        pd_raw_release(&ov[o]);
        pd_raw_merge_release(&m[o]);
    }
    pd_raw_release(&dst);
    pd_raw_release(&one);
    free(s);
    free(want);
    free(got);
}

static void test_overlays_merged_in_order(void **state)
{
    (void)state;
    merged_in_order(false);
}

static void test_room_moves_nothing(void **state)
{
    (void)state;
    merged_in_order(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overlays_merged_in_order),
        cmocka_unit_test(test_room_moves_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
