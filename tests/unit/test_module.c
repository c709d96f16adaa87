/*
 * test_module.c - one ELF file opened for symbolization
 * (lib/symbol/module.c), on real binaries built here: separate debug files
 * are found by build-id in a directory of the test's own and by
 * .gnu_debuglink (the frames are then the original's, as addr2line gives
 * them); ELF symbols agree with nm; files that are not ELF, or not whole,
 * are an error or nothing found; a process address in a mapping of a
 * library (dlopen here) gives its file address.
 *
 * Exits 77 (skipped) when no C compiler or binutils are installed.
 */
#include "symbol/symtab.h"
#include "unit_addr2line.h"

#include <dlfcn.h>
#include <errno.h>
#include <sys/stat.h>

static int setup(void **state)
{
    (void)state;
    static const char *const bins[] = {"prog",
                                       "prog_nopie",
                                       "prog_noid",
                                       "lib.so",
                                       "prog.stripped",
                                       "lib.so.stripped",
                                       "prog_noid.linked",
                                       "cxx",
                                       NULL};
    return unit_elf_setup(bins);
}

/* The stripped copy's DWARF from DIR/.build-id/xx/yyyy.debug: the same
 * frames as the original; without the directory, ELF symbols alone. */
static void test_debug_file_by_build_id(void **state)
{
    (void)state;
    char bin[256], stripped[300];
    for (int lib = 0; lib < 2; lib++) {
        path_of(bin, sizeof(bin), lib ? "lib.so" : "prog");
        snprintf(stripped, sizeof(stripped), "%s.stripped", bin);
        struct ember_symbolizer *s = new_symbolizer("dbg");
        compare_all_functions(s, stripped, bin);
        ember_symbolizer_free(s);

        s = new_symbolizer("nowhere");
        struct ember_symbol_module *m;
        assert_int_equal(ember_symbolizer_module(s, stripped, strlen(stripped), NULL, 0, &m, NULL),
                         0);
        struct nm_sym f = nm_find(bin, lib ? "lib_work" : "outer_work");
        const struct ember_symbol_chain *c = resolve(s, m, f.addr + f.size / 2);
        assert_false(c->from_dwarf);
        assert_int_equal(c->count, 1);
        assert_string_equal(c->frames[0].function, lib ? "lib_work" : "outer_work");
        assert_null(c->frames[0].file);
        ember_symbolizer_free(s);
    }
}

static void test_debug_file_by_debuglink(void **state)
{
    (void)state;
    char bin[256], linked[256];
    path_of(bin, sizeof(bin), "prog_noid");
    path_of(linked, sizeof(linked), "prog_noid.linked");
    struct ember_symbolizer *s = new_symbolizer(NULL);
    compare_all_functions(s, linked, bin);
    ember_symbolizer_free(s);
}

/* Every sized symbol nm lists is found at its first and last byte, with
 * its offset, and by its name. */
static void test_elf_symbols_against_nm(void **state)
{
    (void)state;
    const char *bins[] = {"prog", "prog_nopie", "lib.so", "lib.so.stripped", "cxx"};
    for (size_t b = 0; b < sizeof(bins) / sizeof(*bins); b++) {
        if (strcmp(bins[b], "cxx") == 0 && !have_cxx)
            continue;
        char bin[256];
        path_of(bin, sizeof(bin), bins[b]);
        struct ember_symbolizer *s = new_symbolizer("nowhere");
        struct ember_symbol_module *m;
        assert_int_equal(ember_symbolizer_module(s, bin, strlen(bin), NULL, 0, &m, NULL), 0);
        const struct ember_symtab *t;
        assert_int_equal(ember_symbol_module_symbols(m, &t), 0);
        /* .dynsym when there is no .symtab: nm -D */
        struct nm_sym *syms;
        size_t n = nm_symbols(bin, strstr(bin, "stripped") ? "-D" : "", &syms), checked = 0;
        for (size_t i = 0; i < n; i++) {
            if (!syms[i].size || strchr("TtWwDdBbRrVvi", syms[i].type) == NULL)
                continue;
            for (int end = 0; end < 2; end++) {
                uint64_t a = syms[i].addr + (end ? syms[i].size - 1 : 0), off;
                const struct ember_symtab_sym *sym;
                if (ember_symtab_lookup(t, a, &sym, &off) != 0)
                    fail_msg("%s: %s at 0x%" PRIx64 " not found", bin, syms[i].name, a);
                /* an alias of nm's symbol or a symbol nested in it */
                assert_true(sym->addr >= syms[i].addr);
                assert_int_equal(sym->addr + off, a);
                assert_true(off < sym->size);
            }
            const char *at = strchr(syms[i].name, '@'); /* nm -D's version suffix */
            size_t len = at ? (size_t)(at - syms[i].name) : strlen(syms[i].name);
            uint64_t addr;
            assert_int_equal(ember_symtab_find(t, syms[i].name, len, &addr), 0);
            /* a local name may be defined twice (static functions of two
             * files): the first one in the table answers */
            if (strchr("TWDBRVi", syms[i].type))
                assert_int_equal(addr, syms[i].addr);
            checked++;
        }
        if (checked < 2)
            fail_msg("%s: %zu symbols checked", bin, checked);
        free(syms);
        ember_symbolizer_free(s);
    }
}

/* Files that are not ELF, or not whole: an error or nothing found, never a
 * crash or a hang (a FIFO would block an open, /dev/zero never ends). */
static void test_bad_files(void **state)
{
    (void)state;
    char prog[256], path[300], fifo[256];
    path_of(prog, sizeof(prog), "prog");
    path_of(fifo, sizeof(fifo), "fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *unreadable[] = {fifo, "/dev/zero", dir, "/nonexistent/prog"};
    struct ember_symbolizer *s = new_symbolizer(NULL);
    struct ember_symbol_module *m;
    struct ember_diag d;
    for (size_t i = 0; i < sizeof(unreadable) / sizeof(*unreadable); i++) {
        const char *p = unreadable[i];
        assert_int_equal(ember_symbolizer_module(s, p, strlen(p), NULL, 0, &m, &d), -ENOENT);
        assert_string_equal(d.file, p);
        assert_non_null(strstr(d.msg, "cannot read it as an ELF file: "));
        const struct ember_symbol_chain *c;
        assert_int_equal(ember_symbolizer_resolve_perf(s, p, strlen(p), "1000", 4, "f+0x1", 5, &c),
                         -ENOENT);
    }
    ember_symbolizer_free(s);
    /* prog cut at every 1/16 of its length, and with its middle zeroed */
    struct nm_sym outer = nm_find(prog, "outer_work");
    char *text = capture("stat -c %%s '%s'", prog);
    long size = strtol(text, NULL, 10);
    free(text);
    for (int cut = 0; cut <= 16; cut++) {
        snprintf(path, sizeof(path), "%s.cut%d", prog, cut);
        if (cut < 16)
            sh("head -c %ld '%s' > '%s'", size * cut / 16, prog, path);
        else
            sh("cp '%s' '%s' && dd if=/dev/zero of='%s' bs=1 seek=%ld count=%ld conv=notrunc "
               "2>/dev/null",
               prog, path, path, size / 3, size / 3);
        s = new_symbolizer(NULL);
        if (ember_symbolizer_module(s, path, strlen(path), NULL, 0, &m, &d) == 0) {
            const struct ember_symbol_chain *c;
            for (uint64_t a = outer.addr; a < outer.addr + outer.size; a++)
                if (ember_symbolizer_resolve(s, m, a, &c) == 0)
                    assert_true(c->count >= 1 && c->frames[0].function);
        }
        ember_symbolizer_free(s);
    }
}

/* ember record's way: a process address in a mapping of the file. The
 * library is loaded here, and /proc/self/maps gives its mappings. */
static void test_process_address(void **state)
{
    (void)state;
    char bin[256];
    path_of(bin, sizeof(bin), "lib.so");
    void *h = dlopen(bin, RTLD_NOW);
    assert_non_null(h);
    uintptr_t fn = (uintptr_t)dlsym(h, "lib_work");
    assert_true(fn != 0);
    FILE *maps = fopen("/proc/self/maps", "r");
    assert_non_null(maps);
    char line[1024];
    uint64_t start = 0, end = 0, pgoff = 0;
    while (fgets(line, sizeof(line), maps))
        if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64, &start, &end, &pgoff) == 3 &&
            fn >= start && fn < end)
            break;
    fclose(maps);
    assert_non_null(strstr(line, bin));
    struct ember_symbolizer *s = new_symbolizer(NULL);
    struct ember_symbol_module *m;
    assert_int_equal(ember_symbolizer_module(s, bin, strlen(bin), NULL, 0, &m, NULL), 0);
    uint64_t file_addr;
    assert_int_equal(ember_symbol_module_file_address(m, start, pgoff, fn + 5, &file_addr), 0);
    assert_int_equal(file_addr, nm_find(bin, "lib_work").addr + 5);
    assert_string_equal(resolve(s, m, file_addr)->frames[0].function, "lib_work");
    assert_int_equal(ember_symbol_module_file_address(m, start, pgoff, start - 1, &file_addr),
                     -ENOENT);
    ember_symbolizer_free(s);
    dlclose(h);
}

int main(void)
{
    if (unit_elf_missing_tools())
        return SKIP;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_debug_file_by_build_id),
        cmocka_unit_test(test_debug_file_by_debuglink),
        cmocka_unit_test(test_elf_symbols_against_nm),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_process_address),
    };
    return cmocka_run_group_tests(tests, setup, unit_elf_teardown);
}
