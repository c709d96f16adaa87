/*
 * test_tree.c - the stack tree's child table and the ways into it: one child
 * at a time, a whole path at once (root first or leaf first), the stack
 * cache with the previous stack's prefix; all must find the same nodes,
 * across the table's growth, and refuse bad parents and frames.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/name_cache.h"
#include "model/profile_impl.h"
#include "model/stack_cache.h"

#include <stdio.h>
#include <stdlib.h>

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static uint32_t below(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static uint32_t *intern_names(struct ember_profile *p, uint32_t n)
{
    uint32_t *ids = malloc(n * sizeof(*ids));
    char name[32];
    for (uint32_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "f%u", i);
        assert_int_equal(ember_profile_intern(p, name, strlen(name), &ids[i]), 0);
    }
    return ids;
}

/* Children added one at a time under random parents: through many
 * doublings of the table every (parent, frame) keeps its node. */
static void test_children_survive_growth(void **state)
{
    (void)state;
    enum { NAMES = 50, ADDS = 300000 };
    struct ember_profile *p = ember_profile_new();
    uint32_t *ids = intern_names(p, NAMES);
    uint32_t *parent = malloc(ADDS * sizeof(*parent)), *frame = malloc(ADDS * sizeof(*frame));
    uint32_t *node = malloc(ADDS * sizeof(*node));
    for (uint32_t i = 0; i < ADDS; i++) {
        parent[i] = below(ember_profile_node_count(p));
        frame[i] = ids[below(NAMES)];
        assert_int_equal(ember_profile_child(p, parent[i], frame[i], &node[i]), 0);
        assert_int_equal(ember_profile_node_parent(p, node[i]), parent[i]);
        assert_int_equal(ember_profile_node_frame(p, node[i]), frame[i]);
    }
    uint32_t count = ember_profile_node_count(p);
    assert_true(count > ADDS / 2); /* most were new: the table grew */
    for (uint32_t i = 0; i < ADDS; i++) {
        uint32_t again;
        assert_int_equal(ember_profile_child(p, parent[i], frame[i], &again), 0);
        assert_int_equal(again, node[i]);
    }
    assert_int_equal(ember_profile_node_count(p), count);
    free(parent);
    free(frame);
    free(node);
    free(ids);
    ember_profile_free(p);
}

/* A path looked up at once finds the nodes one lookup per frame finds, in
 * either direction, for paths that share prefixes and paths that do not. */
static void test_path_is_child_by_child(void **state)
{
    (void)state;
    enum { NAMES = 40, PATHS = 20000, DEPTH = 60 };
    struct ember_profile *p = ember_profile_new(), *q = ember_profile_new();
    uint32_t *pi = intern_names(p, NAMES), *qi = intern_names(q, NAMES);
    uint32_t fr[DEPTH], rev[DEPTH], nodes[DEPTH];
    for (int i = 0; i < PATHS; i++) {
        size_t n = 1 + below(DEPTH);
        for (size_t k = 0; k < n; k++)
            fr[k] = below(i % 3 ? 3 : NAMES); /* few names: shared prefixes */
        uint32_t leaf, one = EMBER_ROOT, back;
        assert_int_equal(ember_profile_child_path(p, EMBER_ROOT, fr, n, 1, nodes, &leaf), 0);
        for (size_t k = 0; k < n; k++) {
            assert_int_equal(ember_profile_child(q, one, qi[fr[k]], &one), 0);
            assert_int_equal(nodes[k], one); /* same names, same order: same ids */
            rev[n - 1 - k] = pi[fr[k]];
        }
        assert_int_equal(leaf, one);
        assert_int_equal(ember_profile_child_path(p, EMBER_ROOT, rev, n, -1, NULL, &back), 0);
        assert_int_equal(back, leaf);
    }
    assert_int_equal(ember_profile_node_count(p), ember_profile_node_count(q));
    uint32_t leaf = 12345;
    assert_int_equal(ember_profile_child_path(p, 7, fr, 0, 1, NULL, &leaf), 0);
    assert_int_equal(leaf, 7);
    free(pi);
    free(qi);
    ember_profile_free(p);
    ember_profile_free(q);
}

/* Bad parents and frames are errors that leave the tree as it was, also
 * in the middle of a path. */
static void test_bad_ids_are_errors(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new();
    uint32_t *ids = intern_names(p, 3), node, leaf;
    assert_int_equal(ember_profile_child(p, EMBER_ROOT, ids[0], &node), 0);
    assert_int_equal(ember_profile_child(p, 99, ids[0], &node), -EINVAL);
    assert_int_equal(ember_profile_child(p, EMBER_ROOT, 99, &node), -EINVAL);
    uint32_t path[3] = {ids[1], 99, ids[2]};
    assert_int_equal(ember_profile_child_path(p, EMBER_ROOT, path, 3, 1, NULL, &leaf), -EINVAL);
    assert_int_equal(ember_profile_child_path(p, 99, path, 1, 1, NULL, &leaf), -EINVAL);
    assert_int_equal(ember_profile_node_count(p), 3); /* root, f0, and f1 before the bad frame */
    free(ids);
    ember_profile_free(p);
}

/* The stack cache (leaf-first stacks, as perf gives them) starts below
 * the previous stack's shared frames: it must land on the nodes a plain
 * walk finds, whatever the previous stack was. */
static void test_stack_cache_prefix(void **state)
{
    (void)state;
    enum { NAMES = 6, STACKS = 30000, DEPTH = 30 };
    struct ember_profile *p = ember_profile_new(), *q = ember_profile_new();
    uint32_t *pi = intern_names(p, NAMES), *qi = intern_names(q, NAMES);
    struct ember_stack_cache c;
    assert_int_equal(ember_stack_cache_init(&c), 0);
    uint32_t fr[DEPTH], prev[DEPTH];
    size_t n = 0;
    for (int i = 0; i < STACKS; i++) {
        /* keep some of the previous stack's outer frames, change the rest */
        size_t keep = n ? below((uint32_t)n + 1) : 0, m = keep + below(DEPTH - keep);
        memcpy(prev, fr, sizeof(fr));
        for (size_t k = 0; k < m; k++) /* fr[m-1] outermost: kept frames move */
            fr[k] = k < m - keep ? pi[below(NAMES)] : prev[k + n - m];
        n = m;
        uint32_t root = pi[i % 2], node, want;
        assert_int_equal(ember_stack_cache_node(&c, p, root, fr, n, &node), 0);
        assert_int_equal(ember_profile_child(q, EMBER_ROOT, qi[i % 2], &want), 0);
        for (size_t k = n; k-- > 0;)
            assert_int_equal(ember_profile_child(q, want, qi[fr[k] - pi[0]], &want), 0);
        assert_int_equal(node, want);
    }
    ember_stack_cache_release(&c);
    free(pi);
    free(qi);
    ember_profile_free(p);
    ember_profile_free(q);
}

/* Two stacks under different roots whose frames differ where the roots
 * do: root 1 over 5,1,3,2 and root 0 over 5,0,3,2 (leaf first: 2,3,1,5 and
 * 2,3,0,5) once hashed the same, and the second got the first's node. */
static void test_stack_cache_roots(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new();
    uint32_t *ids = intern_names(p, 6), a, b;
    struct ember_stack_cache c;
    assert_int_equal(ember_stack_cache_init(&c), 0);
    const uint32_t fa[] = {ids[2], ids[3], ids[1], ids[5]}, fb[] = {ids[2], ids[3], ids[0], ids[5]};
    assert_int_equal(ember_stack_cache_node(&c, p, ids[1], fa, 4, &a), 0);
    assert_int_equal(ember_stack_cache_node(&c, p, ids[0], fb, 4, &b), 0);
    assert_int_not_equal(a, b);
    assert_int_equal(ember_profile_node_frame(p, b), ids[2]);
    assert_int_equal(ember_profile_node_frame(p, ember_profile_node_parent(p, b)), ids[3]);
    ember_stack_cache_release(&c);
    free(ids);
    ember_profile_free(p);
}

/* The name memo keeps a name's first bytes: names alike there, or
 * differing only in length, are still told apart, and every name gets
 * the id the frame table gives it, even when all hashes collide (every
 * other round gives one hash for all). */
static void test_name_cache(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new();
    struct ember_name_cache c;
    assert_int_equal(ember_name_cache_init(&c), 0);
    char name[200];
    memset(name, 'x', sizeof(name));
    for (int round = 0; round < 4; round++)
        for (size_t n = 0; n < sizeof(name); n += 1 + n / 20)
            for (char last = 'a'; last <= 'c'; last++) {
                if (n)
                    name[n - 1] = last;
                uint32_t id, want;
                uint64_t h = round % 2 ? 42 : ember_name_hash(name, n);
                assert_int_equal(ember_name_cache_intern(&c, &p->frames, name, n, h, &id), 0);
                assert_int_equal(ember_profile_intern(p, name, n, &want), 0);
                assert_int_equal(id, want);
                if (n)
                    name[n - 1] = 'x';
            }
    ember_name_cache_release(&c);
    ember_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_children_survive_growth),
        cmocka_unit_test(test_path_is_child_by_child),
        cmocka_unit_test(test_bad_ids_are_errors),
        cmocka_unit_test(test_stack_cache_prefix),
        cmocka_unit_test(test_stack_cache_roots),
        cmocka_unit_test(test_name_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
