/*
 * test_u64map.c - the u64 map (lib/base/u64map.h): lookups on one thread
 * while another adds keys to a table given room first, the way perf.data's
 * builders look the reader's trie up while a merge adds to it
 * (perf_data_raw.c's pd_raw_room). A lookup answers a key's own value or
 * nothing: never the value of a key added to the slot its probe ended on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/u64map.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

enum {
    ROUNDS = 600,
    KEYS = 1500,    /* per round, in a table of 4096 slots: it never grows */
    SLOTS_LOG2 = 12 /* small, so that the reader's probes end where keys land */
};

struct race {
    struct ember_u64map maps[2];
    _Atomic int round;   /* the round being written, -1 at the end */
    _Atomic int reading; /* the round the reader looks up */
    uint64_t wrong;      /* lookups answered with another key's value */
    uint64_t lookups;
};

/* The value key is stored with: its own, so that a wrong answer shows. */
static uint32_t value_of(uint64_t key)
{
    return (uint32_t)(key * 2654435761u) | 1;
}

/* Keys the writer adds (even) and keys it never adds (odd). */
static uint64_t key_of(int round, unsigned i, bool added)
{
    return ((uint64_t)round << 32 | i) * 2 + !added;
}

static void *reader(void *arg)
{
    struct race *r = arg;
    uint64_t x = 88172645463325252u;
    for (int round; (round = atomic_load(&r->round)) >= 0;) {
        const struct ember_u64map *m = &r->maps[round & 1];
        atomic_store(&r->reading, round);
        for (int k = 0; k < 4096 && atomic_load_explicit(&r->round, memory_order_relaxed) == round;
             k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            uint64_t key = key_of(round, (unsigned)(x % KEYS), x >> 63);
            uint32_t v;
            if (ember_u64map_get(m, key, &v) && v != value_of(key))
                r->wrong++;
            r->lookups++;
        }
    }
    return NULL;
}

/* Each round: a fresh table, grown first, that the reader looks up while
 * this thread adds its keys. */
static void test_get_while_put(void **state)
{
    (void)state;
    struct race r = {.round = 0, .reading = -1};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(ember_u64map_init(&r.maps[i]), 0);
        while (r.maps[i].mask + 1 < 1u << SLOTS_LOG2)
            assert_int_equal(ember_table_grow((void **)&r.maps[i].slots, &r.maps[i].mask,
                                              sizeof(*r.maps[i].slots), ember_u64slot_hash,
                                              ember_u64slot_used),
                             0);
    }
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, reader, &r), 0);
    for (int round = 0; round < ROUNDS; round++) {
        struct ember_u64map *m = &r.maps[round & 1];
        while (atomic_load(&r.reading) != round)
            ; /* the reader is on this round's table */
        for (unsigned i = 0; i < KEYS; i++) {
            uint64_t key = key_of(round, i, true);
            assert_int_equal(ember_u64map_put(m, key, value_of(key)), 0);
        }
        struct ember_u64map *next = &r.maps[(round + 1) & 1];
        memset(next->slots, 0, ((size_t)next->mask + 1) * sizeof(*next->slots));
        next->count = 0;
        atomic_store(&r.round, round + 1 < ROUNDS ? round + 1 : -1);
    }
    pthread_join(t, NULL);
    print_message("%llu lookups, %llu answered with another key's value\n",
                  (unsigned long long)r.lookups, (unsigned long long)r.wrong);
    for (int i = 0; i < 2; i++)
        ember_u64map_release(&r.maps[i]);
    assert_true(r.lookups > 0);
    assert_int_equal(r.wrong, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_while_put),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
