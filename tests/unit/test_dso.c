/*
 * test_dso.c - where perf finds a mapped object's symbols (symbol/dso.h):
 * a JIT map's lines (perf drops each line's last byte; malformed lines
 * and empty symbols are skipped) and the symbol at an address, the
 * build-id cache's paths under $PERF_BUILDID_DIR, this process's vDSO as
 * a file, a file's build-id as the symbolizer reads it, and perf's
 * symbols of this test's own binary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "symbol/dso.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_jit_map(void **state)
{
    (void)state;
    char path[] = "/tmp/test_dso_XXXXXX";
    close(mkstemp(path));
    write_file(path, "1000 10 jitted one\n"
                     "not a line\n"
                     "2000 0 empty\n"
                     "3000 20 last_without_newline!");
    struct ember_arena names;
    struct ember_symtab *t;
    const struct ember_symtab_sym *s;
    uint64_t off;
    ember_arena_init(&names);
    assert_int_equal(ember_dso_jit_symbols(path, &names, &t), 0);
    assert_int_equal(ember_symtab_lookup(t, 0x1008, &s, &off), 0);
    assert_string_equal(s->name, "jitted one");
    assert_int_equal(ember_symtab_lookup(t, 0x2000, &s, &off), -ENOENT);
    assert_int_equal(ember_symtab_lookup(t, 0x3010, &s, &off), 0);
    assert_string_equal(s->name, "last_without_newline");
    /* a JIT map's addresses are the process's: no module to go through */
    assert_string_equal(ember_dso_symbol_at(NULL, t, 0x1000, 0, 0x100f), "jitted one");
    assert_null(ember_dso_symbol_at(NULL, t, 0x1000, 0, 0x1010));
    ember_symtab_free(t);
    ember_arena_release(&names);
    unlink(path);
    assert_int_equal(ember_dso_jit_symbols(path, &names, &t), -ENOENT);
    assert_null(t);
}

static void test_cache_path(void **state)
{
    (void)state;
    static const uint8_t bid[3] = {0xab, 0xcd, 0x01};
    char dir[] = "/tmp/test_dso_XXXXXX", want[256], got[256], hex[7];
    assert_non_null(mkdtemp(dir));
    ember_dso_build_id_hex(hex, bid, sizeof(bid));
    assert_string_equal(hex, "abcd01");
    setenv("PERF_BUILDID_DIR", dir, 1);
    assert_false(ember_dso_cache_path(bid, sizeof(bid), "elf", got, sizeof(got)));
    snprintf(want, sizeof(want), "%s/.build-id", dir);
    mkdir(want, 0700);
    snprintf(want, sizeof(want), "%s/.build-id/ab", dir);
    mkdir(want, 0700);
    snprintf(want, sizeof(want), "%s/.build-id/ab/cd01", dir);
    mkdir(want, 0700);
    snprintf(want, sizeof(want), "%s/.build-id/ab/cd01/elf", dir);
    write_file(want, "");
    assert_true(ember_dso_cache_path(bid, sizeof(bid), "elf", got, sizeof(got)));
    assert_string_equal(got, want);
    assert_false(ember_dso_cache_path(bid, 0, "elf", got, sizeof(got)));
    unlink(want);
    for (int i = 0; i < 3; i++) {
        *strrchr(want, '/') = '\0';
        rmdir(want);
    }
    rmdir(dir);
    unsetenv("PERF_BUILDID_DIR");
}

/* The [vdso] mapping /proc/self/maps shows: its length, and *at. */
static size_t vdso_mapping(const unsigned char **at)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    assert_non_null(maps);
    char line[512];
    unsigned long lo = 0, hi = 0;
    while (fgets(line, sizeof(line), maps))
        if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
            break;
    fclose(maps);
    *at = (const unsigned char *)lo;
    return hi - lo;
}

/* The vDSO's copy is the whole mapping, byte for byte (as perf copies
 * it), though its length comes from its ELF header. */
static void test_vdso(void **state)
{
    (void)state;
    int fd = -1;
    char path[64];
    if (ember_dso_vdso_open(&fd, path, sizeof(path)) == -ENOENT)
        skip(); /* a kernel without a vDSO */
    const unsigned char *mapped;
    size_t len = vdso_mapping(&mapped);
    assert_true(len > 0);
    unsigned char *copy = malloc(len + 1);
    assert_non_null(copy);
    int rd = open(path, O_RDONLY);
    assert_true(rd >= 0);
    assert_int_equal(read(rd, copy, len + 1), (ssize_t)len);
    assert_memory_equal(copy, "\177ELF", 4);
    assert_memory_equal(copy, mapped, len);
    close(rd);
    close(fd);
    free(copy);
}

/* This binary's build-id as the symbolizer reads it, and perf's symbols
 * of it (the cache empty: the file itself), which name this function. */
static void test_own_binary(void **state)
{
    (void)state;
    struct ember_symbolizer *sym;
    struct ember_symbol_module *m;
    const struct ember_symtab *t, *again;
    struct ember_diag why;
    unsigned char id[20];
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    assert_true(n > 0);
    self[n] = '\0';
    int len = ember_dso_file_build_id(self, id, sizeof(id));
    assert_int_equal(ember_dso_file_build_id("/nonexistent", id, sizeof(id)), 0);
    assert_int_equal(ember_symbolizer_new(&sym), 0);
    setenv("PERF_BUILDID_DIR", "/nonexistent", 1);
    struct ember_dso_elf e = {self, len ? id : NULL, (size_t)len, false};
    assert_int_equal(ember_dso_elf_symbols(sym, &e, &m, &t, &why), 0);
    /* perf's symbols are read once, kept with the module */
    assert_int_equal(ember_dso_elf_symbols(sym, &e, &m, &again, &why), 0);
    assert_ptr_equal(again, t);
    const uint8_t *bits;
    assert_int_equal(ember_symbol_module_build_id(m, &bits), (size_t)len);
    assert_memory_equal(bits, id, (size_t)len);
    uint64_t addr;
    const struct ember_symtab_sym *s;
    uint64_t off;
    const struct ember_symtab *all;
    assert_int_equal(ember_symbol_module_symbols(m, &all), 0);
    assert_int_equal(ember_symtab_find(all, "test_own_binary", 15, &addr), 0);
    assert_int_equal(ember_symtab_lookup(t, addr, &s, &off), 0);
    assert_string_equal(s->name, "test_own_binary");
    ember_symbolizer_free(sym);
    unsetenv("PERF_BUILDID_DIR");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jit_map),
        cmocka_unit_test(test_cache_path),
        cmocka_unit_test(test_vdso),
        cmocka_unit_test(test_own_binary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
