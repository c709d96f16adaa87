/*
 * names.h - function names as addr2line -C prints them (library-internal):
 * from symbols, and from DWARF.
 */
#ifndef EMBER_SYMBOL_NAMES_H
#define EMBER_SYMBOL_NAMES_H

#include <elfutils/libdw.h>

/* The DIE that declares the function of die: an inlined or out-of-line
 * instance leads to its abstract origin, a definition to its declaration.
 * Every instance of one function has the same. */
Dwarf_Die *ember_dwarf_declaration(Dwarf_Die *die, Dwarf_Die *mem);

/*
 * The name of the function of die as a demangler prints it: its linkage
 * name demangled, else its DWARF name qualified by the namespaces and named
 * types around its declaration. Returns 0 with *out malloc()ed, or NULL
 * when DWARF cannot name it so (a function of a local or unnamed type, as
 * lambdas are; *bare is then its DWARF name alone, "??" when it has none),
 * or -ENOMEM.
 */
int ember_dwarf_function_name(Dwarf_Die *die, char **out, const char **bare);

#endif
