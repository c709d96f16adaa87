/*
 * symbol_bench.c - addresses per second of the symbolizer on real binaries:
 * the ELF symbol lookups by bisection against the linear scans they
 * replace, then whole resolutions (DWARF frames and inline chains) cold and
 * memoized, and perf script's "func+0xOFF" lines.
 *
 * usage: symbol_bench BINARY [ADDRESSES_PER_FUNCTION]
 *
 * The addresses are spread over every sized function of BINARY, each one
 * distinct, in a shuffled order. "before" is what ember did, and what
 * libdwfl does, per address: dwfl_module_addrinfo scans the symbol table
 * for an address, and inline.c scanned it for a name. Each method runs
 * for at most about a second; the lookups are checked to agree.
 */
#include "symbol/symbolizer.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct func {
    const char *name;
    uint64_t addr, size;
};

struct probe {
    uint64_t addr; /* file address */
    size_t func;
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void report(const char *what, size_t n, double seconds, double base)
{
    double rate = n / seconds;
    printf("  %-58s %12.0f addresses/s", what, rate);
    if (base > 0)
        printf("  (%.0fx)", rate / base);
    printf("\n");
}

/* The sized functions of the table the symbolizer reads. */
static size_t functions(Dwfl_Module *mod, uint64_t bias, struct func **out)
{
    int n = dwfl_module_getsymtab(mod);
    struct func *f = calloc(n > 0 ? (size_t)n : 1, sizeof(*f));
    size_t k = 0;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
        if (name && *name && GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_size &&
            shndx != SHN_UNDEF)
            f[k++] = (struct func){name, addr - bias, sym.st_size};
    }
    *out = f;
    return k;
}

static size_t probes(const struct func *f, size_t nf, unsigned per, struct probe **out)
{
    struct probe *p = malloc((nf * per + 1) * sizeof(*p));
    size_t n = 0;
    for (size_t i = 0; i < nf; i++)
        for (unsigned k = 0; k < per && k < f[i].size; k++)
            p[n++] = (struct probe){f[i].addr + f[i].size * k / per, i};
    uint64_t x = 88172645463325252ull; /* xorshift: the same order every run */
    for (size_t i = n; i > 1; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t j = x % i;
        struct probe t = p[i - 1];
        p[i - 1] = p[j];
        p[j] = t;
    }
    *out = p;
    return n;
}

/* inline.c's symbol_value, as it was: a scan of the table per name. */
static bool linear_value(Dwfl_Module *mod, const char *name, size_t len, GElf_Addr *value)
{
    int n = dwfl_module_getsymtab(mod);
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        const char *nm = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
        if (nm && strlen(nm) == len && memcmp(nm, name, len) == 0 && sym.st_value) {
            *value = addr;
            return true;
        }
    }
    return false;
}

static double addr_linear(Dwfl_Module *mod, uint64_t bias, const struct probe *p, size_t n,
                          const struct ember_symtab *t, size_t *done)
{
    double t0 = now(), t1 = t0;
    size_t i = 0, disagree = 0;
    for (; i < n && (i % 64 || (t1 = now()) - t0 < 1.0); i++) {
        GElf_Off off;
        GElf_Sym sym;
        GElf_Addr start = p[i].addr + bias;
        const char *name = dwfl_module_addrinfo(mod, start, &off, &sym, NULL, NULL, NULL);
        const struct ember_symtab_sym *s;
        uint64_t o;
        if (!name || ember_symtab_lookup(t, p[i].addr, &s, &o) != 0 ||
            s->addr != start - off - bias)
            disagree++;
    }
    *done = i;
    if (disagree)
        printf("  !! libdwfl and the sorted table disagree on %zu of %zu addresses\n", disagree, i);
    return now() - t0;
}

static double addr_bisect(const struct ember_symtab *t, const struct probe *p, size_t n,
                          const struct func *f)
{
    double t0 = now();
    size_t missed = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ember_symtab_sym *s;
        uint64_t o;
        missed += ember_symtab_lookup(t, p[i].addr, &s, &o) != 0 || s->addr > f[p[i].func].addr + o;
    }
    double dt = now() - t0;
    if (missed)
        printf("  !! %zu addresses not found\n", missed);
    return dt;
}

static double name_linear(Dwfl_Module *mod, uint64_t bias, const struct probe *p, size_t n,
                          const struct func *f, size_t *done)
{
    double t0 = now(), t1 = t0;
    size_t i = 0, wrong = 0;
    for (; i < n && (i % 16 || (t1 = now()) - t0 < 1.0); i++) {
        const struct func *fn = &f[p[i].func];
        GElf_Addr v;
        wrong += !linear_value(mod, fn->name, strlen(fn->name), &v) || v - bias != fn->addr;
    }
    *done = i;
    (void)wrong; /* a name defined twice answers its first definition */
    return now() - t0;
}

static double name_bisect(const struct ember_symtab *t, const struct probe *p, size_t n,
                          const struct func *f, Dwfl_Module *mod, uint64_t bias)
{
    double t0 = now();
    size_t missed = 0;
    for (size_t i = 0; i < n; i++) {
        const struct func *fn = &f[p[i].func];
        uint64_t v;
        missed += ember_symtab_find(t, fn->name, strlen(fn->name), &v) != 0;
    }
    double dt = now() - t0;
    /* the same answers as the scan, on a sample */
    for (size_t i = 0; i < n && i < 200; i++) {
        const struct func *fn = &f[p[i].func];
        uint64_t v;
        GElf_Addr w;
        if (ember_symtab_find(t, fn->name, strlen(fn->name), &v) == 0 &&
            linear_value(mod, fn->name, strlen(fn->name), &w) && v != w - bias)
            missed++;
    }
    if (missed)
        printf("  !! %zu names answered differently\n", missed);
    return dt;
}

static double resolve_all(struct ember_symbolizer *s, struct ember_symbol_module *m,
                          const struct probe *p, size_t n, size_t *dwarf, size_t *frames)
{
    double t0 = now();
    *dwarf = *frames = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ember_symbol_chain *c;
        if (ember_symbolizer_resolve(s, m, p[i].addr, &c) == 0) {
            *dwarf += c->from_dwarf;
            *frames += c->count;
        }
    }
    return now() - t0;
}

/* perf script's frame lines for a PIE: runtime pc, "func+0xOFF". */
static double resolve_perf(struct ember_symbolizer *s, const char *path, const struct probe *p,
                           size_t n, const struct func *f)
{
    double t0 = now();
    for (size_t i = 0; i < n; i++) {
        char pc[32], sym[512];
        const struct func *fn = &f[p[i].func];
        int pl = snprintf(pc, sizeof(pc), "%" PRIx64, 0x7f0000000000 + p[i].addr);
        int sl = snprintf(sym, sizeof(sym), "%s+0x%" PRIx64, fn->name, p[i].addr - fn->addr);
        const struct ember_symbol_chain *c;
        if (sl < (int)sizeof(sym))
            ember_symbolizer_resolve_perf(s, path, strlen(path), pc, (size_t)pl, sym, (size_t)sl,
                                          &c);
    }
    return now() - t0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: symbol_bench BINARY [ADDRESSES_PER_FUNCTION]\n");
        return 2;
    }
    const char *path = argv[1];
    unsigned per = argc > 2 ? (unsigned)atoi(argv[2]) : 16;
    struct ember_symbolizer *s;
    struct ember_symbol_module *m;
    struct ember_diag d;
    if (ember_symbolizer_new(&s) != 0)
        return 1;
    if (ember_symbolizer_module(s, path, strlen(path), NULL, 0, &m, &d) != 0) {
        fprintf(stderr, "%s: %s\n", d.file, d.msg);
        return 1;
    }
    uint64_t bias;
    Dwfl_Module *mod = ember_symbol_module_dwfl(m, &bias);
    struct func *f;
    struct probe *p;
    size_t nf = functions(mod, bias, &f), n = probes(f, nf, per, &p), done;
    double t0 = now();
    const struct ember_symtab *t;
    if (ember_symbol_module_symbols(m, &t) != 0)
        return 1;
    printf("%s: %d symbols, %zu sized functions, %zu addresses; tables sorted in %.1f ms\n", path,
           dwfl_module_getsymtab(mod), nf, n, (now() - t0) * 1e3);

    double lin = addr_linear(mod, bias, p, n, t, &done);
    double base = done / lin;
    report("address -> symbol, before: dwfl_module_addrinfo (scan)", done, lin, 0);
    report("address -> symbol, after: ember_symtab_lookup (bisection)", n, addr_bisect(t, p, n, f),
           base);
    lin = name_linear(mod, bias, p, n, f, &done);
    base = done / lin;
    report("name -> address, before: inline.c's scan of the symtab", done, lin, 0);
    report("name -> address, after: ember_symtab_find (bisection)", n,
           name_bisect(t, p, n, f, mod, bias), base);

    size_t dwarf, frames;
    double cold = resolve_all(s, m, p, n, &dwarf, &frames);
    report("resolve, cold: DWARF frames and inline chains, else ELF", n, cold, 0);
    printf("  %-58s %12zu of %zu, %.2f frames each\n", "  ... addresses with DWARF", dwarf, n,
           n ? (double)frames / n : 0);
    report("resolve, memoized (the same addresses again)", n,
           resolve_all(s, m, p, n, &dwarf, &frames), n / cold);

    /* another symbolizer, nothing memoized; s keeps the names of f alive */
    struct ember_symbolizer *s2;
    if (ember_symbolizer_new(&s2) != 0)
        return 1;
    report("perf lines, cold: runtime pc + func+0xOFF (--inline)", n,
           resolve_perf(s2, path, p, n, f), 0);
    ember_symbolizer_free(s2);
    ember_symbolizer_free(s);
    free(f);
    free(p);
    return 0;
}
