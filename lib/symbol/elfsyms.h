/*
 * elfsyms.h - the symbols perf finds in an ELF file, as perf script and
 * perf report name an address with them (library-internal): perf.data's
 * reader names user frames with this table.
 */
#ifndef EMBER_SYMBOL_ELFSYMS_H
#define EMBER_SYMBOL_ELFSYMS_H

#include "symbol/module.h"
#include "symbol/symtab.h"
#include "base/arena.h"

#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * The symbols of module m as perf reads them (util/symbol-elf.c): its
 * .symtab (or the debug file's, or .dynsym: libdwfl picks as perf does),
 * then .dynsym when the file has both, each round settled as perf settles
 * them, and the PLT's stubs. Addresses are file addresses; names are
 * perf's (demangled). Read once (on whichever thread asks first: one at a
 * time), kept with m and freed with it. Returns 0 with *out finished,
 * -ENOENT when m has no ELF file, or -ENOMEM.
 */
int ember_elfsyms_of(struct ember_symbol_module *m, const struct ember_symtab **out);

/* Whether m has a symbol table, its own or its debug file's (not .dynsym
 * alone): perf reads the first file that has one, of those it looks at. */
bool ember_elfsyms_has_symtab(struct ember_symbol_module *m);

/*
 * The PLT's stubs of elf into t, each named "sym@plt" (plt.c); *first
 * is the address of the first stub after .plt's header (UINT64_MAX: no
 * PLT), where a symbol before the PLT that perf stretched over it ends.
 * 0 or -ENOMEM.
 */
int ember_plt_read(Elf *elf, struct ember_arena *names, struct ember_symtab *t, uint64_t *first);

#endif
