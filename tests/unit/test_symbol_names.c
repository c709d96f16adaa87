/*
 * test_symbol_names.c - function names as lib/symbol/names.c gives them,
 * on a program built here: Rust and OCaml symbols are left as they are,
 * for the --demangle transform. (C++ names, demangled with their
 * parameters, are compared with addr2line -C in test_inlines.c.)
 *
 * Exits 77 (skipped) when no C compiler or binutils are installed.
 */
#include "unit_elf.h"

static int setup(void **state)
{
    (void)state;
    static const char *const bins[] = {"prog", NULL};
    return unit_elf_setup(bins);
}

/* Rust and OCaml symbols are left for --demangle; C++ is demangled. */
static void test_names_left_for_the_demangler(void **state)
{
    (void)state;
    char bin[256];
    path_of(bin, sizeof(bin), "prog");
    struct ember_symbolizer *s = new_symbolizer(NULL);
    struct ember_symbol_module *m;
    assert_int_equal(ember_symbolizer_module(s, bin, strlen(bin), NULL, 0, &m, NULL), 0);
    const char *names[] = {"_ZN4test3foo17h0123456789abcdefE", "camlTest__foo_123"};
    for (int i = 0; i < 2; i++) {
        const struct ember_symbol_chain *c = resolve(s, m, nm_find(bin, names[i]).addr);
        assert_true(c->from_dwarf);
        assert_string_equal(c->frames[c->count - 1].function, names[i]);
    }
    ember_symbolizer_free(s);
}

int main(void)
{
    if (unit_elf_missing_tools())
        return SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_left_for_the_demangler),
    };
    return cmocka_run_group_tests(tests, setup, unit_elf_teardown);
}
