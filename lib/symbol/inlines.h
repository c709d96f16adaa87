/*
 * inlines.h - the source-level frames at a machine address from DWARF,
 * through elfutils' libdw (library-internal): the function holding the
 * address, the chain of functions inlined into it, and where each one is.
 *
 * An index of one module's functions, built once: their address ranges,
 * searched by bisection. A lookup then descends from the function found
 * into the inlined instances that hold the address, so that its cost does
 * not grow with the size of the compilation unit (a whole program's, with
 * LTO).
 */
#ifndef EMBER_SYMBOL_INLINES_H
#define EMBER_SYMBOL_INLINES_H

#include "symbol/frame.h"
#include "symbol/symtab.h"

#include <elfutils/libdwfl.h>

/* Deeper chains keep their innermost frames. */
enum { EMBER_INLINES_MAX = 256 };

struct ember_inlines;

/* Indexes mod's DWARF functions (none when it has no DWARF): 0 or -ENOMEM.
 * mod and symtab (the file's ELF symbols, to name what DWARF cannot; may be
 * NULL), must outlive the index; elf_bias converts symtab's addresses to
 * libdwfl's (ember_symbol_module_dwfl). */
int ember_inlines_new(Dwfl_Module *mod, const struct ember_symtab *symtab, uint64_t elf_bias,
                      struct ember_inlines **out);
void ember_inlines_free(struct ember_inlines *x);

/*
 * Fills frames (EMBER_INLINES_MAX of them) with the functions at addr (a
 * libdwfl address in the module), outermost first, as addr2line -i -f -C
 * finds them: names and files live as long as the index (and the module).
 * Returns how many, 0 when DWARF has no function at addr, or -ENOMEM.
 */
int ember_inlines_at(struct ember_inlines *x, Dwarf_Addr addr, struct ember_symbol_frame *frames);

#endif
