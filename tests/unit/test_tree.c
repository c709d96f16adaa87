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

#include "ember/transform.h"
#include "model/name_cache.h"
#include "model/profile_impl.h"
#include "model/split.h"
#include "model/stack_cache.h"
#include "base/hash.h"

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

/* A profile of two values, the second selected, weights on a few stacks
 * with a decimal in one and the empty stack's weight on the root. */
static struct ember_profile *two_values(int64_t scale)
{
    struct ember_profile *p = ember_profile_new();
    unsigned v0, v1;
    assert_int_equal(ember_profile_value(p, "cpu", "nanoseconds", &v0), 0);
    assert_int_equal(ember_profile_value(p, "samples", "count", &v1), 0);
    ember_profile_select_index(p, v1);
    uint32_t *ids = intern_names(p, 5), node;
    const uint32_t stacks[][3] = {{0, 1, 2}, {0, 1, 3}, {0, 4, 2}, {4, 4, 4}};
    for (int i = 0; i < 4; i++) {
        uint32_t fr[3] = {ids[stacks[i][0]], ids[stacks[i][1]], ids[stacks[i][2]]};
        int64_t w[2] = {1000 * (i + 1), scale * (i + 2)};
        assert_int_equal(ember_profile_add_stack(p, fr, 3 - (i == 2), EMBER_ROOT_FIRST, w, &node),
                         0);
    }
    assert_int_equal(ember_profile_add_decimal(p, node, v1, (struct ember_decimal){25, 1}), 0);
    assert_int_equal(ember_profile_add(p, EMBER_ROOT, v1, 7), 0);
    free(ids);
    return p;
}

/* BEFORE made the differential profile in place is the profile
 * ember_profile_diff makes: the same nodes, weights, totals, decimals and
 * values, from BEFORE's selected value (not its first), normalized too. */
static void test_diff_into_is_diff(void **state)
{
    (void)state;
    for (int normalize = 0; normalize < 2; normalize++) {
        struct ember_profile *before = two_values(3), *after = two_values(5), *want;
        struct ember_diff_opts o = {.normalize = normalize};
        /* AFTER's frame spelled with its place, as its views show it */
        struct ember_frame f = {.name = "f1",
                                .name_len = 2,
                                .file = "g.c",
                                .file_len = 3,
                                .line = 9,
                                .module = EMBER_NO_MODULE,
                                .place_in_name = true};
        uint32_t id, node;
        assert_int_equal(ember_profile_intern_frame(after, &f, &id), 0);
        assert_int_equal(ember_profile_child(after, EMBER_ROOT, id, &node), 0);
        assert_int_equal(ember_profile_add(after, node, 1, 11), 0);
        assert_int_equal(ember_profile_diff(before, after, &o, &want), 0);
        assert_int_equal(ember_profile_diff_into(before, after, &o), 0);
        const struct ember_profile *got = before;
        assert_true(ember_profile_is_differential(got));
        assert_int_equal(ember_profile_values(got), 2);
        assert_int_equal(ember_profile_selected(got), ember_profile_selected(want));
        assert_int_equal(ember_profile_decimals(got), ember_profile_decimals(want));
        assert_string_equal(ember_profile_sample_type(got), ember_profile_sample_type(want));
        assert_string_equal(ember_profile_unit(got), ember_profile_unit(want));
        assert_int_equal(ember_profile_node_count(got), ember_profile_node_count(want));
        for (unsigned v = 0; v < 2; v++) {
            assert_string_equal(ember_profile_value_type(got, v),
                                ember_profile_value_type(want, v));
            assert_int_equal(ember_profile_total(got, v), ember_profile_total(want, v));
            for (uint32_t n = 0; n < ember_profile_node_count(got); n++)
                assert_int_equal(ember_profile_self(got, n, v), ember_profile_self(want, n, v));
        }
        for (uint32_t n = 1; n < ember_profile_node_count(got); n++) {
            size_t la, lb;
            const char *a = ember_profile_frame_name(got, ember_profile_node_frame(got, n), &la);
            const char *b = ember_profile_frame_name(want, ember_profile_node_frame(want, n), &lb);
            assert_int_equal(la, lb);
            assert_memory_equal(a, b, la);
            assert_int_equal(ember_profile_node_parent(got, n), ember_profile_node_parent(want, n));
        }
        ember_profile_free(before);
        ember_profile_free(after);
        ember_profile_free(want);
    }
}

/* Frames with places are copied by name alone into a difference: BEFORE
 * is left as it is, for ember_profile_diff to do. */
static void test_diff_into_refuses_places(void **state)
{
    (void)state;
    struct ember_profile *before = two_values(1), *after = two_values(1);
    struct ember_frame f = {.name = "g",
                            .name_len = 1,
                            .file = "g.c",
                            .file_len = 3,
                            .line = 9,
                            .module = EMBER_NO_MODULE};
    uint32_t id, node;
    assert_int_equal(ember_profile_intern_frame(before, &f, &id), 0);
    assert_int_equal(ember_profile_child(before, EMBER_ROOT, id, &node), 0);
    uint32_t count = ember_profile_node_count(before);
    struct ember_diff_opts o = {0};
    assert_int_equal(ember_profile_diff_into(before, after, &o), -EINVAL);
    o.strip_hex = true;
    assert_int_equal(ember_profile_diff_into(after, before, &o), -EINVAL);
    assert_false(ember_profile_is_differential(before));
    assert_false(ember_profile_is_differential(after));
    assert_int_equal(ember_profile_values(before), 2);
    assert_int_equal(ember_profile_node_count(before), count);
    ember_profile_free(before);
    ember_profile_free(after);
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

/* Stacks added as text land on the nodes of their frames, whatever the
 * stack before shares with them (prefixes of equal bytes that end inside
 * a frame, empty frames, the stack of no frames: the root), hinted or not,
 * and a stack seen again on its node; the tree is the one the stacks'
 * frames make one by one. */
static size_t count_char(const char *s, size_t n, char c)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == c;
    return k;
}

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

/* ember_split against a byte loop: separators anywhere, runs of them,
 * more than eight in a 64-byte block, texts ending on and off a block;
 * each text in a buffer of its exact size, so that ASan sees a read past
 * it. */
static void test_split(void **state)
{
    (void)state;
    const char alphabet[] = ";;;ab:\\0x";
    for (unsigned round = 0; round < 3000; round++) {
        size_t n = below(300), from = n ? below((uint32_t)n) : 0;
        char *s = malloc(n ? n : 1);
        unsigned dense = below(4);
        for (size_t i = 0; i < n; i++)
            s[i] = dense == 0 ? ';' : alphabet[below(dense == 1 ? 3 : sizeof(alphabet) - 1)];
        size_t *ends = malloc((n - from + EMBER_SPLIT_SLACK) * sizeof(*ends));
        size_t k = ember_split(s, from, n, ';', ends), want = 0;
        for (size_t i = from; i < n; i++)
            if (s[i] == ';')
                assert_int_equal(ends[want++], i);
        assert_int_equal(ends[want++], n);
        assert_int_equal(k, want);
        free(ends);
        free(s);
    }
}

/* The dispatching hash of long texts is XXH3 itself, at every length and
 * alignment around the switch to it. */
static void test_hash_text128(void **state)
{
    (void)state;
    char buf[2100];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (char)below(256);
    for (size_t n = 0; n < 2048; n += n < 300 ? 1 : 37)
        for (size_t at = 0; at < 3; at++) {
            uint64_t got[2];
            ember_hash_text128(buf + at, n, got);
            XXH128_hash_t want = XXH3_128bits(buf + at, n);
            assert_true(got[0] == want.low64 && got[1] == want.high64);
        }
}

/* A piece's text: name, and ';' for kind 1. */
struct ref_piece {
    const char *s;
    uint32_t len, frame, kind;
};

static int ref_byte(const struct ref_piece *p, size_t i)
{
    return i < p->len ? (unsigned char)p->s[i] : i == p->len && p->kind ? ';' : -1;
}

/* The order ember_piece_ranks must give: the texts as bytes, a text
 * before its extensions; the same text by name length, then frame. */
static int ref_cmp(const void *va, const void *vb)
{
    const struct ref_piece *a = va, *b = vb;
    for (size_t i = 0;; i++) {
        int x = ref_byte(a, i), y = ref_byte(b, i);
        if (x != y)
            return x < y ? -1 : 1;
        if (x < 0)
            break;
    }
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return (a->frame > b->frame) - (a->frame < b->frame);
}

/* The ranks of every frame's two pieces, against a plain sort: names that
 * extend each other, that hold ';' (so "a;" the piece and "a;" the name
 * tie), that differ in bytes around ';', and frames of one name in
 * several places. */
static void test_piece_ranks(void **state)
{
    (void)state;
    const char alphabet[] = ";:<ab9 ";
    for (unsigned round = 0; round < 30; round++) {
        struct ember_profile *p = ember_profile_new();
        assert_non_null(p);
        uint32_t count = 1 + below(round < 10 ? 20 : 3000);
        for (uint32_t i = 0; i < count; i++) {
            char name[12];
            size_t n = below(sizeof(name));
            for (size_t k = 0; k < n; k++)
                name[k] = alphabet[below(sizeof(alphabet) - 1)];
            uint32_t id;
            uint32_t line = below(3);
            struct ember_frame_loc loc = {.line = line, .detailed = line != 0};
            assert_int_equal(ember_frames_intern_loc(&p->frames, name, n, &loc, &id), 0);
        }
        const struct ember_frames *f = &p->frames;
        uint32_t *rank;
        assert_int_equal(ember_piece_ranks(f, &rank), 0);
        struct ref_piece *ref = malloc(2 * (size_t)f->count * sizeof(*ref));
        for (uint32_t i = 0; i < f->count; i++)
            for (uint32_t k = 0; k < 2; k++)
                ref[2 * i + k] = (struct ref_piece){f->str[i], f->len[i], i, k};
        qsort(ref, 2 * (size_t)f->count, sizeof(*ref), ref_cmp);
        for (size_t i = 0; i < 2 * (size_t)f->count; i++)
            assert_int_equal(rank[2 * ref[i].frame + ref[i].kind], i + 1);
        free(ref);
        free(rank);
        ember_profile_free(p);
    }
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
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_hash_text128),
        cmocka_unit_test(test_piece_ranks),
        cmocka_unit_test(test_stack_text),
        cmocka_unit_test(test_diff_into_is_diff),
        cmocka_unit_test(test_diff_into_refuses_places),
        cmocka_unit_test(test_differential_after_stacks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
