/*
 * test_spell.c - a frame spelled as FlameGraph spells it
 * (lib/model/spell.c): annotation, then place; ';' kept in the name and
 * spelled ':' only where frames are joined; control characters "\xNN" per
 * byte in the folded spelling.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "unit_profile.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spell),
        cmocka_unit_test(test_spell_folded),
        cmocka_unit_test(test_spell_folded_controls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
