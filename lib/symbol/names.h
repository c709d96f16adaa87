/*
 * names.h - function names as addr2line -C prints them (library-internal).
 */
#ifndef EMBER_SYMBOL_NAMES_H
#define EMBER_SYMBOL_NAMES_H

/*
 * A C++ symbol demangled with its parameters by libiberty, with the options
 * binutils' addr2line -C uses. Rust symbols (legacy and v0), OCaml symbols
 * and plain C names stay as they are: the --demangle transform reads those.
 * Returns a malloc()ed name, or NULL when name stays as it is (or memory is
 * exhausted: the name is then shown mangled, never lost).
 */
char *ember_symbol_demangle(const char *name);

#endif
