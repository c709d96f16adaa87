/*
 * test_profile.c - the profile model (lib/model/profile.c): interning, the
 * stack tree's child table and the ways into it (one child at a time, a
 * whole path at once, root first or leaf first: the same nodes, across the
 * table's growth; bad parents and frames refused), exact decimal weights,
 * merging, a profile made differential after its stacks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ember/transform.h"
#include "model/profile_impl.h"
#include "unit_profile.h"

#include <errno.h>

static void test_intern_is_stable(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new();
    uint32_t a, b, c;
    assert_int_equal(ember_profile_intern(p, "main", 4, &a), 0);
    assert_int_equal(ember_profile_intern(p, "foo", 3, &b), 0);
    assert_int_equal(ember_profile_intern(p, "main", 4, &c), 0);
    assert_int_equal(a, c);
    assert_int_not_equal(a, b);
    /* many names force rehashing; ids stay valid */
    char name[32];
    for (int i = 0; i < 100000; i++) {
        uint32_t id;
        snprintf(name, sizeof(name), "f%d", i);
        assert_int_equal(ember_profile_intern(p, name, strlen(name), &id), 0);
    }
    size_t len;
    assert_string_equal(ember_profile_frame_name(p, a, &len), "main");
    assert_int_equal(ember_profile_frame_count(p), 100002);
    ember_profile_free(p);
}

static void test_same_stack_same_node(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new();
    uint32_t n1 = add_stack(p, "a;b;c", 1);
    uint32_t n2 = add_stack(p, "a;b;c", 2);
    uint32_t n3 = add_stack(p, "a;b", 4);
    assert_int_equal(n1, n2);
    assert_int_not_equal(n1, n3);
    assert_int_equal(ember_profile_self(p, n1, 0), 3);
    assert_int_equal(ember_profile_total(p, 0), 7);
    assert_int_equal(ember_profile_node_count(p), 4); /* root, a, b, c */
    ember_profile_free(p);
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

static void test_decimals_are_exact(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new();
    struct text t;
    uint32_t n = add_stack(p, "a", 1);
    assert_int_equal(ember_profile_add_decimal(p, n, 0, (struct ember_decimal){25, 1}), 0);
    assert_int_equal(ember_profile_add_decimal(p, n, 0, (struct ember_decimal){1, 1}), 0);
    assert_int_equal(ember_profile_add_decimal(p, n, 0, (struct ember_decimal){2, 1}), 0);
    assert_string_equal(folded(p, &t), "a 3.8\n");
    assert_int_equal(ember_profile_add_decimal(p, n, 0, (struct ember_decimal){2, 1}), 0);
    assert_string_equal(folded(p, &t), "a 4\n");
    ember_profile_free(p);
}

static void test_merge(void **state)
{
    (void)state;
    struct ember_profile *a = ember_profile_new(), *b = ember_profile_new();
    struct text t;
    add_stack(a, "x;y", 1);
    add_stack(b, "x;y", 2);
    add_stack(b, "x;z", 3);
    uint32_t n = add_stack(b, "w", 0);
    assert_int_equal(ember_profile_add_decimal(b, n, 0, (struct ember_decimal){5, 1}), 0);
    assert_int_equal(ember_profile_merge(a, b), 0);
    assert_string_equal(folded(a, &t), "w 0.5\nx;y 3\nx;z 3\n");
    ember_profile_free(a);
    ember_profile_free(b);
}

static void test_overflow_is_an_error(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new();
    uint32_t n = add_stack(p, "a", INT64_MAX);
    assert_int_not_equal(ember_profile_add(p, n, 0, 1), 0);
    ember_profile_free(p);
}

static void test_weight_format(void **state)
{
    (void)state;
    char buf[40];
    ember_weight_format(buf, 12345, 0);
    assert_string_equal(buf, "12345");
    ember_weight_format(buf, 12345, 2);
    assert_string_equal(buf, "123.45");
    ember_weight_format(buf, 12300, 3);
    assert_string_equal(buf, "12.3");
    ember_weight_format(buf, 5, 3);
    assert_string_equal(buf, "0.005");
    ember_weight_format(buf, 0, 2);
    assert_string_equal(buf, "0");
    ember_weight_format(buf, -150, 2);
    assert_string_equal(buf, "-1.5");
}

/* A profile of one value made differential after stacks were added (a
 * folded file whose two-count lines follow one-count ones) keeps those
 * unchanged, after as before, as flamegraph.pl draws them; a profile of
 * more values cannot say which would be which. */
static void test_differential_after_stacks(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new();
    ember_profile_keep_sequence(p, true);
    uint32_t *ids = intern_names(p, 2), a, b;
    assert_int_equal(ember_profile_child(p, EMBER_ROOT, ids[0], &a), 0);
    assert_int_equal(ember_profile_add(p, a, 0, 4), 0);
    assert_int_equal(ember_profile_add(p, EMBER_ROOT, 0, 2), 0);
    assert_int_equal(ember_profile_set_differential(p, "samples", "count"), 0);
    assert_int_equal(ember_profile_child(p, a, ids[1], &b), 0);
    assert_int_equal(ember_profile_add(p, b, 0, 1), 0);
    assert_int_equal(ember_profile_add(p, b, 1, 9), 0);
    assert_int_equal(ember_profile_self(p, a, 0), 4);
    assert_int_equal(ember_profile_self(p, a, 1), 4);
    assert_int_equal(ember_profile_self(p, EMBER_ROOT, 1), 2);
    assert_int_equal(ember_profile_total(p, 0), 7);
    assert_int_equal(ember_profile_total(p, 1), 15);
    assert_int_equal(ember_profile_selected(p), 1);
    struct ember_profile *q = two_values(1);
    assert_int_equal(ember_profile_set_differential(q, "samples", "count"), -EINVAL);
    free(ids);
    ember_profile_free(p);
    ember_profile_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intern_is_stable),
        cmocka_unit_test(test_same_stack_same_node),
        cmocka_unit_test(test_children_survive_growth),
        cmocka_unit_test(test_path_is_child_by_child),
        cmocka_unit_test(test_bad_ids_are_errors),
        cmocka_unit_test(test_decimals_are_exact),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_overflow_is_an_error),
        cmocka_unit_test(test_weight_format),
        cmocka_unit_test(test_differential_after_stacks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
