/*
 * test_walk.c - the walk of the stack tree in folded-line byte order
 * (lib/model/walk.c): the folded output's line order, and the ranks of
 * every frame's pieces against a plain sort.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/profile_impl.h"
#include "unit_profile.h"

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

/* Folded output is in the byte order of whole lines: "a.b;y" sorts between
 * the line ending at "a" and the lines below "a", because ' ' < '.' < ';'. */
static void test_walk_is_line_byte_order(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new();
    struct text t;
    add_stack(p, "a;x", 1);
    add_stack(p, "a.b;y", 2);
    add_stack(p, "a", 3);
    add_stack(p, "B", 4);
    add_stack(p, "a b", 5);
    assert_string_equal(folded(p, &t), "B 4\na 3\na b 5\na.b;y 2\na;x 1\n");
    ember_profile_free(p);
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
        cmocka_unit_test(test_walk_is_line_byte_order),
        cmocka_unit_test(test_piece_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
