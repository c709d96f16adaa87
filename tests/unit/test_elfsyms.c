/*
 * test_elfsyms.c - perf's symbols of an ELF file (symbol/elfsyms.h), on
 * tests/golden/data/symchoice.c built here: a label of no size inside a
 * sized function names none of the function's addresses; of aliases at
 * one address, the one perf 6.1 keeps (global, not weak, fewer leading
 * underscores, the longest name, with versions as the linker wrote them);
 * every PLT stub objdump names, of .plt, IBT's .plt.sec and .plt.got, has
 * that name; the same from a stripped binary's separate debug file.
 * golden/perfdata's symbol_choice case checks the same against perf report.
 *
 * Exits 77 (skipped) without cc and binutils, or off x86-64 (the program's
 * aliases are x86-64 assembly).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "symbol/elfsyms.h"
#include "symbol/symbolizer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "unit_sh.h"

enum { SKIP = 77 };

static char dir[64];

/* One binary's tables: perf's (what is tested) and every symbol by name
 * (the module's own, for addresses). */
struct bin {
    struct ember_symbolizer *s;
    struct ember_symbol_module *m;
    const struct ember_symtab *all;
    const struct ember_symtab *perf; /* kept with m */
};

static void open_bin(struct bin *b, const char *name)
{
    char path[256];
    struct ember_diag d;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_int_equal(ember_symbolizer_new(&b->s), 0);
    assert_int_equal(ember_symbolizer_module(b->s, path, strlen(path), NULL, 0, &b->m, &d), 0);
    assert_int_equal(ember_symbol_module_symbols(b->m, &b->all), 0);
    assert_int_equal(ember_elfsyms_of(b->m, &b->perf), 0);
}

static void close_bin(struct bin *b)
{
    ember_symbolizer_free(b->s);
}

static uint64_t addr_of(const struct bin *b, const char *name)
{
    uint64_t a;
    if (ember_symtab_find(b->all, name, strlen(name), &a) != 0)
        fail_msg("no symbol %s", name);
    return a;
}

static void expect(const struct bin *b, uint64_t addr, const char *want)
{
    const struct ember_symtab_sym *sym;
    uint64_t off;
    if (ember_symtab_lookup(b->perf, addr, &sym, &off) != 0)
        fail_msg("%#" PRIx64 ": no symbol, expected %s", addr, want);
    if (strcmp(sym->name, want) != 0)
        fail_msg("%#" PRIx64 ": %s, expected %s", addr, sym->name, want);
}

/* Every address of the function, the label's included. */
static void check_label(const struct bin *b)
{
    const struct ember_symtab_sym *f;
    uint64_t start = addr_of(b, "label_outer"), off;
    assert_int_equal(ember_symtab_lookup(b->all, start, &f, &off), 0);
    assert_true(addr_of(b, "label_inside") > start && addr_of(b, "label_inside") < start + f->size);
    for (uint64_t a = start; a < start + f->size; a++)
        expect(b, a, "label_outer");
}

static void check_aliases(const struct bin *b)
{
    static const char *const pairs[][2] = {
        {"alias_local_impl", "alias_global"}, {"weak_longer_name", "strong"},
        {"__under_longer_name", "_under"},    {"len_short", "len_the_longest"},
        {"sized", "nosize_longer_name"},      {"func_typed", "notype_longer_name"},
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(*pairs); i++) {
        expect(b, addr_of(b, pairs[i][0]), pairs[i][1]);
        expect(b, addr_of(b, pairs[i][0]) + 10, pairs[i][1]);
    }
}

static void test_label_and_aliases(void **state)
{
    (void)state;
    struct bin b;
    open_bin(&b, "symchoice");
    check_label(&b);
    check_aliases(&b);
    close_bin(&b);
    open_bin(&b, "libsymver.so");
    expect(&b, addr_of(&b, "vfunc_impl"), "vfunc@@VER_2");
    close_bin(&b);
}

static void test_debug_file(void **state)
{
    (void)state;
    struct bin b;
    open_bin(&b, "symchoice.stripped");
    check_label(&b);
    check_aliases(&b);
    close_bin(&b);
}

/* Each stub objdump names "X@plt" is X@plt over its whole entry. */
static void check_plt(const char *name, int least)
{
    char cmd[512], line[512];
    snprintf(cmd, sizeof(cmd),
             "objdump -d --section=.plt --section=.plt.sec --section=.plt.got %s/%s", dir, name);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    struct bin b;
    open_bin(&b, name);
    int stubs = 0;
    while (fgets(line, sizeof(line), p)) {
        uint64_t at;
        char label[256];
        size_t len;
        if (sscanf(line, "%" SCNx64 " <%255[^>]>:", &at, label) != 2 || (len = strlen(label)) < 4 ||
            strcmp(label + len - 4, "@plt") != 0)
            continue;
        expect(&b, at, label);
        expect(&b, at + 7, label);
        stubs++;
    }
    assert_int_equal(pclose(p), 0);
    assert_true(stubs >= least);
    close_bin(&b);
}

static void test_plt_stubs(void **state)
{
    (void)state;
    check_plt("symchoice", 4); /* labs, printf, strtol, __cxa_finalize (.plt.got) */
    check_plt("symchoice_ibt", 4);
    check_plt("libsymver.so", 1);
}

static void build(const char *cmd)
{
    if (sh("cd '%s' && %s", dir, cmd) != 0)
        fail_msg("cannot build: %s", cmd);
}

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/ember-perf-elf-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    const char *data = EMBER_TEST_DATA;
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "cc -O2 -g -shared -fPIC -Wl,--version-script=%s/symver.map -o libsymver.so "
             "%s/symver.c && cc -O2 -g -fno-builtin -o symchoice %s/symchoice.c -L. -lsymver && "
             "cc -O2 -g -fno-builtin -fcf-protection=full -Wl,-z,ibtplt -o symchoice_ibt "
             "%s/symchoice.c -L. -lsymver",
             data, data, data, data);
    build(cmd);
    /* stripped, its symbols in a debug file found by .gnu_debuglink */
    build("objcopy --only-keep-debug symchoice symchoice.debug && objcopy --strip-all "
          "--add-gnu-debuglink=symchoice.debug symchoice symchoice.stripped");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return sh("rm -rf '%s'", dir) == 0 ? 0 : -1;
}

int main(void)
{
#ifndef __x86_64__
    printf("SKIP: the test program's aliases are x86-64 assembly\n");
    return SKIP;
#endif
    if (system("command -v cc >/dev/null && command -v objdump >/dev/null && "
               "command -v objcopy >/dev/null") != 0) {
        printf("SKIP: needs cc and binutils\n");
        return SKIP;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label_and_aliases),
        cmocka_unit_test(test_debug_file),
        cmocka_unit_test(test_plt_stubs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
