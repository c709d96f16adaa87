/*
 * inline.h - source-level frames for a machine address: the chain of
 * functions inlined at it, from DWARF through elfutils (library-internal).
 *
 * This is what `stackcollapse-perf.pl --inline` gets from running
 * `addr2line -a PC -e MODULE -i -f -s -C` per address, without the process
 * per address: modules are opened once and results cached per (module, pc).
 */
#ifndef EMBER_SYMBOL_INLINE_H
#define EMBER_SYMBOL_INLINE_H

#include <stdbool.h>
#include <stddef.h>

struct ember_symbolizer;

int ember_symbolizer_new(struct ember_symbolizer **s);
void ember_symbolizer_free(struct ember_symbolizer *s);

/*
 * The inline chain at pc (hex text, as perf prints it) in the ELF file mod:
 * "outer;inner;innermost", root-most first; with context each entry is
 * "func:file:line" (file without directories). sym is perf's symbol
 * ("func+0xOFF"), used when pc is not an address of the file: the address is
 * then func's value plus OFF. Returns 1 with *out set (valid until the
 * symbolizer is freed), -ENOENT when the address cannot be resolved, or
 * another negative error.
 */
int ember_symbolizer_inline(struct ember_symbolizer *s, const char *mod, size_t modlen,
                            const char *pc, size_t pclen, const char *sym, size_t symlen,
                            bool context, const char **out, size_t *outlen);

#endif
