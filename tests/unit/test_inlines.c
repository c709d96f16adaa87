/*
 * test_inlines.c - the inline chains of lib/symbol/inlines.c, through the
 * symbolizer, against binutils on real binaries built here: every address
 * of every function of a C program with inlined functions (PIE and not,
 * and with LTO, where the inlined instances' origins are in another CU), a
 * C++ program and a shared library gives the frames addr2line -i -f -C
 * prints (and the columns llvm-symbolizer prints, when it is installed).
 *
 * Exits 77 (skipped) when no C compiler or binutils are installed.
 */
#include "unit_addr2line.h"

static int setup(void **state)
{
    (void)state;
    static const char *const bins[] = {"prog", "prog_nopie", "lib.so", "prog_lto",
                                       "cxx",  "cxx_lto",    NULL};
    return unit_elf_setup(bins);
}

static void test_pie_against_addr2line(void **state)
{
    (void)state;
    char bin[256];
    path_of(bin, sizeof(bin), "prog");
    struct ember_symbolizer *s = new_symbolizer(NULL);
    compare_all_functions(s, bin, bin);
    /* the chain is the one of the source: three levels at the hot loop */
    struct nm_sym outer = nm_find(bin, "outer_work");
    bool three = false;
    struct ember_symbol_module *m;
    assert_int_equal(ember_symbolizer_module(s, bin, strlen(bin), NULL, 0, &m, NULL), 0);
    for (uint64_t a = outer.addr; a < outer.addr + outer.size; a++) {
        const struct ember_symbol_chain *c = resolve(s, m, a);
        assert_true(c->from_dwarf);
        assert_string_equal(c->frames[0].function, "outer_work");
        assert_false(c->frames[0].inlined);
        if (c->count == 3) {
            three = true;
            assert_string_equal(c->frames[1].function, "middle_step");
            assert_string_equal(c->frames[2].function, "leaf_mix");
            assert_true(c->frames[2].inlined);
            assert_int_equal(c->frames[1].line, 10); /* where leaf_mix was inlined */
        }
    }
    assert_true(three);
    ember_symbolizer_free(s);
}

static void test_not_pie_against_addr2line(void **state)
{
    (void)state;
    char bin[256];
    path_of(bin, sizeof(bin), "prog_nopie");
    struct ember_symbolizer *s = new_symbolizer(NULL);
    compare_all_functions(s, bin, bin);
    ember_symbolizer_free(s);
}

static void test_cxx_against_addr2line(void **state)
{
    (void)state;
    if (!have_cxx)
        skip();
    char bin[256];
    path_of(bin, sizeof(bin), "cxx");
    struct ember_symbolizer *s = new_symbolizer(NULL);
    compare_all_functions(s, bin, bin);
    struct ember_symbol_module *m;
    assert_int_equal(ember_symbolizer_module(s, bin, strlen(bin), NULL, 0, &m, NULL), 0);
    const struct ember_symbol_chain *c = resolve(s, m, nm_find(bin, "_Z10overloadedd").addr);
    assert_string_equal(c->frames[0].function, "overloaded(double)");
    ember_symbolizer_free(s);
}

/* LTO: the inlined instances' abstract origins are in another CU. */
static void test_lto_against_addr2line(void **state)
{
    (void)state;
    char bin[256];
    for (int cxx = 0; cxx < 2; cxx++) {
        if (cxx && !have_cxx)
            continue;
        path_of(bin, sizeof(bin), cxx ? "cxx_lto" : "prog_lto");
        struct ember_symbolizer *s = new_symbolizer(NULL);
        compare_all_functions(s, bin, bin);
        ember_symbolizer_free(s);
    }
}

static void test_shared_library_against_addr2line(void **state)
{
    (void)state;
    char bin[256];
    path_of(bin, sizeof(bin), "lib.so");
    struct ember_symbolizer *s = new_symbolizer(NULL);
    compare_all_functions(s, bin, bin);
    ember_symbolizer_free(s);
}

int main(void)
{
    if (unit_elf_missing_tools())
        return SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pie_against_addr2line),
        cmocka_unit_test(test_not_pie_against_addr2line),
        cmocka_unit_test(test_cxx_against_addr2line),
        cmocka_unit_test(test_lto_against_addr2line),
        cmocka_unit_test(test_shared_library_against_addr2line),
    };
    return cmocka_run_group_tests(tests, setup, unit_elf_teardown);
}
