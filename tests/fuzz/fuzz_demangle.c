/*
 * fuzz_demangle.c - libFuzzer target for the demangler: any bytes as a
 * symbol (OCaml's rules are ours; C++ and Rust go through libiberty). The
 * result must fit its buffer, be NUL-terminated and have the length
 * returned.
 */
#include "transform/demangle.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char out[EMBER_DEMANGLE_MAX];
    size_t n = ember_demangle((const char *)data, size, out);
    if (n && (n >= EMBER_DEMANGLE_MAX || strlen(out) != n))
        abort();
    return 0;
}
