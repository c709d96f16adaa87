/*
 * inlines.c - inline chains from DWARF via elfutils' libdw (see inlines.h).
 *
 * For an address, libdw gives the nested scopes (dwarf_getscopes); the
 * functions among them, innermost first, are the inlined subroutines and
 * finally the real subprogram. A frame's source position is where the
 * address is for the innermost one, and for each outer one the call site
 * (DW_AT_call_file/line/column) of the function inlined into it: exactly
 * what addr2line -i prints. Names are the demangled linkage name, else the
 * DWARF name qualified by its namespaces and classes.
 */
#include "inlines.h"
#include "names.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The DIE that declares a function: an inlined or out-of-line instance
 * points to its abstract origin, a definition to its declaration. */
static Dwarf_Die *declaration(Dwarf_Die *die, Dwarf_Die *mem)
{
    Dwarf_Attribute attr;
    Dwarf_Die *cur = die;
    for (int hops = 0; hops < 4; hops++) {
        if ((dwarf_attr(cur, DW_AT_abstract_origin, &attr) ||
             dwarf_attr(cur, DW_AT_specification, &attr)) &&
            dwarf_formref_die(&attr, mem))
            cur = mem;
        else
            break;
    }
    return cur;
}

/* "ns::Class::name" for a function without a linkage name (GCC gives none
 * to functions of an anonymous namespace): the names of the namespaces and
 * types that enclose its declaration, as a demangler would print them. */
static char *qualified_name(Dwarf_Die *die)
{
    Dwarf_Die mem;
    Dwarf_Die *decl = declaration(die, &mem);
    const char *name = dwarf_diename(decl);
    if (!name)
        return strdup("??");
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes_die(decl, &scopes);
    size_t cap = strlen(name) + 1, len = 0;
    for (int i = 1; i < n; i++) /* scopes[0] is decl itself */
        cap += (dwarf_diename(&scopes[i]) ? strlen(dwarf_diename(&scopes[i])) : 21) + 2;
    char *out = malloc(cap);
    if (!out) {
        free(scopes);
        return NULL;
    }
    for (int i = n; i-- > 1;) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag != DW_TAG_namespace && tag != DW_TAG_class_type && tag != DW_TAG_structure_type &&
            tag != DW_TAG_union_type)
            continue;
        const char *part = dwarf_diename(&scopes[i]);
        if (!part)
            part = "(anonymous namespace)";
        len += (size_t)sprintf(out + len, "%s::", part);
    }
    strcpy(out + len, name);
    free(scopes);
    return out;
}

/* The function's name as addr2line -f -C prints it, interned. */
static const char *function_name(Dwarf_Die *die, ember_intern_fn intern, void *ctx)
{
    Dwarf_Attribute attr;
    const char *link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    if (!link)
        link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
    char *own = link ? ember_symbol_demangle(link) : qualified_name(die);
    const char *name = own ? own : link;
    const char *kept = name ? intern(ctx, name, strlen(name)) : NULL;
    free(own);
    return kept;
}

static bool is_function(Dwarf_Die *die)
{
    int tag = dwarf_tag(die);
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

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

/* The function-like scope that holds an inlined instance: the function it
 * was inlined into. false when there is none. */
static bool caller_of(Dwarf_Die *inl, Dwarf_Die *out)
{
    Dwarf_Die *parents = NULL;
    int np = dwarf_getscopes_die(inl, &parents);
    int j = 1;
    while (j < np && !is_function(&parents[j]))
        j++;
    if (j < np)
        *out = parents[j];
    free(parents);
    return j < np;
}

/* Innermost first into frames; the caller reverses. */
static int collect(Dwfl_Module *mod, Dwarf_Addr addr, Dwarf_Die *cu, Dwarf_Die cur,
                   struct ember_symbol_frame *frames, ember_intern_fn intern, void *ctx)
{
    int nf = 0;
    line_at(mod, addr, &frames[0]);
    for (;;) {
        struct ember_symbol_frame *f = &frames[nf++];
        f->function = function_name(&cur, intern, ctx);
        if (!f->function)
            return -ENOMEM;
        f->inlined = dwarf_tag(&cur) == DW_TAG_inlined_subroutine;
        if (!f->inlined || nf == EMBER_INLINES_MAX)
            return nf;
        call_site(cu, &cur, &frames[nf]);
        if (!caller_of(&cur, &cur))
            return nf;
    }
}

int ember_inlines_at(Dwfl_Module *mod, Dwarf_Addr addr, struct ember_symbol_frame *frames,
                     ember_intern_fn intern, void *ctx)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
    Dwarf_Die *scopes = NULL;
    int n = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
    int i = 0;
    while (i < n && !is_function(&scopes[i]))
        i++;
    if (i >= n) {
        free(scopes);
        return 0;
    }
    Dwarf_Die innermost = scopes[i];
    free(scopes);
    int nf = collect(mod, addr, cu, innermost, frames, intern, ctx);
    for (int a = 0, b = nf - 1; a < b; a++, b--) {
        struct ember_symbol_frame t = frames[a];
        frames[a] = frames[b];
        frames[b] = t;
    }
    return nf;
}
