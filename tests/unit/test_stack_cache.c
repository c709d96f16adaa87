/*
 * test_stack_cache.c - the stack cache (lib/model/stack_cache.c): leaf-first
 * stacks, as perf gives them, started below the previous stack's shared
 * frames, land on the nodes a plain walk finds, whatever the previous stack
 * and the root were.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/stack_cache.h"
#include "unit_profile.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stack_cache_prefix),
        cmocka_unit_test(test_stack_cache_roots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
