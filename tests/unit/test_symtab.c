/*
 * test_symtab.c - the sorted symbol table of lib/symbol/symtab.c, on
 * symbols chosen to test its rules: the innermost symbol holds an address,
 * the global one among aliases, the first one added among equal names; a
 * name is looked up by its length, within a longer text; labels of no size and
 * addresses outside every symbol are not found. (Tables read from ELF
 * files are compared with nm in test_module.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "symbol/symtab.h"

#include <errno.h>

/* The sorted table's rules, on symbols chosen to test them. */
static void test_symtab_rules(void **state)
{
    (void)state;
    struct ember_symtab *t;
    assert_int_equal(ember_symtab_new(&t), 0);
    assert_int_equal(ember_symtab_add(t, "outer", 0x1000, 0x100, 0, true), 0);
    assert_int_equal(ember_symtab_add(t, "nested", 0x1040, 0x10, 0, true), 0);
    assert_int_equal(ember_symtab_add(t, "local_alias", 0x2000, 0x20, 0, true), 0);
    assert_int_equal(ember_symtab_add(t, "global_alias", 0x2000, 0x20, 2, true), 0);
    assert_int_equal(ember_symtab_add(t, "weak_alias", 0x2000, 0x20, 1, true), 0);
    assert_int_equal(ember_symtab_add(t, "dup", 0x3000, 0x10, 0, true), 0);
    assert_int_equal(ember_symtab_add(t, "dup", 0x4000, 0x10, 0, true), 0);
    assert_int_equal(ember_symtab_add(t, "label", 0x5000, 0, 0, false), 0);
    assert_int_equal(ember_symtab_add(t, "zero_size", 0x6000, 0, 0, true), 0);
    assert_int_equal(ember_symtab_finish(t), 0);
    const struct ember_symtab_sym *sym;
    uint64_t off, addr;
    struct {
        uint64_t addr;
        const char *name;
        uint64_t off;
    } cases[] = {
        {0x1000, "outer", 0},           {0x103f, "outer", 0x3f}, {0x1040, "nested", 0},
        {0x104f, "nested", 0xf},        {0x1050, "outer", 0x50}, {0x10ff, "outer", 0xff},
        {0x2010, "global_alias", 0x10}, {0x3000, "dup", 0},      {0x4001, "dup", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        assert_int_equal(ember_symtab_lookup(t, cases[i].addr, &sym, &off), 0);
        assert_string_equal(sym->name, cases[i].name);
        assert_int_equal(off, cases[i].off);
    }
    uint64_t misses[] = {0, 0xfff, 0x1100, 0x2020, 0x5000, 0x6000, UINT64_MAX};
    for (size_t i = 0; i < sizeof(misses) / sizeof(*misses); i++)
        assert_int_equal(ember_symtab_lookup(t, misses[i], &sym, &off), -ENOENT);
    assert_int_equal(ember_symtab_find(t, "dup", 3, &addr), 0);
    assert_int_equal(addr, 0x3000); /* the first one added */
    assert_int_equal(ember_symtab_find(t, "label", 5, &addr), 0);
    assert_int_equal(addr, 0x5000);
    assert_int_equal(ember_symtab_find(t, "local_aliasx", 11, &addr), 0); /* a prefix */
    assert_int_equal(addr, 0x2000);
    assert_int_equal(ember_symtab_find(t, "nest", 4, &addr), -ENOENT);
    assert_int_equal(ember_symtab_find(t, "zzz", 3, &addr), -ENOENT);
    ember_symtab_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symtab_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
