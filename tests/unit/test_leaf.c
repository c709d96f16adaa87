/*
 * test_leaf.c - the caller a frame-pointer walk skips (symbol/leaf.h),
 * found from the CFI and the top of the stack, on a program built here
 * with cc (skipped without one, or off x86-64).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "symbol/leaf.h"

#include <gelf.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A frameless leaf and a caller with a frame, as GCC makes them at -O2
 * with frame pointers (no CET: the caller starts with push %rbp). */
static const char leaf_source[] =
    "__attribute__((noinline)) unsigned long leaf(unsigned long n) {\n"
    "  unsigned long s = 0;\n"
    "  for (unsigned long i = 0; i < n; i++) s += (i * i) ^ (s >> 3);\n"
    "  return s;\n"
    "}\n"
    "__attribute__((noinline)) unsigned long caller(unsigned long n) { return leaf(n) + 1; }\n"
    "int main(int c, char **v) { (void)v; return (int)caller((unsigned long)c); }\n";

static uint64_t symbol(const char *path, const char *name)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    uint64_t value = 0;
    for (Elf_Scn *scn = NULL; !value && (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr sh;
        Elf_Data *data = elf_getdata(scn, NULL);
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !data)
            continue;
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            const char *n =
                gelf_getsym(data, (int)i, &sym) ? elf_strptr(elf, sh.sh_link, sym.st_name) : NULL;
            if (n && strcmp(n, name) == 0)
                value = sym.st_value;
        }
    }
    elf_end(elf);
    close(fd);
    assert_true(value != 0);
    return value;
}

static void leaf_caller(void **state)
{
    (void)state;
#if !defined(__x86_64__)
    skip();
#endif
    char dir[] = "/tmp/test_leaf_XXXXXX", src[64], bin[64], cmd[256];
    assert_non_null(mkdtemp(dir));
    snprintf(src, sizeof(src), "%s/leaf.c", dir);
    snprintf(bin, sizeof(bin), "%s/leaf", dir);
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fputs(leaf_source, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "cc -O2 -fno-omit-frame-pointer -fcf-protection=none -o %s %s", bin,
             src);
    int built = system(cmd) == 0;
    if (!built) {
        unlink(src);
        rmdir(dir);
        skip();
    }
    uint64_t leaf = symbol(bin, "leaf"), caller = symbol(bin, "caller"), ret = 0;
    struct ember_leaf_cfi *c = NULL;
    assert_int_equal(ember_leaf_cfi_open(bin, &c), 0);
    const uint64_t stack[2] = {0x1111, 0x2222};
    const unsigned char *top = (const unsigned char *)stack;
    /* in the frameless leaf: the return address is the top word */
    assert_int_equal(ember_leaf_caller(c, leaf + 4, top, sizeof(stack), &ret), 1);
    assert_int_equal(ret, 0x1111);
    /* in the caller's prologue, after push %rbp: the word under it */
    assert_int_equal(ember_leaf_caller(c, caller + 1, top, sizeof(stack), &ret), 1);
    assert_int_equal(ret, 0x2222);
    /* once on %rbp, the walk has it */
    assert_int_equal(ember_leaf_caller(c, caller + 4, top, sizeof(stack), &ret), 0);
    /* a copy too short to hold it */
    assert_int_equal(ember_leaf_caller(c, caller + 1, top, 8, &ret), -ERANGE);
    ember_leaf_cfi_close(c);
    assert_int_equal(ember_leaf_cfi_open(src, &c), -EINVAL);
    unlink(src);
    unlink(bin);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(leaf_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
