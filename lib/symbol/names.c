/*
 * names.c - C++ names demangled as addr2line -C does (see names.h).
 *
 * Legacy Rust symbols are valid C++ manglings too ("_ZN...17h<hash>E"):
 * libiberty's own Rust recognizer tells them apart before the C++
 * demangler would turn them into "path::h<hash>".
 */
#include "names.h"

#include <libiberty/demangle.h>
#include <stdlib.h>

static int is_rust(const char *name)
{
    char *rust = rust_demangle(name, 0);
    int found = rust != NULL;
    free(rust);
    return found;
}

char *ember_symbol_demangle(const char *name)
{
    if (is_rust(name))
        return NULL;
    return cplus_demangle_v3(name, DMGL_PARAMS | DMGL_ANSI);
}
