/*
 * test_stack_text.c - stacks added as text (lib/model/stack_text.c) land on
 * the nodes of their frames, whatever the stack before shares with them,
 * hinted or not, split ahead or not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/profile_impl.h"
#include "unit_profile.h"

/* The names of node's path, root first, joined by ';' into buf. */
static size_t path_text(const struct ember_profile *p, uint32_t node, char *buf)
{
    uint32_t up[64];
    size_t depth = 0, o = 0;
    for (; node != EMBER_ROOT; node = ember_profile_node_parent(p, node))
        up[depth++] = node;
    while (depth--) {
        size_t len;
        const char *name =
            ember_profile_frame_name(p, ember_profile_node_frame(p, up[depth]), &len);
        memcpy(buf + o, name, len);
        o += len;
        if (depth)
            buf[o++] = ';';
    }
    return o;
}

/* How many times c is in s[0, n). */
static size_t count_char(const char *s, size_t n, char c)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == c;
    return k;
}

/* Stacks added as text land on the nodes of their frames, whatever the
 * stack before shares with them (prefixes of equal bytes that end inside
 * a frame, empty frames, the stack of no frames: the root), hinted or not,
 * and a stack seen again on its node; the tree is the one the stacks'
 * frames make one by one. */
static void test_stack_text(void **state)
{
    (void)state;
    enum { STACKS = 40000 };
    static const char *const names[] = {"", "a", "ab", "a;", "b", "main", "m"};
    struct ember_profile *p = ember_profile_new(), *q = ember_profile_new();
    struct ember_stack_text *t;
    assert_int_equal(ember_stack_text_new(p, ';', &t), 0);
    char text[512], again[512];
    uint32_t fr[32], first, empty;
    /* the stack of no frames after one whose first frame is empty */
    assert_int_equal(ember_stack_text_add(t, ";a", 2, NULL, &first), 0);
    assert_int_equal(ember_stack_text_add(t, "", 0, NULL, &empty), 0);
    assert_int_equal(empty, EMBER_ROOT);
    assert_int_equal(ember_profile_intern(q, "", 0, &fr[0]), 0);
    assert_int_equal(ember_profile_intern(q, "a", 1, &fr[1]), 0);
    assert_int_equal(ember_profile_add_stack(q, fr, 2, EMBER_ROOT_FIRST, NULL, &first), 0);
    size_t n = 0, depth = 0;
    for (int i = 0; i < STACKS; i++) {
        /* keep the previous text up to some byte, then new frames */
        n = n ? below((uint32_t)n + 1) : 0;
        depth = below(6);
        for (size_t k = 0; k < depth && n + 8 < sizeof(text); k++) {
            const char *nm = names[below(6)]; /* "a;" below: a frame split in two */
            if (n)
                text[n++] = ';';
            memcpy(text + n, nm, strlen(nm));
            n += strlen(nm);
        }
        while (n > 0 && text[n - 1] == ';') /* as the folded reader gives them */
            n--;
        uint32_t node, want = EMBER_ROOT;
        uint64_t key[2];
        ember_stack_text_key(text, n, key);
        ember_stack_text_prefetch(t, key);
        if (i % 3 == 2) { /* split ahead, as on the reading thread */
            size_t ends[sizeof(text) + 8];
            uint64_t hashes[sizeof(text) + 8];
            size_t names = ember_stack_text_split(';', text, n, ends, hashes);
            assert_int_equal(names, n ? (size_t)count_char(text, n, ';') + 1 : 0);
            assert_int_equal(
                ember_stack_text_add_split(t, text, n, key, ends, hashes, names, &node), 0);
        } else {
            assert_int_equal(ember_stack_text_add(t, text, n, i % 2 ? key : NULL, &node), 0);
        }
        size_t nf = 0;
        for (size_t pos = 0; n > 0 && pos <= n; nf++) {
            const char *semi = memchr(text + pos, ';', n - pos);
            size_t end = semi ? (size_t)(semi - text) : n;
            assert_int_equal(ember_profile_intern(q, text + pos, end - pos, &fr[nf]), 0);
            pos = end + 1;
        }
        if (nf)
            assert_int_equal(ember_profile_add_stack(q, fr, nf, EMBER_ROOT_FIRST, NULL, &want), 0);
        assert_int_equal(node == EMBER_ROOT, want == EMBER_ROOT);
        assert_int_equal(path_text(p, node, again), n);
        assert_memory_equal(again, text, n);
    }
    assert_int_equal(ember_profile_node_count(p), ember_profile_node_count(q));
    ember_stack_text_free(t);
    ember_profile_free(p);
    ember_profile_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stack_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
