/*
 * fuzz_demangle.c - libFuzzer target for the demangler: any bytes as a
 * symbol (OCaml's rules are ours; C++ and Rust go through libiberty), in
 * each style. A transform's name must be shorter than EMBER_DEMANGLE_MAX.
 */
#include "symbol/demangle.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *out = ember_demangle((const char *)data, size, EMBER_DEMANGLE_TRANSFORM);
    if (out && strlen(out) >= EMBER_DEMANGLE_MAX)
        abort();
    free(out);
    free(ember_demangle((const char *)data, size, EMBER_DEMANGLE_PERF));
    free(ember_demangle((const char *)data, size, EMBER_DEMANGLE_ADDR2LINE));
    return 0;
}
