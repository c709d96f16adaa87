/*
 * demangle.h - readable function names from the symbols of OCaml, C++ and
 * Rust (library-internal): the one entry point to demangling, for the
 * --demangle transform, for perf's names and for addr2line's. Each style
 * spells names as the tool whose output ember matches does.
 */
#ifndef EMBER_SYMBOL_DEMANGLE_H
#define EMBER_SYMBOL_DEMANGLE_H

#include <stddef.h>

/* Room enough for any demangled name ember keeps. */
enum { EMBER_DEMANGLE_MAX = 4096 };

enum ember_demangle_style {
    EMBER_DEMANGLE_TRANSFORM, /* --demangle: short names, as below */
    EMBER_DEMANGLE_PERF,      /* perf script: C++ and Rust without parameters,
                                 OCaml's "Unit.name_NNN" (stamp kept) */
    EMBER_DEMANGLE_ADDR2LINE, /* addr2line -C: C++ with parameters; Rust
                                 (legacy manglings too) left as it is */
};

/*
 * The readable form of name[0, len) in style, malloc()ed: NULL when the
 * name is left as it is (plain C, or a symbol no scheme recognises), or
 * when memory ran out. The transform's names are shorter than
 * EMBER_DEMANGLE_MAX. Several schemes may be mixed in one profile; each
 * name is classified on its own; the transform's:
 *   _R...                      Rust v0            (libiberty)
 *   _ZN...17h<16 hex>E         Rust legacy        (libiberty; hash dropped)
 *   _Z..., __Z...              C++ Itanium        (libiberty; no parameters)
 *   camlUnit__name_NNN         OCaml 4            Unit.name
 *   camlUnit.name_NNN          OCaml 5            Unit.name (Stdlib__List -> Stdlib.List)
 *   Unit.name_NNN              OCaml as perf prints it: the stamp is dropped
 */
char *ember_demangle(const char *name, size_t len, enum ember_demangle_style style);

#endif
