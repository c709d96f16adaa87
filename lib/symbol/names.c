/*
 * names.c - function names as addr2line -C prints them (see names.h):
 * linkage names demangled in demangle.h's addr2line style. GCC gives no
 * linkage name to C functions and to C++ functions of an anonymous
 * namespace: those are named from DWARF's scopes, as perf names them
 * ("(anonymous namespace)::f", without parameters).
 */
#include "symbol/names.h"
#include "symbol/demangle.h"

#include <dwarf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Dwarf_Die *ember_dwarf_declaration(Dwarf_Die *die, Dwarf_Die *mem)
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

/* Whether a scope encloses names as a demangler prints them: a namespace
 * (the anonymous one too), or a class, structure or union with a name. A
 * function, a block or an unnamed type does not (lambdas live there). */
static bool qualifies(Dwarf_Die *scope)
{
    int tag = dwarf_tag(scope);
    return tag == DW_TAG_namespace || ((tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
                                        tag == DW_TAG_union_type) &&
                                       dwarf_diename(scope));
}

/* A C CU names its functions without scopes. */
static bool is_c(Dwarf_Die *decl)
{
    Dwarf_Die cu;
    if (!dwarf_diecu(decl, &cu, NULL, NULL))
        return false;
    int lang = dwarf_srclang(&cu);
    return lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 || lang == DW_LANG_C11;
}

/* "ns::Class::name": the names of the namespaces and types that enclose
 * decl, as a demangler prints them. *out NULL when one of them is not
 * such a scope. */
static int qualified_name(Dwarf_Die *decl, const char *name, char **out)
{
    *out = NULL;
    if (is_c(decl))
        return (*out = strdup(name)) ? 0 : -ENOMEM;
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes_die(decl, &scopes); /* a walk of the CU: cache the result */
    size_t cap = strlen(name) + 1, len = 0;
    for (int i = 1; i < n - 1; i++) { /* scopes[0] is decl itself, the last one its CU */
        if (!qualifies(&scopes[i])) {
            free(scopes);
            return 0;
        }
        cap += (dwarf_diename(&scopes[i]) ? strlen(dwarf_diename(&scopes[i])) : 21) + 2;
    }
    char *q = malloc(cap);
    for (int i = n - 1; q && i-- > 1;) {
        const char *part = dwarf_diename(&scopes[i]);
        len += (size_t)sprintf(q + len, "%s::", part ? part : "(anonymous namespace)");
    }
    if (q)
        strcpy(q + len, name);
    free(scopes);
    *out = q;
    return q ? 0 : -ENOMEM;
}

int ember_dwarf_function_name(Dwarf_Die *die, char **out, const char **bare)
{
    Dwarf_Attribute attr;
    const char *link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    if (!link)
        link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
    if (link) {
        *out = ember_demangle(link, strlen(link), EMBER_DEMANGLE_ADDR2LINE);
        if (!*out)
            *out = strdup(link);
        return *out ? 0 : -ENOMEM;
    }
    Dwarf_Die mem;
    Dwarf_Die *decl = ember_dwarf_declaration(die, &mem);
    const char *name = dwarf_diename(decl);
    *bare = name ? name : "??";
    if (!name)
        return (*out = strdup("??")) ? 0 : -ENOMEM;
    return qualified_name(decl, name, out);
}
