/*
 * elfsyms.c - the symbols perf finds in an ELF file (see elfsyms.h).
 *
 * As perf script finds them (util/symbol-elf.c, symbol.c): functions,
 * objects and text labels (.symtab, else .dynsym: libdwfl picks the file,
 * the separate debug file by build-id or debuglink included); a symbol of
 * no size reaching the next one; of several at one address the one perf
 * keeps (choose_best_symbol); names demangled as perf does (C++ without
 * parameters, Rust, OCaml's "Module.fn").
 * Invariants: each round of symbols is sorted and settled before the next
 * is read; every name the table points to lives in the caller's arena.
 */
#include "symbol/elfsyms.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/demangle.h"
#include "base/vec.h"

/* ---- perf's symbols of an ELF file -------------------------------------- */

struct esym {
    const char *name;
    uint64_t start, end;
    int binding;
    uint32_t order;
    bool sized; /* it, or an alias perf dropped for it, has a size in the file */
};

struct symvec {
    struct esym *v;
    size_t n, cap;
};

static int esym_cmp(const void *a, const void *b)
{
    const struct esym *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static size_t underscores(const char *s)
{
    size_t n = 0;
    while (s[n] == '_')
        n++;
    return n;
}

/* perf's choose_best_symbol: true when b is better than a. */
static bool better(const struct esym *a, const struct esym *b)
{
    uint64_t la = a->end - a->start, lb = b->end - b->start;
    if ((lb == 0) != (la == 0))
        return lb > 0;
    bool wa = a->binding == STB_WEAK, wb = b->binding == STB_WEAK;
    if (wa != wb)
        return wa;
    bool ga = a->binding == STB_GLOBAL, gb = b->binding == STB_GLOBAL;
    if (ga != gb)
        return gb;
    size_t ua = underscores(a->name), ub = underscores(b->name);
    if (ua != ub)
        return ub < ua;
    return strlen(b->name) > strlen(a->name);
}

/* perf's filter: functions and objects, and labels in text sections, of
 * allocated sections, named, defined. */
static bool perf_keeps(Elf *elf, const GElf_Sym *s, GElf_Word shndx)
{
    int type = GELF_ST_TYPE(s->st_info), vis = GELF_ST_VISIBILITY(s->st_other);
    if (s->st_name == 0 || shndx == SHN_UNDEF)
        return false;
    bool label = type == STT_NOTYPE && shndx != SHN_ABS && vis != STV_HIDDEN && vis != STV_INTERNAL;
    if (!label && type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT)
        return false;
    if (!elf || shndx >= SHN_LORESERVE)
        return !label;
    GElf_Shdr sh;
    Elf_Scn *scn = elf_getscn(elf, shndx);
    if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
        return false;
    if (!label)
        return true;
    size_t shstrndx;
    const char *sec =
        elf_getshdrstrndx(elf, &shstrndx) == 0 ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
    return sec && strstr(sec, "text");
}

/* A symbol as perf keeps it, its name demangled as perf does. */
static int add_esym(struct ember_arena *names, struct symvec *sv, const char *name, uint64_t start,
                    uint64_t size, int binding, uint32_t order)
{
    char *dm = ember_demangle(name, strlen(name), EMBER_DEMANGLE_PERF);
    if (dm) {
        name = ember_arena_strndup(names, dm, strlen(dm));
        free(dm);
        if (!name)
            return -ENOMEM;
    }
    if (EMBER_VEC_RESERVE(sv->v, sv->cap, sv->n + 1) < 0)
        return -ENOMEM;
    sv->v[sv->n++] = (struct esym){name, start, start + size, binding, order, size > 0};
    return 0;
}

struct dwfl_round {
    struct ember_arena *names;
    struct symvec *sv;
};

static int keep_dwfl_symbol(void *ctx, const struct ember_symbol_elfsym *s)
{
    struct dwfl_round *r = ctx;
    if (!perf_keeps(s->elf, &s->sym, s->shndx))
        return 0;
    return add_esym(r->names, r->sv, s->name, s->addr, s->sym.st_size, GELF_ST_BIND(s->sym.st_info),
                    s->index);
}

/* libdwfl's symbol table: the file's .symtab, else its debug file's, else
 * its .dynsym (the file perf reads symbols from too). */
static int dwfl_pass(struct ember_symbol_module *m, struct ember_arena *names, struct symvec *sv)
{
    struct dwfl_round r = {names, sv};
    return ember_symbol_module_each_symbol(m, keep_dwfl_symbol, &r);
}

/* The section of a type (the first), with data in the file. */
static Elf_Scn *section_of_type(Elf *elf, Elf64_Word type, GElf_Shdr *sh)
{
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn))
        if (gelf_getshdr(scn, sh) && sh->sh_type == type)
            return scn;
    return NULL;
}

/* perf reads .dynsym after .symtab, from the file that has both. */
static int dynsym_pass(Elf *elf, struct ember_arena *names, struct symvec *sv, uint32_t base)
{
    GElf_Shdr sh;
    Elf_Scn *scn = section_of_type(elf, SHT_DYNSYM, &sh);
    Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
    if (!data || sh.sh_entsize == 0)
        return 0;
    size_t n = sh.sh_size / sh.sh_entsize;
    for (size_t i = 1; i < n; i++) {
        GElf_Sym s;
        const char *name =
            gelf_getsym(data, (int)i, &s) ? elf_strptr(elf, sh.sh_link, s.st_name) : NULL;
        if (name && *name && perf_keeps(elf, &s, s.st_shndx) &&
            add_esym(names, sv, name, s.st_value, s.st_size, GELF_ST_BIND(s.st_info),
                     base + (uint32_t)i))
            return -ENOMEM;
    }
    return 0;
}

/* perf's symbols__fixup_end then symbols__fixup_duplicate, in place. */
static void settle_round(struct symvec *sv)
{
    struct esym *v = sv->v;
    size_t n = sv->n, w = 0;
    if (n > 1) /* v may be NULL when there are none */
        qsort(v, n, sizeof(*v), esym_cmp);
    for (size_t i = 0; i + 1 < n; i++)
        if (v[i].end == v[i].start)
            v[i].end = v[i + 1].start;
    if (n && v[n - 1].end == v[n - 1].start)
        v[n - 1].end = ((v[n - 1].start + 4095) & ~(uint64_t)4095) + 4096;
    for (size_t i = 0; i < n;) {
        size_t best = i, j = i + 1;
        bool sized = v[i].sized;
        for (; j < n && v[j].start == v[i].start; j++) {
            sized |= v[j].sized;
            if (better(&v[best], &v[j]))
                best = j;
        }
        v[w] = v[best];
        v[w++].sized = sized;
        i = j;
    }
    sv->n = w;
}

/* Whether the file itself has a symbol table (libdwfl then reads it, and
 * perf reads its .dynsym after it). */
static bool has_symtab(Elf *elf)
{
    GElf_Shdr sh;
    return section_of_type(elf, SHT_SYMTAB, &sh) != NULL;
}

bool ember_elfsyms_has_symtab(struct ember_symbol_module *m)
{
    uint64_t bias;
    Dwfl_Module *mod = ember_symbol_module_dwfl(m, &bias);
    GElf_Addr ebias;
    Elf *main = mod ? dwfl_module_getelf(mod, &ebias) : NULL;
    if (!main)
        return false;
    if (has_symtab(main))
        return true;
    const char *debug = NULL;
    dwfl_module_getsymtab(mod); /* which looks for the debug file */
    dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debug);
    return debug != NULL;
}

/* The PLT's entries, then the symbols, each over the addresses perf's
 * search finds it at. One that perf stretched over the PLT (a symbol of
 * no size before it, such as _init) stops where the PLT starts. A symbol
 * of no size inside a sized one (a label in a function) names none of
 * the function's addresses: perf stretches it to the next symbol, over
 * the function's tail, where its search of overlapping ranges finds the
 * one or the other depending on the shape of its tree; the function is
 * what holds them. */
static int add_symbols(Elf *main, struct ember_arena *names, struct ember_symtab *t,
                       const struct symvec *sv)
{
    uint64_t plt = UINT64_MAX, covered = 0; /* the end of the sized symbols so far */
    int err = ember_plt_read(main, names, t, &plt);
    for (size_t i = 0; i < sv->n && !err; i++) {
        uint64_t start = sv->v[i].start, end = sv->v[i].end;
        if (!sv->v[i].sized && start < covered)
            start = covered;
        else if (sv->v[i].sized && end > covered)
            covered = end;
        if (start < plt && plt < end)
            end = plt;
        if (end > start)
            err = ember_symtab_add(t, sv->v[i].name, start, end - start, 0, true);
    }
    return err;
}

static int fill(struct ember_symbol_module *m, Elf *main, struct ember_arena *names,
                struct ember_symtab *t)
{
    struct symvec sv = {0};
    int err = dwfl_pass(m, names, &sv);
    settle_round(&sv);
    if (!err && has_symtab(main)) {
        err = dynsym_pass(main, names, &sv, UINT32_MAX / 2);
        settle_round(&sv);
    }
    if (!err)
        err = add_symbols(main, names, t, &sv);
    free(sv.v);
    return err ? err : ember_symtab_finish(t);
}

static int elfsyms_read(struct ember_symbol_module *m, struct ember_arena *names,
                        struct ember_symtab **out)
{
    uint64_t bias;
    Dwfl_Module *mod = ember_symbol_module_dwfl(m, &bias);
    GElf_Addr ebias;
    Elf *main = mod ? dwfl_module_getelf(mod, &ebias) : NULL;
    if (!main)
        return -ENOENT;
    struct ember_symtab *t;
    int err = ember_symtab_new(&t);
    if (!err && (err = fill(m, main, names, t)) < 0)
        ember_symtab_free(t);
    if (!err)
        *out = t;
    return err;
}

int ember_elfsyms_of(struct ember_symbol_module *m, const struct ember_symtab **out)
{
    struct ember_module_perf_syms *k = ember_symbol_module_perf_syms(m);
    if (!k->read) {
        k->err = elfsyms_read(m, &k->names, &k->syms);
        k->read = true;
    }
    *out = k->syms;
    return k->err;
}
