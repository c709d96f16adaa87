/*
 * inlines.h - the source-level frames at a machine address from DWARF,
 * through elfutils' libdw (library-internal): the function holding the
 * address, the chain of functions inlined into it, and where each one is.
 */
#ifndef EMBER_SYMBOL_INLINES_H
#define EMBER_SYMBOL_INLINES_H

#include "frame.h"

#include <elfutils/libdwfl.h>

/* Deeper chains are cut at their innermost frames' outer end. */
enum { EMBER_INLINES_MAX = 256 };

/* Keeps a copy of name[0, len) for as long as the frames are used; NULL
 * when memory is exhausted. */
typedef const char *(*ember_intern_fn)(void *ctx, const char *name, size_t len);

/*
 * Fills frames (EMBER_INLINES_MAX of them) with the functions at addr (a
 * libdwfl address in mod), outermost first, as addr2line -i -f -C finds
 * them: each function's name goes through intern; files point into libdw's
 * data (valid while mod is open). Returns how many, 0 when DWARF has no
 * function at addr, or -ENOMEM.
 */
int ember_inlines_at(Dwfl_Module *mod, Dwarf_Addr addr, struct ember_symbol_frame *frames,
                     ember_intern_fn intern, void *ctx);

#endif
