/*
 * inlines.c - inline chains from DWARF via elfutils' libdw (see inlines.h).
 *
 * The index holds every concrete subprogram with code (dwarf_getfuncs, for
 * each CU) by its address ranges. For an address, the subprogram found is
 * the outermost frame; the inlined instances nested in it (through lexical
 * blocks) that hold the address are the next ones, down to the innermost.
 * An address no indexed subprogram holds (a C nested function: libdw does
 * not look inside C functions for others) is searched in its CU's tree.
 * A frame's source position is where the address is for the innermost one,
 * and for each outer one the call site (DW_AT_call_file/line/column) of the
 * function inlined into it: exactly what addr2line -i prints.
 * dwarf_getscopes would walk the whole CU per address (all of a program,
 * with LTO), and loses the chain when an inlined instance's abstract origin
 * is in another CU, as LTO makes them.
 *
 * Names (names.h) are computed once per function (its declaration DIE) and
 * kept in the index's arena. A function DWARF cannot name as a demangler
 * would (a lambda: a member of an unnamed type in a function) is named, as
 * addr2line does, by the ELF symbol at its entry when it is the outermost
 * frame, else by its DWARF name alone.
 */
#include "symbol/inlines.h"
#include "symbol/demangle.h"
#include "symbol/names.h"
#include "symbol/ranges.h"
#include "base/arena.h"
#include "base/hash.h"
#include "base/strmap.h"
#include "base/table.h"
#include "base/vec.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where an inlined instance was called from, in its CU's file table. */
static void call_site(Dwarf_Die *cu, Dwarf_Die *inl, struct ember_symbol_frame *f)
{
    Dwarf_Attribute attr;
    Dwarf_Word line = 0, column = 0, file = 0;
    Dwarf_Files *files;
    dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &line);
    dwarf_formudata(dwarf_attr(inl, DW_AT_call_column, &attr), &column);
    dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &file);
    f->file =
        dwarf_getsrcfiles(cu, &files, NULL) == 0 ? dwarf_filesrc(files, file, NULL, NULL) : NULL;
    f->line = (uint32_t)line;
    f->column = (uint32_t)column;
}

/* Where addr is, from the line table. */
static void line_at(Dwfl_Module *mod, Dwarf_Addr addr, struct ember_symbol_frame *f)
{
    Dwfl_Line *line = dwfl_module_getsrc(mod, addr);
    int lineno = 0, column = 0;
    f->file = line ? dwfl_lineinfo(line, NULL, &lineno, &column, NULL, NULL) : NULL;
    f->line = lineno > 0 ? (uint32_t)lineno : 0;
    f->column = column > 0 ? (uint32_t)column : 0;
}

struct name_slot {
    const void *decl; /* the declaration DIE's bytes; NULL: empty slot */
    const char *name; /* NULL: DWARF cannot name it as a demangler would */
    const char *bare; /* its DWARF name alone */
};

struct ember_inlines {
    Dwfl_Module *mod;
    Dwarf_Addr bias; /* libdwfl address = DWARF address + bias */
    const struct ember_symtab *symtab;
    uint64_t elf_bias; /* libdwfl address = file address + elf_bias */
    Dwarf_Die *funcs;  /* the indexed subprograms */
    size_t nfuncs, fcap;
    struct ember_ranges ranges; /* libdwfl addresses; values: index in funcs */
    Dwarf_Die *path;            /* scratch: the functions at an address, outermost first */
    size_t npath, pcap;
    struct name_slot *names;
    uint32_t nmask, ncount;
    struct ember_arena arena;      /* the names */
    struct ember_strmap elf_names; /* ELF symbol -> its name as addr2line -C prints it */
};

struct indexing {
    struct ember_inlines *x;
    int err;
};

static int index_function(Dwarf_Die *die, void *arg)
{
    struct indexing *ix = arg;
    struct ember_inlines *x = ix->x;
    Dwarf_Addr base, lo, hi;
    bool any = false;
    for (ptrdiff_t off = 0; (off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0 && !ix->err;) {
        ix->err = ember_ranges_add(&x->ranges, lo + x->bias, hi + x->bias, x->nfuncs);
        any = true;
    }
    if (any && !ix->err && (ix->err = EMBER_VEC_RESERVE(x->funcs, x->fcap, x->nfuncs + 1)) == 0)
        x->funcs[x->nfuncs++] = *die;
    return ix->err ? DWARF_CB_ABORT : DWARF_CB_OK;
}

int ember_inlines_new(Dwfl_Module *mod, const struct ember_symtab *symtab, uint64_t elf_bias,
                      struct ember_inlines **out)
{
    struct ember_inlines *x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    x->mod = mod;
    x->symtab = symtab;
    x->elf_bias = elf_bias;
    ember_ranges_init(&x->ranges);
    ember_arena_init(&x->arena);
    x->names = calloc(64, sizeof(*x->names));
    x->nmask = 63;
    struct indexing ix = {x, x->names ? ember_strmap_init(&x->elf_names) : -ENOMEM};
    Dwarf_Die *cu = NULL;
    Dwarf_Addr bias;
    dwfl_module_getdwarf(mod, &x->bias);
    while (!ix.err && (cu = dwfl_module_nextcu(mod, cu, &bias)) != NULL)
        dwarf_getfuncs(cu, index_function, &ix, 0);
    if (!ix.err)
        ix.err = ember_ranges_finish(&x->ranges);
    if (ix.err) {
        ember_inlines_free(x);
        return ix.err;
    }
    *out = x;
    return 0;
}

void ember_inlines_free(struct ember_inlines *x)
{
    if (!x)
        return;
    ember_ranges_release(&x->ranges);
    free(x->funcs);
    free(x->path);
    free(x->names);
    ember_arena_release(&x->arena);
    ember_strmap_release(&x->elf_names);
    free(x);
}

static bool has_pc(Dwarf_Die *die)
{
    return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
}

/* Whether die holds pc, or has no address of its own to say it does not. */
static bool may_hold(Dwarf_Die *die, Dwarf_Addr pc)
{
    return !has_pc(die) || dwarf_haspc(die, pc) == 1;
}

/* A scope that nests functions' code without being a function. */
static bool is_block(int tag)
{
    return tag == DW_TAG_lexical_block || tag == DW_TAG_try_block || tag == DW_TAG_catch_block ||
           tag == DW_TAG_with_stmt;
}

/* A scope whose children may be functions defined elsewhere in the code. */
static bool may_nest_functions(int tag)
{
    return is_block(tag) || tag == DW_TAG_subprogram || tag == DW_TAG_namespace ||
           tag == DW_TAG_module || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
           tag == DW_TAG_union_type;
}

/* The inlined instance directly in parent (through blocks) holding pc. */
static bool inlined_at(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *out)
{
    Dwarf_Die c;
    for (int r = dwarf_child(parent, &c); r == 0; r = dwarf_siblingof(&c, &c)) {
        int tag = dwarf_tag(&c);
        if (tag == DW_TAG_inlined_subroutine && dwarf_haspc(&c, pc) == 1) {
            *out = c;
            return true;
        }
        if (is_block(tag) && may_hold(&c, pc) && inlined_at(&c, pc, out))
            return true;
    }
    return false;
}

/* The subprogram holding pc anywhere under parent: the slow way, for what
 * the index does not hold. */
static bool subprogram_at(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *out)
{
    Dwarf_Die c;
    for (int r = dwarf_child(parent, &c); r == 0; r = dwarf_siblingof(&c, &c)) {
        int tag = dwarf_tag(&c);
        if (tag == DW_TAG_subprogram && dwarf_haspc(&c, pc) == 1) {
            *out = c;
            return true;
        }
        if (may_nest_functions(tag) && subprogram_at(&c, pc, out))
            return true;
    }
    return false;
}

static int push(struct ember_inlines *x, Dwarf_Die *die)
{
    if (EMBER_VEC_RESERVE(x->path, x->pcap, x->npath + 1) < 0)
        return -ENOMEM;
    x->path[x->npath++] = *die;
    return 0;
}

/* x->path: the functions at addr, outermost first; 0 when none. */
static int functions_at(struct ember_inlines *x, Dwarf_Addr addr)
{
    Dwarf_Die cur;
    uint64_t i, start;
    x->npath = 0;
    if (ember_ranges_find(&x->ranges, addr, &i, &start) == 0) {
        cur = x->funcs[i];
    } else {
        Dwarf_Addr bias;
        Dwarf_Die *cu = dwfl_module_addrdie(x->mod, addr, &bias);
        if (!cu || !subprogram_at(cu, addr - bias, &cur))
            return 0;
    }
    Dwarf_Addr pc = addr - x->bias;
    int err = push(x, &cur);
    while (!err && inlined_at(&cur, pc, &cur))
        err = push(x, &cur);
    return err;
}

static uint64_t name_hash(const void *slot)
{
    return ember_hash_u64((uintptr_t)((const struct name_slot *)slot)->decl);
}

static bool name_used(const void *slot)
{
    return ((const struct name_slot *)slot)->decl != NULL;
}

static struct name_slot *name_find(struct ember_inlines *x, const void *decl)
{
    struct name_slot probe = {.decl = decl};
    for (uint32_t i = (uint32_t)name_hash(&probe) & x->nmask;; i = (i + 1) & x->nmask) {
        struct name_slot *n = &x->names[i];
        if (!n->decl || n->decl == decl)
            return n;
    }
}

/* A copy in the arena: names live as long as the index. */
static int keep(struct ember_inlines *x, const char *s, const char **out)
{
    *out = s ? ember_arena_strndup(&x->arena, s, strlen(s)) : NULL;
    return s && !*out ? -ENOMEM : 0;
}

/* DWARF's names for die's function, computed once per declaration. */
static int dwarf_names(struct ember_inlines *x, Dwarf_Die *die, const struct name_slot **out)
{
    Dwarf_Die mem;
    const void *decl = ember_dwarf_declaration(die, &mem)->addr;
    struct name_slot *slot = name_find(x, decl);
    if (!slot->decl) {
        char *name = NULL;
        const char *bare = NULL;
        int err = ember_dwarf_function_name(die, &name, &bare);
        struct name_slot n = {decl, NULL, NULL};
        if (!err)
            err = keep(x, name, &n.name);
        if (!err)
            err = keep(x, bare, &n.bare);
        free(name);
        if (err)
            return err;
        *slot = n;
        if (++x->ncount * 2 > x->nmask + 1) {
            if (ember_table_grow((void **)&x->names, &x->nmask, sizeof(*x->names), name_hash,
                                 name_used) < 0) {
                *slot = (struct name_slot){0};
                x->ncount--;
                return -ENOMEM;
            }
            slot = name_find(x, decl);
        }
    }
    *out = slot;
    return 0;
}

/* The demangled ELF symbol that starts at subprogram's entry, or NULL. */
static int entry_symbol(struct ember_inlines *x, Dwarf_Die *subprogram, const char **out)
{
    Dwarf_Addr entry, base, hi;
    const struct ember_symtab_sym *sym;
    uint64_t offset;
    *out = NULL;
    if (dwarf_entrypc(subprogram, &entry) != 0 &&
        dwarf_ranges(subprogram, 0, &base, &entry, &hi) <= 0)
        return 0;
    uint64_t file_addr = entry + x->bias - x->elf_bias;
    if (!x->symtab || ember_symtab_lookup(x->symtab, file_addr, &sym, &offset) != 0 || offset)
        return 0;
    if ((*out = ember_strmap_get(&x->elf_names, sym->name, strlen(sym->name))) != NULL)
        return 0;
    char *demangled = ember_demangle(sym->name, strlen(sym->name), EMBER_DEMANGLE_ADDR2LINE);
    int err = keep(x, demangled ? demangled : sym->name, out);
    free(demangled);
    if (!err)
        err = ember_strmap_put(&x->elf_names, sym->name, strlen(sym->name), (void *)*out);
    return err;
}

static int function_name(struct ember_inlines *x, Dwarf_Die *die, bool outermost, const char **out)
{
    const struct name_slot *n;
    int err = dwarf_names(x, die, &n);
    if (err || (*out = n->name) != NULL)
        return err;
    if (outermost && dwarf_tag(die) == DW_TAG_subprogram && (err = entry_symbol(x, die, out)) < 0)
        return err;
    if (!*out)
        *out = n->bare;
    return 0;
}

int ember_inlines_at(struct ember_inlines *x, Dwarf_Addr addr, struct ember_symbol_frame *frames)
{
    int err = functions_at(x, addr);
    if (err || x->npath == 0)
        return err;
    size_t first = x->npath > EMBER_INLINES_MAX ? x->npath - EMBER_INLINES_MAX : 0;
    int n = (int)(x->npath - first);
    for (int k = 0; k < n; k++) {
        Dwarf_Die *die = &x->path[first + (size_t)k];
        struct ember_symbol_frame *f = &frames[k];
        *f = (struct ember_symbol_frame){.inlined = dwarf_tag(die) == DW_TAG_inlined_subroutine};
        if ((err = function_name(x, die, k == 0, &f->function)) < 0)
            return err;
        Dwarf_Die cu;
        if (k + 1 == n)
            line_at(x->mod, addr, f);
        else if (dwarf_diecu(die + 1, &cu, NULL, NULL))
            call_site(&cu, die + 1, f);
    }
    return n;
}
