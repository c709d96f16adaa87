/*
 * plt.c - the PLT's stubs, each named "sym@plt" (see elfsyms.h), as
 * objdump names them and perf 6.3 and later do.
 *
 * An x86-64 stub of .plt, .plt.sec (IBT's second PLT) or .plt.got jumps
 * through one GOT slot (jmp *disp(%rip), after an endbr64 and a bnd
 * prefix where there are): the dynamic relocation of that slot (.rela.plt,
 * .rela.dyn) names its symbol. A .plt entry that jumps through none (IBT's
 * lazy .plt: push, then jmp to the header) and every .plt entry of other
 * machines is named by its index, as perf before 6.3 names all of them:
 * the i-th after the header is the i-th relocation of .rela.plt. An
 * IFUNC's slot (R_X86_64_IRELATIVE) has no symbol: its stub is named
 * after the resolver's address, "*ABS*+0xADDR@plt", as objdump names it.
 * Where perf before 6.3 differs, ember is right and the tests document
 * it: it has no symbol for .plt.sec and .plt.got (its search finds the
 * symbol stretched over them, _init, or nothing), and where IFUNC
 * relocations come last in .rela.plt (libc) its index order names .plt's
 * stubs after other symbols, or "@plt".
 * Invariants: every stub is one entry of its section; .plt's header is no
 * stub; a stub whose slot no relocation names has no symbol.
 */
#include "symbol/elfsyms.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/demangle.h"
#include "base/vec.h"

struct slot {
    uint64_t got;     /* the slot's address */
    const char *name; /* what the slot holds (target_name) */
};

struct plt {
    Elf *elf;
    bool x86_64;
    struct slot *slots; /* sorted by got, once read */
    size_t n, cap;
    const char **by_index; /* .rela.plt's names, in its order */
    size_t nindex;
    struct ember_arena *names;
    struct ember_symtab *t;
};

static Elf_Scn *section_named(Elf *elf, const char *name, GElf_Shdr *sh)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return NULL;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        const char *n = gelf_getshdr(scn, sh) ? elf_strptr(elf, shstrndx, sh->sh_name) : NULL;
        if (n && strcmp(n, name) == 0)
            return scn;
    }
    return NULL;
}

/* Relocation i of a REL or RELA section (a REL's addend is 0 here: it
 * is in the slot). */
static bool reloc_at(Elf_Data *d, Elf64_Word type, size_t i, GElf_Rela *r)
{
    GElf_Rel rel;
    if (type == SHT_RELA)
        return gelf_getrela(d, (int)i, r) != NULL;
    if (type != SHT_REL || !gelf_getrel(d, (int)i, &rel))
        return false;
    *r = (GElf_Rela){rel.r_offset, rel.r_info, 0};
    return true;
}

/* The name of what a relocation's slot holds: its symbol's, an IFUNC's
 * resolver address as objdump names it, else "" (NULL: no memory). */
static const char *target_name(struct plt *p, const GElf_Rela *r, Elf_Data *syms, Elf64_Word strtab)
{
    GElf_Sym s;
    size_t sym = GELF_R_SYM(r->r_info);
    const char *name =
        gelf_getsym(syms, (int)sym, &s) ? elf_strptr(p->elf, strtab, s.st_name) : NULL;
    if (sym || !p->x86_64 || GELF_R_TYPE(r->r_info) != R_X86_64_IRELATIVE)
        return name ? name : "";
    char abs[48];
    snprintf(abs, sizeof(abs), "*ABS*+0x%" PRIx64, (uint64_t)r->r_addend);
    return ember_arena_strndup(p->names, abs, strlen(abs));
}

/* The relocations of the first of two sections there is (".rela.X",
 * ".rel.X") whose symbols are .dynsym's, as slots (those of no symbol
 * too: index, where perf names .plt's entries by their order, which it
 * then keeps). 0, or -ENOMEM. */
static int read_relocs(struct plt *p, const char *rela, const char *rel, bool index)
{
    GElf_Shdr rs, ds;
    Elf_Scn *rscn = section_named(p->elf, rela, &rs);
    if (!rscn)
        rscn = section_named(p->elf, rel, &rs);
    Elf_Scn *dscn = rscn ? elf_getscn(p->elf, rs.sh_link) : NULL;
    if (!dscn || !gelf_getshdr(dscn, &ds) || ds.sh_type != SHT_DYNSYM || rs.sh_entsize == 0)
        return 0;
    Elf_Data *rd = elf_getdata(rscn, NULL), *sd = elf_getdata(dscn, NULL);
    if (!rd || !sd)
        return 0;
    size_t n = (rs.sh_size < rd->d_size ? rs.sh_size : rd->d_size) / rs.sh_entsize;
    if (index && !(p->by_index = calloc(n ? n : 1, sizeof(*p->by_index))))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        GElf_Rela r;
        if (!reloc_at(rd, rs.sh_type, i, &r))
            return 0;
        if (!index && GELF_R_SYM(r.r_info) == 0)
            continue; /* a relative relocation: data, no stub's slot */
        const char *name = target_name(p, &r, sd, ds.sh_link);
        if (!name || EMBER_VEC_RESERVE(p->slots, p->cap, p->n + 1) < 0)
            return -ENOMEM;
        p->slots[p->n++] = (struct slot){r.r_offset, name};
        if (index) /* perf before 6.3: a relocation of no symbol is "@plt" */
            p->by_index[p->nindex++] = GELF_R_SYM(r.r_info) ? name : "";
    }
    return 0;
}

static int slot_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct slot *)a)->got, y = ((const struct slot *)b)->got;
    return (x > y) - (x < y);
}

/* The symbol of the slot at got: NULL when no relocation names it. */
static const char *slot_name(const struct plt *p, uint64_t got)
{
    struct slot key = {got, NULL};
    const struct slot *s = got ? bsearch(&key, p->slots, p->n, sizeof(key), slot_cmp) : NULL;
    return s ? s->name : NULL;
}

/* The GOT slot an x86-64 stub at address at jumps through: 0 when its
 * code is no such jump. */
static uint64_t x86_64_slot(const uint8_t *code, size_t len, uint64_t at)
{
    static const uint8_t endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
    size_t k = len >= 4 && memcmp(code, endbr64, 4) == 0 ? 4 : 0;
    if (k < len && code[k] == 0xf2) /* bnd */
        k++;
    if (k + 6 > len || code[k] != 0xff || code[k + 1] != 0x25)
        return 0;
    const uint8_t *d = code + k + 2;
    int32_t disp = (int32_t)((uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 |
                             (uint32_t)d[3] << 24);
    return at + k + 6 + (uint64_t)(int64_t)disp;
}

/* "name@plt", demangled as perf does, into the arena; NULL: no memory. */
static const char *stub_name(struct ember_arena *names, const char *name)
{
    char *dm = name[0] == '*' ? NULL : ember_demangle(name, strlen(name), EMBER_DEMANGLE_PERF);
    char *full = NULL;
    if (asprintf(&full, "%s@plt", dm ? dm : name) < 0)
        full = NULL;
    free(dm);
    const char *kept = full ? ember_arena_strndup(names, full, strlen(full)) : NULL;
    free(full);
    return kept;
}

/* A section's entry size, as perf reads it on x86 (its sh_entsize when 8
 * or 16, else its alignment tells). */
static size_t entry_size(const struct plt *p, const GElf_Shdr *sh)
{
    if (!p->x86_64 || sh->sh_entsize == 8 || sh->sh_entsize == 16)
        return sh->sh_entsize;
    return sh->sh_addralign == 8 ? 8 : 16;
}

/* The stubs of one section (after its first entry, when it is .plt's
 * header); NOBITS in a debug file has none. */
static int name_stubs(struct plt *p, const char *section, bool header)
{
    GElf_Shdr sh;
    Elf_Scn *scn = section_named(p->elf, section, &sh);
    Elf_Data *d = scn && sh.sh_type == SHT_PROGBITS ? elf_getdata(scn, NULL) : NULL;
    size_t es = scn ? entry_size(p, &sh) : 0;
    if (!d || es == 0)
        return 0;
    size_t n = (sh.sh_size < d->d_size ? sh.sh_size : d->d_size) / es;
    for (size_t i = header; i < n; i++) {
        uint64_t at = sh.sh_addr + i * es;
        const uint8_t *code = (const uint8_t *)d->d_buf + i * es;
        const char *name = p->x86_64 ? slot_name(p, x86_64_slot(code, es, at)) : NULL;
        if (!name && header && i - 1 < p->nindex)
            name = p->by_index[i - 1];
        const char *full = name ? stub_name(p->names, name) : NULL;
        if (name && (!full || ember_symtab_add(p->t, full, at, es, 1, true) < 0))
            return -ENOMEM;
    }
    return 0;
}

/* Where the first stub of .plt is: its first entry after the header. */
static uint64_t first_stub(const struct plt *p)
{
    GElf_Shdr sh;
    if (!p->nindex || !section_named(p->elf, ".plt", &sh) || entry_size(p, &sh) == 0)
        return UINT64_MAX;
    return sh.sh_addr + entry_size(p, &sh);
}

int ember_plt_read(Elf *elf, struct ember_arena *names, struct ember_symtab *t, uint64_t *first)
{
    GElf_Ehdr eh;
    struct plt p = {.elf = elf, .names = names, .t = t};
    p.x86_64 = gelf_getehdr(elf, &eh) && eh.e_machine == EM_X86_64;
    int err = read_relocs(&p, ".rela.plt", ".rel.plt", true);
    if (!err)
        err = read_relocs(&p, ".rela.dyn", ".rel.dyn", false);
    if (p.n)
        qsort(p.slots, p.n, sizeof(*p.slots), slot_cmp);
    *first = first_stub(&p);
    if (!err)
        err = name_stubs(&p, ".plt", true);
    if (!err)
        err = name_stubs(&p, ".plt.sec", false);
    if (!err)
        err = name_stubs(&p, ".plt.got", false);
    free(p.slots);
    free(p.by_index);
    return err;
}
