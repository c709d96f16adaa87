/*
 * perf_plt.c - the PLT's stubs, named "sym@plt" as perf names them (see
 * perf_elf.h): perf's dso__synthesize_plt_symbols before 6.3, an entry of
 * .plt's size per .rela.plt relocation, after the header, in the order of
 * the relocations.
 * Invariants: every stub is one entry of its section; .plt's header is
 * no stub.
 */
#include "perf_elf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* "name@plt", demangled as perf does, into the arena; NULL: no memory. */
static const char *stub_name(struct ember_arena *names, const char *name)
{
    char *dm = name ? pd_perf_demangle(name) : NULL;
    char *full = NULL;
    if (asprintf(&full, "%s@plt", dm ? dm : name ? name : "") < 0)
        full = NULL;
    free(dm);
    const char *kept = full ? ember_arena_strndup(names, full, strlen(full)) : NULL;
    free(full);
    return kept;
}

int pd_plt_symbols(Elf *elf, struct ember_arena *names, struct ember_symtab *t, uint64_t *first)
{
    GElf_Shdr rel, plt, dyn;
    Elf_Scn *rscn = section_named(elf, ".rela.plt", &rel);
    if (!rscn)
        rscn = section_named(elf, ".rel.plt", &rel);
    Elf_Scn *dscn = rscn ? elf_getscn(elf, rel.sh_link) : NULL;
    if (!dscn || !gelf_getshdr(dscn, &dyn) || dyn.sh_type != SHT_DYNSYM ||
        !section_named(elf, ".plt", &plt) || rel.sh_entsize == 0 || plt.sh_entsize == 0)
        return 0;
    Elf_Data *rd = elf_getdata(rscn, NULL), *sd = elf_getdata(dscn, NULL);
    if (!rd || !sd)
        return 0;
    size_t n = rel.sh_size / rel.sh_entsize;
    uint64_t at = plt.sh_addr + plt.sh_entsize;
    *first = n ? at : UINT64_MAX;
    for (size_t i = 0; i < n; i++, at += plt.sh_entsize) {
        GElf_Rela ra;
        GElf_Rel r;
        size_t sym;
        if (rel.sh_type == SHT_RELA && gelf_getrela(rd, (int)i, &ra))
            sym = GELF_R_SYM(ra.r_info);
        else if (rel.sh_type == SHT_REL && gelf_getrel(rd, (int)i, &r))
            sym = GELF_R_SYM(r.r_info);
        else
            return 0;
        GElf_Sym s;
        const char *name =
            gelf_getsym(sd, (int)sym, &s) ? elf_strptr(elf, dyn.sh_link, s.st_name) : NULL;
        const char *full = stub_name(names, name);
        if (!full || ember_symtab_add(t, full, at, plt.sh_entsize, 1, true))
            return -ENOMEM;
    }
    return 0;
}
