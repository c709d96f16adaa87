/*
 * test_symbolizer.c - the symbolizer's own rules (lib/symbol/symbolizer.c)
 * on real binaries built here: a changed binary is a build-id mismatch;
 * results are shared by build-id, and memoized; perf script's frame lines
 * (a file address, else "sym+0xOFF") give the chain of the file address.
 *
 * Exits 77 (skipped) when no C compiler or binutils are installed.
 */
#include "unit_elf.h"

#include <errno.h>

static int setup(void **state)
{
    (void)state;
    static const char *const bins[] = {"prog",           "prog_noid",     "prog2", "prog_copy",
                                       "prog_noid_copy", "prog.stripped", NULL};
    return unit_elf_setup(bins);
}

static void test_build_id_mismatch(void **state)
{
    (void)state;
    char prog[256], prog2[256], noid[256], hex[128];
    path_of(prog, sizeof(prog), "prog");
    path_of(prog2, sizeof(prog2), "prog2");
    path_of(noid, sizeof(noid), "prog_noid");
    build_id_of(prog, hex, sizeof(hex));
    uint8_t id[64];
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++)
        sscanf(hex + 2 * i, "%2hhx", &id[i]);
    struct ember_symbolizer *s = new_symbolizer(NULL);
    struct ember_symbol_module *m;
    struct ember_diag d;
    assert_int_equal(ember_symbolizer_module(s, prog, strlen(prog), id, n, &m, &d), 0);
    const uint8_t *bits;
    assert_int_equal(ember_symbol_module_build_id(m, &bits), n);
    assert_memory_equal(bits, id, n);
    /* the file changed since the recording */
    assert_int_equal(ember_symbolizer_module(s, prog2, strlen(prog2), id, n, &m, &d), -ESTALE);
    assert_null(m);
    assert_string_equal(d.file, prog2);
    assert_non_null(strstr(d.msg, "build-id mismatch"));
    assert_non_null(strstr(d.msg, hex));
    /* a file without one is not the recorded file either */
    assert_int_equal(ember_symbolizer_module(s, noid, strlen(noid), id, n, &m, &d), -ESTALE);
    assert_non_null(strstr(d.msg, "is none"));
    /* no file, no ELF */
    char missing[256];
    path_of(missing, sizeof(missing), "missing");
    assert_int_equal(ember_symbolizer_module(s, missing, strlen(missing), NULL, 0, &m, &d),
                     -ENOENT);
    assert_string_equal(d.file, missing);
    assert_true(strlen(d.msg) > 10);
    path_of(missing, sizeof(missing), "prog.c");
    assert_int_equal(ember_symbolizer_module(s, missing, strlen(missing), NULL, 0, &m, &d),
                     -ENOENT);
    ember_symbolizer_free(s);
}

/* Two paths to one build share results; without a build-id, they do not. */
static void test_memo_by_build_id(void **state)
{
    (void)state;
    const char *pairs[2][2] = {{"prog", "prog_copy"}, {"prog_noid", "prog_noid_copy"}};
    for (int p = 0; p < 2; p++) {
        struct ember_symbolizer *s = new_symbolizer(NULL);
        struct ember_symbol_module *m[2];
        char bin[2][256];
        for (int i = 0; i < 2; i++) {
            path_of(bin[i], sizeof(bin[i]), pairs[p][i]);
            assert_int_equal(
                ember_symbolizer_module(s, bin[i], strlen(bin[i]), NULL, 0, &m[i], NULL), 0);
        }
        uint64_t a = nm_find(bin[0], "outer_work").addr + 8;
        const struct ember_symbol_chain *first = resolve(s, m[0], a);
        assert_ptr_equal(resolve(s, m[0], a), first); /* memoized */
        if (p == 0)
            assert_ptr_equal(resolve(s, m[1], a), first);
        else
            assert_ptr_not_equal(resolve(s, m[1], a), first);
        ember_symbolizer_free(s);
    }
}

/* perf script's frame lines: a file address, else "sym+0xOFF". */
static void test_perf_lines(void **state)
{
    (void)state;
    char bin[256], pc[32], sym[64];
    path_of(bin, sizeof(bin), "prog");
    struct nm_sym outer = nm_find(bin, "outer_work");
    struct ember_symbolizer *s = new_symbolizer(NULL);
    struct ember_symbol_module *m;
    assert_int_equal(ember_symbolizer_module(s, bin, strlen(bin), NULL, 0, &m, NULL), 0);
    for (uint64_t off = 0; off < outer.size; off++) {
        const struct ember_symbol_chain *want = resolve(s, m, outer.addr + off), *got;
        snprintf(pc, sizeof(pc), "%" PRIx64, outer.addr + off);
        snprintf(sym, sizeof(sym), "outer_work+0x%" PRIx64, off);
        assert_int_equal(
            ember_symbolizer_resolve_perf(s, bin, strlen(bin), pc, strlen(pc), "", 0, &got), 0);
        assert_ptr_equal(got, want);
        /* a runtime address of the PIE: through the symbol */
        snprintf(pc, sizeof(pc), "%" PRIx64, 0x555555554000 + outer.addr + off);
        assert_int_equal(ember_symbolizer_resolve_perf(s, bin, strlen(bin), pc, strlen(pc), sym,
                                                       strlen(sym), &got),
                         0);
        assert_ptr_equal(got, want);
    }
    /* answers are memoized by pc as printed, as when perf printed it first */
    const struct ember_symbol_chain *c, *first;
    assert_int_equal(
        ember_symbolizer_resolve_perf(s, bin, strlen(bin), pc, strlen(pc), "x+0x1", 5, &c), 0);
    first = c;
    /* a runtime pc whose symbol is not "func+0xOFF" of the file */
    const char *bad_syms[] = {"outer_work", "outer_work+0x", "outer_work+12", "nothing+0x1"};
    for (size_t i = 0; i < sizeof(bad_syms) / sizeof(*bad_syms); i++) {
        snprintf(pc, sizeof(pc), "%" PRIx64, 0x555555554000 + outer.addr + 0x1000 * (i + 1));
        assert_int_equal(ember_symbolizer_resolve_perf(s, bin, strlen(bin), pc, strlen(pc),
                                                       bad_syms[i], strlen(bad_syms[i]), &c),
                         -ENOENT);
    }
    assert_non_null(first);
    assert_int_equal(ember_symbolizer_resolve_perf(s, bin, strlen(bin), "zz", 2, "", 0, &c),
                     -ENOENT);
    assert_int_equal(ember_symbolizer_resolve_perf(s, "[unknown]", 9, "1234", 4, "f+0x1", 5, &c),
                     -ENOENT);
    ember_symbolizer_free(s);
    /* an address with an ELF symbol and no DWARF is not an inline chain
     * (a symbolizer of its own: the memo would answer for the build-id) */
    s = new_symbolizer("nowhere");
    char stripped[256];
    path_of(stripped, sizeof(stripped), "prog.stripped");
    snprintf(pc, sizeof(pc), "%" PRIx64, outer.addr);
    assert_int_equal(
        ember_symbolizer_resolve_perf(s, stripped, strlen(stripped), pc, strlen(pc), "", 0, &c),
        -ENOENT);
    ember_symbolizer_free(s);
}

int main(void)
{
    if (unit_elf_missing_tools())
        return SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_id_mismatch),
        cmocka_unit_test(test_memo_by_build_id),
        cmocka_unit_test(test_perf_lines),
    };
    return cmocka_run_group_tests(tests, setup, unit_elf_teardown);
}
