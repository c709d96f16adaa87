/*
 * frame.h - what the symbolizer answers for an address (library-internal):
 * the source-level frames there, the function that holds the address and
 * the functions inlined into it, outermost first.
 */
#ifndef EMBER_SYMBOL_FRAME_H
#define EMBER_SYMBOL_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ember_symbol_frame {
    const char *function; /* as addr2line -f -C prints it; "??" when DWARF names none */
    const char *file;     /* the source file as DWARF names it; NULL when unknown */
    uint32_t line;        /* where in function the address is (or its next frame */
    uint32_t column;      /*   was inlined); 0 when unknown */
    bool inlined;         /* inlined into the frame before it */
};

struct ember_symbol_chain {
    const struct ember_symbol_frame *frames; /* outermost first */
    uint32_t count;                          /* at least 1 */
    bool from_dwarf; /* false: one frame, the ELF symbol around the address (no DWARF there) */
};

/*
 * Writes "function:file:line" with the file's directories removed, as
 * stackcollapse-perf.pl --context shows a frame ("??" for an unknown file,
 * 0 for an unknown line), into buf (cap bytes, NUL-terminated when cap > 0).
 * Returns the length the whole text needs, as snprintf.
 */
size_t ember_symbol_frame_context(const struct ember_symbol_frame *f, char *buf, size_t cap);

#endif
