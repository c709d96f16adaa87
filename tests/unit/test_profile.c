/*
 * test_profile.c - the profile model: interning, the stack tree, exact
 * decimal weights, merging, and the walk in folded-line byte order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ember/read.h"
#include "ember/model.h"
#include "ember/write.h"
#include "ember/transform.h"
#include "base/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t add_stack(struct ember_profile *p, const char *folded, int64_t w)
{
    uint32_t node = EMBER_ROOT;
    char *copy = strdup(folded), *save = NULL;
    for (char *f = strtok_r(copy, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
        uint32_t frame;
        assert_int_equal(ember_profile_intern(p, f, strlen(f), &frame), 0);
        assert_int_equal(ember_profile_child(p, node, frame, &node), 0);
    }
    free(copy);
    assert_int_equal(ember_profile_add(p, node, 0, w), 0);
    return node;
}

struct text {
    char buf[4096];
    size_t len;
};

static int text_write(void *ctx, const char *buf, size_t len)
{
    struct text *t = ctx;
    assert_true(t->len + len < sizeof(t->buf));
    memcpy(t->buf + t->len, buf, len);
    t->len += len;
    t->buf[t->len] = '\0';
    return 0;
}

static const char *folded(const struct ember_profile *p, struct text *t)
{
    struct ember_sink sink = {text_write, t};
    t->len = 0;
    t->buf[0] = '\0';
    assert_int_equal(ember_write_folded(p, &sink), 0);
    return t->buf;
}

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

/* FlameGraph's spelling, made from the record: annotation, then place. */
static void test_spell(void **state)
{
    (void)state;
    char buf[64];
    struct ember_frame f = {.name = "leaf",
                            .name_len = 4,
                            .file = "/src/x.c",
                            .file_len = 8,
                            .line = 12,
                            .kind = EMBER_FRAME_INLINED,
                            .module = EMBER_NO_MODULE};
    assert_int_equal(ember_frame_spell(&f, buf, sizeof(buf)), 4);
    assert_string_equal(buf, "leaf");
    f.kind_in_name = true;
    assert_int_equal(ember_frame_spell(&f, buf, sizeof(buf)), 8);
    assert_string_equal(buf, "leaf_[i]");
    f.place_in_name = true;
    assert_int_equal(ember_frame_spell(&f, buf, sizeof(buf)), 15);
    assert_string_equal(buf, "leaf_[i]:x.c:12");
    /* cut to the buffer, the whole length returned */
    assert_int_equal(ember_frame_spell(&f, buf, 6), 15);
    assert_string_equal(buf, "leaf_");
    f.kind = EMBER_FRAME_USER; /* no annotation for a user frame */
    f.place_in_name = false;
    assert_int_equal(ember_frame_spell(&f, buf, sizeof(buf)), 4);
}

/* A ';' is kept in the name and spelled ':' only where frames are joined. */
static void test_spell_folded(void **state)
{
    (void)state;
    char buf[64];
    struct ember_frame f = {.name = "a;b;c",
                            .name_len = 5,
                            .kind = EMBER_FRAME_KERNEL,
                            .kind_in_name = true,
                            .module = EMBER_NO_MODULE};
    assert_int_equal(ember_frame_spell(&f, buf, sizeof(buf)), 9);
    assert_string_equal(buf, "a;b;c_[k]");
    assert_int_equal(ember_frame_spell_folded(&f, buf, sizeof(buf)), 9);
    assert_string_equal(buf, "a:b:c_[k]");
    assert_int_equal(ember_frame_spell_folded(&f, buf, 3), 9);
    assert_string_equal(buf, "a:");
    f.kind_in_name = false;
    assert_false(ember_frame_spelled(&f));
    assert_true(ember_frame_spelled_folded(&f));
    f = (struct ember_frame){.name = "my;cmd",
                             .name_len = 6,
                             .kind = EMBER_FRAME_PROCESS,
                             .kind_in_name = true,
                             .pid = 7,
                             .tid = -1,
                             .module = EMBER_NO_MODULE};
    assert_int_equal(ember_frame_spell_folded(&f, buf, sizeof(buf)), 8);
    assert_string_equal(buf, "my:cmd-7");
}

/* The folded view makes "x;y" and "x:y" one frame, "x:y"; the exports'
 * view keeps the names as read. */
static void test_names_view_spells_semicolons(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new(), *v = NULL;
    uint32_t semi, colon, n1, n2;
    assert_int_equal(ember_profile_intern(p, "x;y", 3, &semi), 0);
    assert_int_equal(ember_profile_intern(p, "x:y", 3, &colon), 0);
    assert_int_equal(ember_profile_add_stack(p, &semi, 1, EMBER_ROOT_FIRST, (int64_t[]){2}, &n1),
                     0);
    assert_int_equal(ember_profile_add_stack(p, &colon, 1, EMBER_ROOT_FIRST, (int64_t[]){3}, &n2),
                     0);
    assert_false(ember_profile_is_names(p));
    assert_int_equal(ember_profile_function_names(p, &v), 0);
    assert_null(v);
    assert_int_equal(ember_profile_names(p, &v), 0);
    assert_non_null(v);
    assert_true(ember_profile_is_names(v));
    uint32_t one = ember_profile_child_lookup(v, EMBER_ROOT, 0);
    size_t len;
    assert_int_equal(ember_profile_frame_count(v), 1);
    assert_string_equal(ember_profile_frame_name(v, 0, &len), "x:y");
    assert_int_equal(ember_profile_self(v, one, 0), 5);
    ember_profile_free(v);
    ember_profile_free(p);
}

/* Control characters (C0, DEL, C1 in UTF-8) are "\xNN" per byte in the
 * folded spelling, whatever else the name holds; other bytes are kept. */
static void test_spell_folded_controls(void **state)
{
    (void)state;
    char buf[128];
    const char name[] = "m;\n;s\x1b[1m\t\r\x7f\xc2\x9b\xc3\xa9\\x";
    struct ember_frame f = {.name = name, .name_len = sizeof(name) - 1, .module = EMBER_NO_MODULE};
    assert_false(ember_frame_spelled(&f));
    assert_true(ember_frame_spelled_folded(&f));
    const char want[] = "m:\\x0a:s\\x1b[1m\\x09\\x0d\\x7f\\xc2\\x9b\xc3\xa9\\x";
    assert_int_equal(ember_frame_spell_folded(&f, buf, sizeof(buf)), sizeof(want) - 1);
    assert_string_equal(buf, want);
    assert_int_equal(ember_frame_spell(&f, buf, sizeof(buf)), sizeof(name) - 1); /* as read */
    f = (struct ember_frame){.name = "a\x01", .name_len = 2, .module = EMBER_NO_MODULE};
    assert_true(ember_frame_spelled_folded(&f));
    f = (struct ember_frame){.name = "a\xc2\xa9\xc2", .name_len = 4, .module = EMBER_NO_MODULE};
    assert_false(ember_frame_spelled_folded(&f)); /* U+00A9, and a cut 0xc2: not controls */
    f = (struct ember_frame){.name = "my cmd\n",
                             .name_len = 7,
                             .kind = EMBER_FRAME_THREAD,
                             .kind_in_name = true,
                             .pid = 7,
                             .tid = 8,
                             .module = EMBER_NO_MODULE};
    assert_int_equal(ember_frame_spell_folded(&f, buf, sizeof(buf)), 14);
    assert_string_equal(buf, "my_cmd\\x0a-7/8");
    /* the file of "name:file:line" too */
    f = (struct ember_frame){.name = "f",
                             .name_len = 1,
                             .file = "/src/a;b\n.c",
                             .file_len = 11,
                             .line = 3,
                             .place_in_name = true,
                             .module = EMBER_NO_MODULE};
    assert_int_equal(ember_frame_spell_folded(&f, buf, sizeof(buf)), 13);
    assert_string_equal(buf, "f:a:b\\x0a.c:3");
}

/* Found wherever it lies in a word, or across two; cut to whole escapes. */
static void test_text_controls(void **state)
{
    (void)state;
    char s[24], buf[16];
    for (size_t at = 0; at < sizeof(s); at++)
        for (unsigned c = 0; c < 256; c++) {
            memset(s, 'a', sizeof(s));
            s[at] = (char)c;
            bool ctl = c < 0x20 || c == 0x7f;
            assert_int_equal(ember_text_has_ctl(s, sizeof(s)), ctl);
            if (at + 1 < sizeof(s)) {
                s[at] = '\xc2';
                s[at + 1] = (char)c;
                assert_int_equal(ember_text_has_ctl(s, sizeof(s)), ctl || (c >= 0x80 && c <= 0x9f));
            }
        }
    assert_int_equal(ember_text_escape("ab\x1b\x1b", 4, buf, 8), 10);
    assert_string_equal(buf, "ab\\x1b");
    assert_int_equal(ember_text_escape("ab\x1b", 3, buf, sizeof(buf)), 6);
    assert_string_equal(buf, "ab\\x1b");
}

/* The folded view makes a name with a newline and the text of its
 * spelling one frame; a names-only profile whose one odd name has no ';'
 * gets a view too. */
static void test_names_view_escapes_controls(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new(), *v = NULL;
    uint32_t raw, spelled, n1, n2;
    assert_int_equal(ember_profile_intern(p, "a\nb", 3, &raw), 0);
    assert_int_equal(ember_profile_intern(p, "a\\x0ab", 6, &spelled), 0);
    assert_int_equal(ember_profile_add_stack(p, &raw, 1, EMBER_ROOT_FIRST, (int64_t[]){2}, &n1), 0);
    assert_int_equal(ember_profile_add_stack(p, &spelled, 1, EMBER_ROOT_FIRST, (int64_t[]){3}, &n2),
                     0);
    assert_false(ember_profile_is_names(p));
    assert_int_equal(ember_profile_names(p, &v), 0);
    assert_non_null(v);
    size_t len;
    assert_int_equal(ember_profile_frame_count(v), 1);
    assert_string_equal(ember_profile_frame_name(v, 0, &len), "a\\x0ab");
    assert_int_equal(ember_profile_self(v, ember_profile_child_lookup(v, EMBER_ROOT, 0), 0), 5);
    ember_profile_free(v);
    ember_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intern_is_stable),
        cmocka_unit_test(test_same_stack_same_node),
        cmocka_unit_test(test_walk_is_line_byte_order),
        cmocka_unit_test(test_decimals_are_exact),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_overflow_is_an_error),
        cmocka_unit_test(test_weight_format),
        cmocka_unit_test(test_spell),
        cmocka_unit_test(test_spell_folded),
        cmocka_unit_test(test_names_view_spells_semicolons),
        cmocka_unit_test(test_spell_folded_controls),
        cmocka_unit_test(test_text_controls),
        cmocka_unit_test(test_names_view_escapes_controls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
