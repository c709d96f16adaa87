/*
 * test_symbol_names.c - function names as lib/symbol/names.c gives them:
 * C++ symbols demangled with their parameters, as addr2line -C does; Rust
 * (legacy and v0), OCaml and C names left as they are, for the --demangle
 * transform, by themselves and on a program built here. (Every C++ name of
 * a program is compared with addr2line -C in test_inlines.c.)
 *
 * Exits 77 (skipped) when no C compiler or binutils are installed.
 */
#include "symbol/demangle.h"
#include "symbol/names.h"
#include "unit_elf.h"

#include <string.h>

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

static void test_demangle(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"_Z10overloadedd", "overloaded(double)"},
        {"_ZNK2ns3BoxIiE5twiceEi", "ns::Box<int>::twice(int) const"},
        {"_ZN4test3foo17h0123456789abcdefE", NULL}, /* Rust, legacy */
        {"_RNvCs1234_7mycrate3foo", NULL},          /* Rust, v0 */
        {"camlTest__foo_123", NULL},
        {"main", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *got = ember_demangle(cases[i][0], strlen(cases[i][0]), EMBER_DEMANGLE_ADDR2LINE);
        if (cases[i][1])
            assert_string_equal(got, cases[i][1]);
        else
            assert_null(got);
        free(got);
    }
}

int main(void)
{
    if (unit_elf_missing_tools())
        return SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demangle),
        cmocka_unit_test(test_names_left_for_the_demangler),
    };
    return cmocka_run_group_tests(tests, setup, unit_elf_teardown);
}
