/*
 * test_profile_merge.c - profile_merge.c: random stacks in pieces of
 * input, the pieces dealt to a few sources (each source's in increasing
 * order, as threads take them), each source marked after each piece; the
 * sources merged on one thread and on several must give the profile one
 * thread reading every piece in order builds: the same frames, nodes
 * (frame, parent), weights and totals, and a child table that finds
 * every node. Also into a profile that has nodes already, with a negative
 * weight (the serial path), and with more threads than sources. Half the
 * frames have a file, a line, an address and a module, which the sources
 * number in orders of their own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/profile_impl.h"
#include "model/profile_merge.h"

#include <stdio.h>
#include <stdlib.h>
#include "unit_random.h"

enum { PIECES = 60, STACKS = 40, NAMES = 90, DEPTH = 9, SOURCES = 4 };

/* The stacks of one run, piece by piece: frames, depth and weights. */
struct stack {
    unsigned depth;
    unsigned name[DEPTH];
    int64_t w[2];
};

static struct stack stacks[PIECES][STACKS];

static void make_stacks(uint64_t seed, bool negative)
{
    for (unsigned p = 0; p < PIECES; p++)
        for (unsigned i = 0; i < STACKS; i++) {
            struct stack *s = &stacks[p][i];
            s->depth = 1 + (unsigned)(next_random(&seed) % DEPTH);
            /* a few roots and a skew towards small names: stacks share prefixes */
            for (unsigned d = 0; d < s->depth; d++)
                s->name[d] = (unsigned)(next_random(&seed) % (d < 2 ? 3 : NAMES));
            s->w[0] = (int64_t)(next_random(&seed) % 5);
            s->w[1] = (int64_t)(next_random(&seed) % 1000);
        }
    if (negative)
        stacks[PIECES / 2][3].w[1] = -7;
}

/* Name k's frame in p: every other one with a file, a line, an address
 * and a module (the sources meet their modules and files in orders of
 * their own, the merge maps them), the others the name alone. */
static uint32_t frame_of(struct ember_profile *p, unsigned k)
{
    char name[32], file[32], path[32];
    int len = snprintf(name, sizeof(name), "f%u", k);
    struct ember_frame fr = {.name = name, .name_len = (size_t)len, .module = EMBER_NO_MODULE};
    uint32_t frame;
    if (k % 2) {
        snprintf(path, sizeof(path), "/lib/m%u.so", k % 3);
        struct ember_module m = {.path = path, .start = 0x1000u * (k % 3)};
        assert_int_equal(ember_profile_module(p, &m, &fr.module), 0);
        fr.file = file;
        fr.file_len = (size_t)snprintf(file, sizeof(file), "src%u.c", k % 5);
        fr.line = k;
        fr.address = 0x400000u + k;
        fr.has_address = true;
    }
    assert_int_equal(ember_profile_intern_frame(p, &fr, &frame), 0);
    return frame;
}

static void add_piece(struct ember_profile *p, unsigned piece, const unsigned *values)
{
    for (unsigned i = 0; i < STACKS; i++) {
        const struct stack *s = &stacks[piece][i];
        uint32_t node = EMBER_ROOT;
        for (unsigned d = 0; d < s->depth; d++)
            assert_int_equal(ember_profile_child(p, node, frame_of(p, s->name[d]), &node), 0);
        for (unsigned v = 0; v < 2; v++)
            if (s->w[v])
                assert_int_equal(ember_profile_add(p, node, values[v], s->w[v]), 0);
    }
}

static struct ember_profile *new_profile(unsigned *values)
{
    struct ember_profile *p = ember_profile_new();
    assert_non_null(p);
    assert_int_equal(ember_profile_value(p, "samples", "count", &values[0]), 0);
    assert_int_equal(ember_profile_value(p, "cpu", "nanoseconds", &values[1]), 0);
    return p;
}

/* How many nodes dst has before the merge, beyond `before` pieces: a pad
 * of that many makes its child table large enough that the merge does not
 * grow it (and places only the new nodes). */
static unsigned pad;

/* dst with `before` pieces in it already (every seventh piece), and pad
 * nodes under a frame of their own. */
static struct ember_profile *new_dst(unsigned before)
{
    unsigned values[2];
    struct ember_profile *p = new_profile(values);
    for (unsigned i = 0; i < before; i++)
        add_piece(p, (i * 7) % PIECES, values);
    uint32_t frame, node = EMBER_ROOT;
    assert_int_equal(ember_profile_intern(p, "pad", 3, &frame), 0);
    for (unsigned i = 0; i < pad; i++)
        assert_int_equal(ember_profile_child(p, node, frame, &node), 0);
    return p;
}

/* Every piece dealt to a source by the seed, built and marked; merged
 * into dst on `threads` threads. */
static void merge(struct ember_profile *dst, uint64_t seed, unsigned threads)
{
    struct ember_profile *src[SOURCES];
    struct ember_piece_marks marks[SOURCES] = {0};
    unsigned values[SOURCES][2];
    for (unsigned i = 0; i < SOURCES; i++)
        src[i] = new_profile(values[i]);
    for (unsigned p = 0; p < PIECES; p++) {
        unsigned i = (unsigned)(next_random(&seed) % SOURCES);
        add_piece(src[i], p, values[i]);
        assert_int_equal(ember_profile_mark_piece(&marks[i], p, src[i]), 0);
    }
    assert_int_equal(ember_profile_merge_pieces(dst, src, marks, SOURCES, threads), 0);
    for (unsigned i = 0; i < SOURCES; i++) {
        ember_profile_free(src[i]);
        free(marks[i].v);
    }
}

/* Frame f of a and of b: the same name, file, line, address and module. */
static void assert_same_frame(const struct ember_profile *a, const struct ember_profile *b,
                              uint32_t f)
{
    struct ember_frame x, y;
    ember_profile_frame(a, f, &x);
    ember_profile_frame(b, f, &y);
    assert_string_equal(x.name, y.name);
    assert_int_equal(!x.file, !y.file);
    if (x.file)
        assert_string_equal(x.file, y.file);
    assert_int_equal(x.line, y.line);
    assert_int_equal(x.address, y.address);
    assert_int_equal(x.module, y.module);
    if (x.module != EMBER_NO_MODULE)
        assert_string_equal(ember_profile_module_info(a, x.module)->path,
                            ember_profile_module_info(b, y.module)->path);
}

static void assert_same(const struct ember_profile *a, const struct ember_profile *b)
{
    assert_int_equal(a->frames.count, b->frames.count);
    for (uint32_t f = 0; f < a->frames.count; f++)
        assert_same_frame(a, b, f);
    assert_int_equal(a->nvalues, b->nvalues);
    for (unsigned v = 0; v < a->nvalues; v++)
        assert_int_equal(a->total[v], b->total[v]);
    assert_int_equal(a->nnodes, b->nnodes);
    for (uint32_t n = 1; n < a->nnodes; n++) {
        assert_int_equal(a->nodes[n].frame, b->nodes[n].frame);
        assert_int_equal(a->nodes[n].parent, b->nodes[n].parent);
        assert_int_equal(a->child_hash[n], b->child_hash[n]);
        for (unsigned v = 0; v < a->nvalues; v++)
            assert_int_equal(a->self[v][n], b->self[v][n]);
        assert_int_equal(ember_profile_child_lookup(b, b->nodes[n].parent, b->nodes[n].frame), n);
    }
}

/* What one thread reading every piece in order builds. */
static struct ember_profile *one_reader(unsigned before)
{
    unsigned values[2];
    struct ember_profile *p = new_dst(before);
    assert_int_equal(ember_profile_value(p, "samples", "count", &values[0]), 0);
    assert_int_equal(ember_profile_value(p, "cpu", "nanoseconds", &values[1]), 0);
    for (unsigned i = 0; i < PIECES; i++)
        add_piece(p, i, values);
    return p;
}

static void check(unsigned before, bool negative, unsigned threads, unsigned padding)
{
    pad = padding;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        make_stacks(seed * 7919, negative);
        struct ember_profile *want = one_reader(before), *serial = new_dst(before),
                             *par = new_dst(before);
        merge(serial, seed, 1);
        merge(par, seed, threads);
        assert_same(want, serial);
        assert_same(want, par);
        /* nodes made after the merge land in the child table too */
        uint32_t frame, node;
        assert_int_equal(ember_profile_intern(par, "later", 5, &frame), 0);
        assert_int_equal(ember_profile_child(par, par->nnodes - 1, frame, &node), 0);
        assert_int_equal(ember_profile_child_lookup(par, par->nnodes - 2, frame), node);
        ember_profile_free(want);
        ember_profile_free(serial);
        ember_profile_free(par);
    }
}

static void test_empty_dst(void **state)
{
    (void)state;
    check(0, false, 3, 0);
}

static void test_dst_with_nodes(void **state)
{
    (void)state;
    check(5, false, 4, 0);
    check(5, false, 2, 40000);
}

static void test_negative_weight(void **state)
{
    (void)state;
    check(0, true, 4, 0);
}

static void test_more_threads_than_sources(void **state)
{
    (void)state;
    check(2, false, 16, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_dst),
        cmocka_unit_test(test_dst_with_nodes),
        cmocka_unit_test(test_negative_weight),
        cmocka_unit_test(test_more_threads_than_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
