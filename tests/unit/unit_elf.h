/*
 * unit_elf.h - the programs the lib/symbol unit tests build and read, and
 * what binutils says of them: a C program with inlined functions, a C++
 * program and a shared library, written into a directory of the test's own
 * and built there by the recipes each test names (PIE and not, LTO, with
 * and without a build-id, stripped with the debug info apart).
 *
 * Invariants: unit_elf_setup() makes the directory and builds only what it
 * is asked for, in the order asked (a recipe's inputs first);
 * unit_elf_teardown() removes it. A test that uses these exits 77
 * (skipped) when unit_elf_missing_tools() says cc or binutils are missing.
 */
#ifndef EMBER_UNIT_ELF_H
#define EMBER_UNIT_ELF_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "symbol/symbolizer.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_sh.h"

enum { SKIP = 77 };

static const char prog_src[] =
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "static inline __attribute__((always_inline)) unsigned leaf_mix(unsigned x)\n"
    "{\n"
    "    return (x ^ (x >> 7)) * 2654435761u;\n"
    "}\n"
    "static inline __attribute__((always_inline)) unsigned middle_step(unsigned x, int n)\n"
    "{\n"
    "    for (int i = 0; i < n; i++)\n"
    "        x = leaf_mix(x + (unsigned)i);\n"
    "    return x;\n"
    "}\n"
    "__attribute__((noinline)) unsigned outer_work(unsigned seed, int rounds)\n"
    "{\n"
    "    unsigned x = seed;\n"
    "    for (int r = 0; r < rounds; r++)\n"
    "        x = middle_step(x, r & 15);\n"
    "    return x;\n"
    "}\n"
    "void rust_like(void) __asm__(\"_ZN4test3foo17h0123456789abcdefE\");\n"
    "__attribute__((noinline)) void rust_like(void) { puts(\"r\"); }\n"
    "void ocaml_like(void) __asm__(\"camlTest__foo_123\");\n"
    "__attribute__((noinline)) void ocaml_like(void) { puts(\"o\"); }\n"
    "int table[64] = {1};\n"
    "__attribute__((noinline)) int apply(int (*f)(int), int x) { return f(x) + 1; }\n"
    "__attribute__((noinline)) int with_nested(int k)\n"
    "{\n"
    "    int nested(int v) { return v * 3 + (v >> 2); }\n"
    "    return apply(nested, k);\n"
    "}\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    rust_like();\n"
    "    with_nested(argc);\n"
    "    ocaml_like();\n"
    "    printf(\"%u\\n\", outer_work(argc > 1 ? (unsigned)atoi(argv[1]) : 1u, table[0]));\n"
    "    return 0;\n"
    "}\n";

static const char cxx_src[] =
    "#include <cstdio>\n"
    "#include <functional>\n"
    "#include <vector>\n"
    "namespace ns {\n"
    "template <typename T> struct Box {\n"
    "    T v;\n"
    "    static inline T helper(T x) { return x * 2; }\n"
    "    __attribute__((noinline)) T twice(T x) const { return helper(x) + v; }\n"
    "};\n"
    "}\n"
    "namespace {\n"
    "__attribute__((noinline)) int hidden(int x)\n"
    "{\n"
    "    std::vector<int> v(x, 1);\n"
    "    int s = 0;\n"
    "    for (int i : v)\n"
    "        s += i;\n"
    "    return s;\n"
    "}\n"
    "inline __attribute__((always_inline)) int hidden_inline(int x) { return x * 3 + (x >> 2); }\n"
    "struct {\n"
    "    __attribute__((noinline)) int operator()(int x) const { return x + 5; }\n"
    "} unnamed;\n"
    "}\n"
    "__attribute__((noinline)) int overloaded(int x) { return hidden(x) + 1; }\n"
    "__attribute__((noinline)) double overloaded(double x) { return x * 1.5; }\n"
    "__attribute__((noinline)) int with_lambda(int n)\n"
    "{\n"
    "    int s = 0;\n"
    "    auto f = [&](int i) __attribute__((always_inline)) { return hidden_inline(i) + s; };\n"
    "    for (int i = 0; i < n; i++)\n"
    "        s += f(i);\n"
    "    return s;\n"
    "}\n"
    "int main(int argc, char **)\n"
    "{\n"
    "    ns::Box<int> b{argc};\n"
    "    std::function<int(int)> g = [&](int r) { return with_lambda(r) + argc; };\n"
    "    std::printf(\"%d %d %f %d %d\\n\", b.twice(argc), overloaded(argc), overloaded(argc * "
    "1.0),\n"
    "                g(argc), unnamed(argc));\n"
    "}\n";

static const char lib_src[] =
    "struct acc { unsigned sum, mix; };\n"
    "static inline __attribute__((always_inline)) unsigned lib_leaf(unsigned x)\n"
    "{\n"
    "    return (x * 2654435761u) ^ (x >> 13);\n"
    "}\n"
    "static inline __attribute__((always_inline)) void lib_step(struct acc *a, unsigned i)\n"
    "{\n"
    "    a->sum += lib_leaf(i ^ a->mix);\n"
    "    a->mix = a->mix * 31 + (a->sum >> 3);\n"
    "}\n"
    "__attribute__((noinline)) unsigned lib_work(unsigned n)\n"
    "{\n"
    "    struct acc a = {0, 7};\n"
    "    for (unsigned i = 0; i < n; i++)\n"
    "        lib_step(&a, i);\n"
    "    return a.sum ^ a.mix;\n"
    "}\n"
    "unsigned lib_entry(unsigned n) { return lib_work(n) + lib_work(n / 2); }\n"
    "unsigned lib_table[32] = {1};\n";

static char dir[64]; /* the test's own directory, removed at the end */
static bool have_cxx, have_llvm;

/* ---- running binutils */

/* The whole output of a command (malloc()ed). */
static char *capture(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static char *capture(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t len = 0, cap = 4096;
    char *out = malloc(cap);
    size_t got;
    while ((got = fread(out + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 4096)
            out = realloc(out, cap *= 2);
    }
    out[len] = '\0';
    assert_int_equal(pclose(p), 0);
    return out;
}

static __attribute__((unused)) void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static void write_file(const char *name, const char *text)
{
    char path[256];
    path_of(path, sizeof(path), name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* ---- what binutils says */

struct nm_sym {
    char name[256];
    char type;
    uint64_t addr, size;
};

/* nm -S --defined-only: the symbols with a size. */
static __attribute__((unused)) size_t nm_symbols(const char *bin, const char *flags,
                                                 struct nm_sym **out)
{
    char *text = capture("nm -S --defined-only %s '%s'", flags, bin);
    size_t n = 0, cap = 64;
    struct nm_sym *syms = malloc(cap * sizeof(*syms));
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        struct nm_sym s;
        if (sscanf(line, "%" SCNx64 " %" SCNx64 " %c %255[^\n]", &s.addr, &s.size, &s.type,
                   s.name) != 4)
            continue;
        if (n == cap)
            syms = realloc(syms, (cap *= 2) * sizeof(*syms));
        syms[n++] = s;
    }
    free(text);
    *out = syms;
    return n;
}

static __attribute__((unused)) struct nm_sym nm_find(const char *bin, const char *name)
{
    struct nm_sym *syms, found = {0};
    size_t n = nm_symbols(bin, "", &syms);
    for (size_t i = 0; i < n; i++)
        if (strcmp(syms[i].name, name) == 0)
            found = syms[i];
    free(syms);
    if (!found.size)
        fail_msg("%s: no symbol %s", bin, name);
    return found;
}

static __attribute__((unused)) void build_id_of(const char *bin, char *hex, size_t cap)
{
    char *text = capture("readelf -n '%s' | awk '/Build ID/ {print $3}'", bin);
    text[strcspn(text, "\n")] = '\0';
    snprintf(hex, cap, "%s", text);
    free(text);
}

/* ---- the binaries */

static void build(const char *what)
{
    if (sh("cd '%s' && %s", dir, what) != 0)
        fail_msg("cannot build: %s", what);
}

/* A copy of name's debug info under dbgdir/.build-id/xx/yyyy.debug, and
 * name.stripped without it. */
static void split_debug(const char *name, const char *dbgdir, const char *strip)
{
    char bin[256], id[128];
    path_of(bin, sizeof(bin), name);
    build_id_of(bin, id, sizeof(id));
    assert_true(strlen(id) > 2);
    if (sh("cd '%s' && mkdir -p %s/.build-id/%.2s && objcopy --only-keep-debug %s "
           "%s/.build-id/%.2s/%s.debug && objcopy %s %s %s.stripped",
           dir, dbgdir, id, name, dbgdir, id, id + 2, strip, name, name) != 0)
        fail_msg("cannot split the debug info of %s", name);
}

/* How each binary is made in dir: a command, or (how NULL) NAME.stripped
 * split from NAME with its debug info in dbg/.build-id. */
static const struct unit_elf_recipe {
    const char *name, *how, *strip;
    bool cxx; /* skipped without a C++ compiler */
} unit_elf_recipes[] = {
    {"prog", "cc -O2 -g -o prog \"$PWD/prog.c\"", NULL, false},
    {"prog_nopie", "cc -O2 -g -no-pie -o prog_nopie \"$PWD/prog.c\"", NULL, false},
    {"prog_noid", "cc -O2 -g -Wl,--build-id=none -o prog_noid \"$PWD/prog.c\"", NULL, false},
    {"lib.so", "cc -O2 -g -fPIC -shared -o lib.so \"$PWD/lib.c\"", NULL, false},
    /* the same program changed: another build-id */
    {"prog2", "sed 's/2654435761u/2654435769u/' prog.c > prog2.c && cc -O2 -g -o prog2 prog2.c",
     NULL, false},
    {"prog_copy", "cp prog prog_copy", NULL, false},
    {"prog_noid_copy", "cp prog_noid prog_noid_copy", NULL, false},
    {"prog.stripped", NULL, "--strip-debug", false},
    {"lib.so.stripped", NULL, "--strip-all", false},
    /* no build-id: found by .gnu_debuglink, next to the binary */
    {"prog_noid.linked",
     "objcopy --only-keep-debug prog_noid prog_noid.debug && objcopy --strip-debug "
     "--add-gnu-debuglink=prog_noid.debug prog_noid prog_noid.linked",
     NULL, false},
    {"prog_lto", "cc -O2 -g -flto -o prog_lto \"$PWD/prog.c\"", NULL, false},
    {"cxx", "c++ -O2 -g -o cxx \"$PWD/cxx.cpp\"", NULL, true},
    {"cxx_lto", "c++ -O2 -g -flto -o cxx_lto \"$PWD/cxx.cpp\"", NULL, true},
};

static void unit_elf_build(const char *name)
{
    for (size_t i = 0; i < sizeof(unit_elf_recipes) / sizeof(*unit_elf_recipes); i++) {
        const struct unit_elf_recipe *r = &unit_elf_recipes[i];
        if (strcmp(r->name, name) != 0)
            continue;
        if (r->cxx && !have_cxx)
            return;
        if (r->how) {
            build(r->how);
        } else {
            char from[64];
            snprintf(from, sizeof(from), "%.*s", (int)(strlen(name) - strlen(".stripped")), name);
            split_debug(from, "dbg", r->strip);
        }
        return;
    }
    fail_msg("no recipe for %s", name);
}

/* The test's directory with the sources, and the binaries named (a NULL
 * ends the list) built there. */
static int unit_elf_setup(const char *const *names)
{
    strcpy(dir, "/tmp/ember-symbol-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    write_file("prog.c", prog_src);
    write_file("cxx.cpp", cxx_src);
    write_file("lib.c", lib_src);
    have_cxx = sh("command -v c++ >/dev/null") == 0;
    have_llvm = sh("command -v llvm-symbolizer >/dev/null") == 0;
    for (; *names; names++)
        unit_elf_build(*names);
    return 0;
}

static int unit_elf_teardown(void **state)
{
    (void)state;
    if (*dir)
        sh("rm -rf '%s'", dir);
    return 0;
}

static bool unit_elf_missing_tools(void)
{
    if (system("command -v cc >/dev/null && command -v addr2line >/dev/null && "
               "command -v objcopy >/dev/null && command -v readelf >/dev/null") == 0)
        return false;
    printf("SKIP: needs cc and binutils\n");
    return true;
}

/* ---- the symbolizer */

/* A symbolizer whose debuginfo path is dir/debug_dir (none: the default). */
static struct ember_symbolizer *new_symbolizer(const char *debug_dir)
{
    struct ember_symbolizer *s;
    assert_int_equal(ember_symbolizer_new(&s), 0);
    if (debug_dir) {
        char path[256];
        snprintf(path, sizeof(path), ":%s/%s", dir, debug_dir);
        assert_int_equal(ember_symbolizer_set_debuginfo_path(s, path), 0);
    }
    return s;
}

static __attribute__((unused)) const struct ember_symbol_chain *
resolve(struct ember_symbolizer *s, struct ember_symbol_module *m, uint64_t addr)
{
    const struct ember_symbol_chain *c = NULL;
    int err = ember_symbolizer_resolve(s, m, addr, &c);
    if (err)
        fail_msg("%s at 0x%" PRIx64 ": %s", ember_symbol_module_path(m), addr, strerror(-err));
    return c;
}

#endif
