/*
 * symtab.h - a symbol table searched by bisection (library-internal): an
 * address gives the symbol that covers it and the offset into it, a name
 * gives its address.
 *
 * Filled once (from an ELF file's .symtab or .dynsym, later from JIT maps),
 * then sorted; every lookup is a binary search, never a scan per address.
 * Names are borrowed: they must outlive the table.
 */
#ifndef EMBER_SYMBOL_SYMTAB_H
#define EMBER_SYMBOL_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ember_symtab;

struct ember_symtab_sym {
    const char *name;
    uint64_t addr, size;
};

int ember_symtab_new(struct ember_symtab **t);
void ember_symtab_free(struct ember_symtab *t);

/*
 * Adds a symbol. by_address: it covers [addr, addr + size) for address
 * lookups (size > 0); otherwise it is found by name only. Where several
 * symbols start at one address, the highest rank answers, then the first
 * added; by name, the first added wins. Returns 0 or -ENOMEM.
 */
int ember_symtab_add(struct ember_symtab *t, const char *name, uint64_t addr, uint64_t size,
                     int rank, bool by_address);

/* Sorts the indexes; no symbol may be added after. 0 or -ENOMEM. */
int ember_symtab_finish(struct ember_symtab *t);

/* The symbol covering addr (the one starting last when they nest) and
 * addr's offset into it: 0, or -ENOENT when no symbol covers addr. */
int ember_symtab_lookup(const struct ember_symtab *t, uint64_t addr,
                        const struct ember_symtab_sym **sym, uint64_t *offset);

/* The address of the symbol named name[0, len): 0, or -ENOENT. */
int ember_symtab_find(const struct ember_symtab *t, const char *name, size_t len, uint64_t *addr);

#endif
