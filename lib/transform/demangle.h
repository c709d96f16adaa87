/*
 * demangle.h - readable function names from the symbols of OCaml, C++ and
 * Rust (library-internal; used by the --demangle transform).
 */
#ifndef EMBER_TRANSFORM_DEMANGLE_H
#define EMBER_TRANSFORM_DEMANGLE_H

#include <stddef.h>

/* Room enough for any demangled name ember keeps. */
enum { EMBER_DEMANGLE_MAX = 4096 };

/*
 * The readable form of name[0, len) into out (EMBER_DEMANGLE_MAX bytes,
 * NUL-terminated): its length, or 0 when the name is left as it is (plain C,
 * or a symbol no scheme recognises). Several schemes may be mixed in one
 * profile; each name is classified on its own:
 *   _R...                      Rust v0            (libiberty)
 *   _ZN...17h<16 hex>E         Rust legacy        (libiberty; hash dropped)
 *   _Z..., __Z...              C++ Itanium        (libiberty; no parameters)
 *   camlUnit__name_NNN         OCaml 4            Unit.name
 *   camlUnit.name_NNN          OCaml 5            Unit.name (Stdlib__List -> Stdlib.List)
 *   Unit.name_NNN              OCaml as perf prints it: the stamp is dropped
 */
size_t ember_demangle(const char *name, size_t len, char *out);

#endif
