/*
 * test_symbol.c - the symbolizer against binutils on real binaries built
 * here: every address of every function of a C program with inlined
 * functions (PIE and not), a C++ program and a shared library gives the
 * frames addr2line -i -f -C prints (and the columns llvm-symbolizer
 * prints, when it is installed); ELF symbols agree with nm; separate debug
 * files are found by build-id in a directory of the test's own and by
 * .gnu_debuglink; a changed binary is a build-id mismatch; results are
 * shared by build-id; a process address in a mapping of a library (dlopen
 * here) gives its file address.
 *
 * Exits 77 (skipped) when no C compiler or binutils are installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "symbol/symbolizer.h"
#include "symbol/symtab.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
static char *capture(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
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

static void path_of(char *out, size_t cap, const char *name)
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
static size_t nm_symbols(const char *bin, const char *flags, struct nm_sym **out)
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

static struct nm_sym nm_find(const char *bin, const char *name)
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

static bool is_code(char type)
{
    return type == 'T' || type == 't' || type == 'W' || type == 'w' || type == 'i';
}

/* One address's frames by a reference tool, innermost first. */
struct ref_chain {
    uint64_t addr;
    size_t n;
    char func[16][512];
    char loc[16][512]; /* "file:line", or "file:line:column" */
};

/* Reads "0xADDR" headers followed by (function, location) line pairs. */
static size_t parse_chains(char *text, struct ref_chain *chains, size_t max)
{
    size_t n = 0;
    char *save;
    bool want_loc = false;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "0x", 2) == 0 && !want_loc) {
            assert_true(n < max);
            chains[n] = (struct ref_chain){.addr = strtoull(line, NULL, 16)};
            n++;
            continue;
        }
        struct ref_chain *c = &chains[n - 1];
        if (!want_loc) {
            assert_true(c->n < 16);
            snprintf(c->func[c->n], sizeof(c->func[0]), "%s", line);
        } else {
            char *disc = strstr(line, " (discriminator");
            if (disc)
                *disc = '\0';
            if (strcmp(line, "??:?") == 0)
                strcpy(line, "??:0");
            snprintf(c->loc[c->n++], sizeof(c->loc[0]), "%s", line);
        }
        want_loc = !want_loc;
    }
    return n;
}

/* addr2line -i -f -C (or llvm-symbolizer) on every address of [lo, hi). */
static size_t reference(const char *tool, const char *bin, uint64_t lo, uint64_t hi,
                        struct ref_chain **out)
{
    char input[256];
    path_of(input, sizeof(input), "addrs.txt");
    FILE *f = fopen(input, "w");
    assert_non_null(f);
    for (uint64_t a = lo; a < hi; a++)
        fprintf(f, "0x%" PRIx64 "\n", a);
    fclose(f);
    char *text;
    if (strcmp(tool, "addr2line") == 0)
        text = capture("addr2line -a -i -f -C -e '%s' < '%s'", bin, input);
    else /* the address echoed, then frames with columns */
        text = capture("llvm-symbolizer --obj='%s' --inlining --print-address < '%s'", bin, input);
    struct ref_chain *chains = calloc(hi - lo, sizeof(*chains));
    size_t n = parse_chains(text, chains, hi - lo);
    free(text);
    *out = chains;
    return n;
}

/* ---- comparing */

static const struct ember_symbol_chain *resolve(struct ember_symbolizer *s,
                                                struct ember_symbol_module *m, uint64_t addr)
{
    const struct ember_symbol_chain *c = NULL;
    int err = ember_symbolizer_resolve(s, m, addr, &c);
    if (err)
        fail_msg("%s at 0x%" PRIx64 ": %s", ember_symbol_module_path(m), addr, strerror(-err));
    return c;
}

/*
 * Where our names differ from addr2line's on purpose:
 * - a Rust symbol is left for the --demangle transform (addr2line -C
 *   demangles it);
 * - a function without a DWARF linkage name (C functions, C++ ones of an
 *   anonymous namespace) is named from DWARF, qualified by its namespaces,
 *   as perf names it: addr2line names such a function, when it is the
 *   outermost or the innermost frame, by the ELF symbol around the address
 *   (elf: demangled, with its parameters; the outer function's for an
 *   inlined frame), and the frames between by their DWARF name alone.
 */
static bool same_name(const char *ours, const char *ref, const char *elf, bool end)
{
    size_t n = strlen(ours), r = strlen(ref);
    return strcmp(ours, ref) == 0 ||
           (strcmp(ours, "_ZN4test3foo17h0123456789abcdefE") == 0 &&
            strcmp(ref, "test::foo") == 0) ||
           (end && strcmp(ref, elf) == 0) ||
           (n > r + 2 && strcmp(ours + n - r, ref) == 0 && strncmp(ours + n - r - 2, "::", 2) == 0);
}

/* binutils 2.40 names the file of LTO'd code "<artificial>" (file 0 of
 * the DWARF 5 line table; the line program's files start at 1): the line
 * is compared then, the file with llvm-symbolizer's. */
static bool same_location(const char *ours, const char *ref)
{
    const char *art = strstr(ref, "/<artificial>:");
    const char *colon = strrchr(ours, ':');
    return strcmp(ours, ref) == 0 ||
           (art && colon && strcmp(colon + 1, art + strlen("/<artificial>:")) == 0);
}

static void location(const struct ember_symbol_frame *f, bool column, char *out, size_t cap)
{
    if (column)
        snprintf(out, cap, "%s:%u:%u", f->file ? f->file : "??", (unsigned)f->line,
                 (unsigned)f->column);
    else
        snprintf(out, cap, "%s:%u", f->file ? f->file : "??", (unsigned)f->line);
}

/* Our chain at ref->addr is the reference's, frame by frame; elf is the
 * demangled ELF symbol around it. */
static void same_chain(struct ember_symbolizer *s, struct ember_symbol_module *m,
                       const struct ref_chain *ref, const char *elf, bool names, bool column)
{
    const struct ember_symbol_chain *c = resolve(s, m, ref->addr);
    if (c->count != ref->n)
        fail_msg("0x%" PRIx64 ": %u frames, the reference %zu (innermost %s)", ref->addr,
                 (unsigned)c->count, ref->n, ref->func[0]);
    for (size_t k = 0; k < ref->n; k++) {
        const struct ember_symbol_frame *f = &c->frames[c->count - 1 - k];
        char loc[600];
        location(f, column, loc, sizeof(loc));
        if ((names && !same_name(f->function, ref->func[k], elf, k == 0 || k + 1 == ref->n)) ||
            !same_location(loc, ref->loc[k]))
            fail_msg("0x%" PRIx64 " frame %zu: %s %s, the reference %s %s", ref->addr, k,
                     f->function, loc, ref->func[k], ref->loc[k]);
        assert_int_equal(f->inlined, k + 1 < ref->n);
    }
}

static int compare_range(struct ember_symbolizer *s, struct ember_symbol_module *m, const char *bin,
                         const struct nm_sym *elf)
{
    struct ref_chain *ref;
    uint64_t lo = elf->addr, hi = elf->addr + elf->size;
    size_t n = reference("addr2line", bin, lo, hi, &ref);
    assert_int_equal(n, hi - lo);
    for (size_t i = 0; i < n; i++)
        same_chain(s, m, &ref[i], elf->name, true, false);
    free(ref);
    if (!have_llvm)
        return (int)n;
    n = reference("llvm-symbolizer", bin, lo, hi, &ref);
    assert_int_equal(n, hi - lo);
    for (size_t i = 0; i < n; i++)
        same_chain(s, m, &ref[i], elf->name, false, true);
    free(ref);
    return (int)n;
}

/* Every address of every function of bin with a size (crt's functions
 * included: no DWARF there, addr2line names their ELF symbol, as we do). */
static void compare_all_functions(struct ember_symbolizer *s, const char *bin, const char *ref_bin)
{
    struct ember_symbol_module *m;
    struct ember_diag d;
    assert_int_equal(ember_symbolizer_module(s, bin, strlen(bin), NULL, 0, &m, &d), 0);
    struct nm_sym *syms;
    size_t n = nm_symbols(ref_bin, "-C", &syms), addrs = 0;
    for (size_t i = 0; i < n; i++)
        if (is_code(syms[i].type) && syms[i].size)
            addrs += (size_t)compare_range(s, m, ref_bin, &syms[i]);
    free(syms);
    if (addrs < 30)
        fail_msg("%s: %zu addresses", bin, addrs);
}

/* ---- the binaries */

static void build(const char *what)
{
    if (sh("cd '%s' && %s", dir, what) != 0)
        fail_msg("cannot build: %s", what);
}

static void build_id_of(const char *bin, char *hex, size_t cap)
{
    char *text = capture("readelf -n '%s' | awk '/Build ID/ {print $3}'", bin);
    text[strcspn(text, "\n")] = '\0';
    snprintf(hex, cap, "%s", text);
    free(text);
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

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/ember-symbol-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    write_file("prog.c", prog_src);
    write_file("cxx.cpp", cxx_src);
    write_file("lib.c", lib_src);
    build("cc -O2 -g -o prog \"$PWD/prog.c\"");
    build("cc -O2 -g -no-pie -o prog_nopie \"$PWD/prog.c\"");
    build("cc -O2 -g -Wl,--build-id=none -o prog_noid \"$PWD/prog.c\"");
    build("cc -O2 -g -fPIC -shared -o lib.so \"$PWD/lib.c\"");
    /* the same program changed: another build-id */
    build("sed 's/2654435761u/2654435769u/' prog.c > prog2.c && cc -O2 -g -o prog2 prog2.c");
    build("cp prog prog_copy && cp prog_noid prog_noid_copy");
    split_debug("prog", "dbg", "--strip-debug");
    split_debug("lib.so", "dbg", "--strip-all");
    /* no build-id: found by .gnu_debuglink, next to the binary */
    build("objcopy --only-keep-debug prog_noid prog_noid.debug && objcopy --strip-debug "
          "--add-gnu-debuglink=prog_noid.debug prog_noid prog_noid.linked");
    have_cxx = sh("command -v c++ >/dev/null") == 0;
    build("cc -O2 -g -flto -o prog_lto \"$PWD/prog.c\"");
    if (have_cxx) {
        build("c++ -O2 -g -o cxx \"$PWD/cxx.cpp\"");
        build("c++ -O2 -g -flto -o cxx_lto \"$PWD/cxx.cpp\"");
    }
    have_llvm = sh("command -v llvm-symbolizer >/dev/null") == 0;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (*dir)
        sh("rm -rf '%s'", dir);
    return 0;
}

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

/* ---- the tests */

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
    if (system("command -v cc >/dev/null && command -v addr2line >/dev/null && "
               "command -v objcopy >/dev/null && command -v readelf >/dev/null") != 0) {
        printf("SKIP: needs cc and binutils\n");
        return SKIP;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symtab_rules),
        cmocka_unit_test(test_pie_against_addr2line),
        cmocka_unit_test(test_not_pie_against_addr2line),
        cmocka_unit_test(test_cxx_against_addr2line),
        cmocka_unit_test(test_lto_against_addr2line),
        cmocka_unit_test(test_shared_library_against_addr2line),
        cmocka_unit_test(test_debug_file_by_build_id),
        cmocka_unit_test(test_debug_file_by_debuglink),
        cmocka_unit_test(test_elf_symbols_against_nm),
        cmocka_unit_test(test_names_left_for_the_demangler),
        cmocka_unit_test(test_build_id_mismatch),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_memo_by_build_id),
        cmocka_unit_test(test_perf_lines),
        cmocka_unit_test(test_process_address),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
