/*
 * test_kallsyms.c - kernel symbols from a kallsyms file (symbol/kallsyms.h),
 * as perf reads them: symbols end where the next starts, of two at one
 * address the last listed is kept, types other than text/weak/data/bss are
 * dropped, modules' symbols are found by module, the kernel proper is
 * relocated by its recorded _text; a table of zeros (kptr_restrict) and a
 * kernel whose build-id is not the recorded one are not used, with why.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "symbol/kallsyms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char table[] = "ffffffff81000000 T _text\n"
                            "ffffffff81000100 t alias_first\n"
                            "ffffffff81000100 T kept_last\n"
                            "ffffffff81000200 r rodata_dropped\n"
                            "ffffffff81000300 T third\n"
                            "ffffffffc0000000 t mod_fn\t[xfs]\n"
                            "ffffffffc0000040 t mod_next\t[xfs]\n";

static char path[64];

static void write_table(const char *text)
{
    strcpy(path, "/tmp/test_kallsyms_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void load(struct ember_kallsyms *k, const char *text, bool have_text, uint64_t recorded)
{
    write_table(text);
    struct ember_kallsyms_source src = {
        .kallsyms = path, .notes = "/nonexistent", .have_text = have_text, .text = recorded};
    ember_kallsyms_init(k);
    assert_int_equal(ember_kallsyms_load(k, &src), 0);
    unlink(path);
}

static void expect(const struct ember_kallsyms *k, const char *module, uint64_t addr,
                   const char *name, uint64_t offset)
{
    const char *got = NULL;
    uint64_t off = 0;
    size_t ml = module ? strlen(module) : 0;
    assert_int_equal(ember_kallsyms_find(k, module, ml, addr, &got, &off), 0);
    assert_string_equal(got, name);
    assert_int_equal(off, offset);
}

static void test_kernel_and_modules(void **state)
{
    (void)state;
    struct ember_kallsyms k;
    load(&k, table, false, 0);
    assert_true(k.usable);
    expect(&k, NULL, 0xffffffff81000010, "_text", 0x10);
    expect(&k, NULL, 0xffffffff81000180, "kept_last", 0x80);
    /* the data symbol is dropped: kept_last reaches third */
    expect(&k, NULL, 0xffffffff81000250, "kept_last", 0x150);
    expect(&k, "[xfs]", 0xffffffffc0000044, "mod_next", 4);
    const char *name;
    uint64_t off;
    assert_int_equal(ember_kallsyms_find(&k, "[ext4]", 6, 0xffffffffc0000044, &name, &off),
                     -ENOENT);
    ember_kallsyms_release(&k);
}

/* Lines out of address order (a copy edited by hand, modules loaded
 * between reads): sorted, ties in the order listed; the last line
 * without its newline; names kept where the text was read. */
static void test_unsorted(void **state)
{
    (void)state;
    struct ember_kallsyms k;
    load(&k,
         "ffffffff81000300 T third\n"
         "ffffffffc0000040 t mod_next\t[xfs]\n"
         "ffffffff81000100 t alias_first\n"
         "ffffffff81000000 T _text\n"
         "ffffffff81000100 T kept_last\n"
         "ffffffffc0000000 t mod_fn\t[xfs]",
         false, 0);
    assert_true(k.usable);
    expect(&k, NULL, 0xffffffff81000010, "_text", 0x10);
    expect(&k, NULL, 0xffffffff81000180, "kept_last", 0x80);
    expect(&k, NULL, 0xffffffff81000310, "third", 0x10);
    expect(&k, "[xfs]", 0xffffffffc0000010, "mod_fn", 0x10);
    expect(&k, "[xfs]", 0xffffffffc0000044, "mod_next", 4);
    ember_kallsyms_release(&k);
}

/* The recorded kernel's _text was 0x1000 lower than the running one's. */
static void test_relocated(void **state)
{
    (void)state;
    struct ember_kallsyms k;
    load(&k, table, true, 0xffffffff80fff000);
    expect(&k, NULL, 0xffffffff80fff100, "kept_last", 0);
    ember_kallsyms_release(&k);
}

static void test_hidden(void **state)
{
    (void)state;
    struct ember_kallsyms k;
    load(&k, "0000000000000000 T _text\n0000000000000000 T other\n", false, 0);
    assert_false(k.usable);
    assert_non_null(strstr(k.why, "kptr_restrict"));
    ember_kallsyms_release(&k);
}

static void test_other_kernel(void **state)
{
    (void)state;
    static const uint8_t recorded[20] = {1, 2, 3};
    struct ember_kallsyms k;
    struct ember_kallsyms_source src = {.kallsyms = "/proc/kallsyms",
                                        .notes = "/nonexistent",
                                        .build_id = recorded,
                                        .build_id_len = sizeof(recorded)};
    ember_kallsyms_init(&k);
    assert_int_equal(ember_kallsyms_load(&k, &src), 0);
    assert_false(k.usable);
    assert_non_null(strstr(k.why, "not the recorded one"));
    ember_kallsyms_release(&k);
}

/* A table of a megabyte and more, read here and beside (on a thread of
 * its own): lines are cut at the pieces' ends, the last has no newline;
 * both tables find every symbol, kernel and module, by its name. */
static void test_pieces(void **state)
{
    (void)state;
    enum { LINES = 40000 };
    size_t cap = (size_t)LINES * 64, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    for (unsigned i = 0; i < LINES; i++) {
        bool mod = i >= LINES / 2;
        uint64_t at = (mod ? 0xffffffffc0000000 : 0xffffffff81000000) + (uint64_t)i * 16;
        len += (size_t)snprintf(text + len, cap - len, "%016llx T fn%u_%.*s%s\n",
                                (unsigned long long)at, i, (int)(i % 23), "abcdefghijklmnopqrstuvw",
                                mod ? "\t[mod]" : "");
        if (i == 0)
            len = (size_t)snprintf(text, cap, "ffffffff81000000 T _text\n");
    }
    text[len - 1] = '\0'; /* the last line, without its newline */
    for (int beside = 0; beside < 2; beside++) {
        write_table(text);
        struct ember_kallsyms_source src = {.kallsyms = path, .notes = "/nonexistent"};
        struct ember_kallsyms k;
        ember_kallsyms_init(&k);
        k.read_beside = beside;
        assert_int_equal(ember_kallsyms_load(&k, &src), 0);
        unlink(path);
        assert_true(k.usable);
        assert_int_equal(k.n, LINES);
        for (unsigned i = 1; i < LINES; i++) {
            bool mod = i >= LINES / 2;
            uint64_t at = (mod ? 0xffffffffc0000000 : 0xffffffff81000000) + (uint64_t)i * 16;
            char want[64];
            snprintf(want, sizeof(want), "fn%u_%.*s", i, (int)(i % 23), "abcdefghijklmnopqrstuvw");
            expect(&k, mod ? "[mod]" : NULL, at + 3, want, 3);
        }
        ember_kallsyms_release(&k);
    }
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_and_modules), cmocka_unit_test(test_unsorted),
        cmocka_unit_test(test_relocated),          cmocka_unit_test(test_hidden),
        cmocka_unit_test(test_other_kernel),       cmocka_unit_test(test_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
