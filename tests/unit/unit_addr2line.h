/*
 * unit_addr2line.h - the symbolizer compared with binutils' addr2line -i -f
 * -C (and llvm-symbolizer's columns, when it is installed) at every address
 * of every function of a binary that nm lists with a size: the same frames,
 * innermost first, with the same names and locations, save where ember
 * differs on purpose (same_name, same_location say where).
 *
 * Invariant: a difference fails the test with the address and both
 * answers; a binary with under 30 addresses compared fails too.
 */
#ifndef EMBER_UNIT_ADDR2LINE_H
#define EMBER_UNIT_ADDR2LINE_H

#include "unit_elf.h"

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

#endif
