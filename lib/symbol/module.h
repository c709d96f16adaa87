/*
 * module.h - one ELF file opened for symbolization (library-internal): its
 * build-id, its identity, its address range, its symbols, its DWARF.
 *
 * A module is opened once with libdwfl, whose standard callbacks find the
 * separate debug file by build-id (DIR/.build-id/xx/yyyy.debug under each
 * absolute directory of the debuginfo path) or by .gnu_debuglink. Addresses
 * here are file addresses: the virtual addresses the ELF file's own headers
 * and symbols use, whatever the mapping a process gave the file.
 */
#ifndef EMBER_SYMBOL_MODULE_H
#define EMBER_SYMBOL_MODULE_H

#include "symbol/inlines.h"
#include "symbol/symtab.h"
#include "base/arena.h"

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ember_symbol_module;

/*
 * Opens path[0, len) with libdwfl; cb must outlive the module. A file that
 * cannot be read as ELF still gives a module, one that resolves nothing and
 * says why (ember_symbol_module_error). Returns 0, or -ENOMEM.
 */
int ember_symbol_module_open(const char *path, size_t len, const Dwfl_Callbacks *cb,
                             struct ember_symbol_module **out);
void ember_symbol_module_free(struct ember_symbol_module *m);

const char *ember_symbol_module_path(const struct ember_symbol_module *m);
/* Why the file cannot be used ("" when it can). */
const char *ember_symbol_module_error(const struct ember_symbol_module *m);
/* The build-id from the file's ELF note; 0 bytes when it has none. */
size_t ember_symbol_module_build_id(const struct ember_symbol_module *m, const uint8_t **bits);
/* What memoized results are keyed by: the build-id when there is one,
 * else the path with the file's modification time and size. Two paths to
 * one build share it. */
void ember_symbol_module_identity(const struct ember_symbol_module *m, const char **key,
                                  size_t *len);

/* A number the module's owner gives it (the symbolizer: the memo key of
 * its identity); 0 until set. */
void ember_symbol_module_set_key(struct ember_symbol_module *m, uint32_t key);
uint32_t ember_symbol_module_key(const struct ember_symbol_module *m);

/* Whether addr is inside the file's loaded segments. */
bool ember_symbol_module_contains(const struct ember_symbol_module *m, uint64_t addr);

/*
 * The file address of a process address addr in a mapping of this file
 * that starts at map_start with file offset map_pgoff (as /proc/PID/maps
 * and perf's MMAP2 records give them): 0, or -ENOENT when no loaded
 * segment of the file holds that offset.
 */
int ember_symbol_module_file_address(const struct ember_symbol_module *m, uint64_t map_start,
                                     uint64_t map_pgoff, uint64_t addr, uint64_t *file_addr);

/* The file's ELF symbols (.symtab, else .dynsym), loaded on first use:
 * 0 with *t, -ENOENT for an unusable file, -ENOMEM. */
int ember_symbol_module_symbols(struct ember_symbol_module *m, const struct ember_symtab **t);
/* Room kept with m for perf's symbols of it (elfsyms.h: ember_elfsyms_of
 * fills it once), freed with it. */
struct ember_module_perf_syms {
    struct ember_symtab *syms;
    struct ember_arena names;
    int err;
    bool read;
};
struct ember_module_perf_syms *ember_symbol_module_perf_syms(struct ember_symbol_module *m);

/* One symbol of the file's table, as libdwfl reads it: .symtab, else the
 * separate debug file's, else .dynsym. */
struct ember_symbol_elfsym {
    const char *name; /* never empty */
    GElf_Sym sym;
    uint64_t addr; /* its file address */
    GElf_Word shndx;
    Elf *elf;       /* the file it is in: the module's or its debug file */
    uint32_t index; /* in the table, from 1 */
};

typedef int (*ember_symbol_each_fn)(void *ctx, const struct ember_symbol_elfsym *s);

/* The one reader of the file's ELF symbols, for every table built from
 * them (the module's own, perf's in elfsyms.c): fn for each named symbol,
 * in table order, until it returns nonzero (returned). An unusable file
 * has none. */
int ember_symbol_module_each_symbol(struct ember_symbol_module *m, ember_symbol_each_fn fn,
                                    void *ctx);

/* The index of the file's DWARF functions, built on first use: 0 with *x,
 * -ENOENT for an unusable file, -ENOMEM. */
int ember_symbol_module_inlines(struct ember_symbol_module *m, struct ember_inlines **x);

/* The modules' inline indexes (ember_symbol_module_inlines) built on up
 * to threads threads, the caller's among them (prepare.c): distinct
 * modules, none in use elsewhere meanwhile. What fails is left to the
 * first resolve, which meets it again. */
void ember_symbol_modules_prepare(struct ember_symbol_module *const *m, size_t n, unsigned threads);
/* The same for the modules' symbol tables, as libdwfl reads them (from
 * the debug file when the file has none), kept for the first lookup, and
 * perf's symbols of them (elfsyms.h), kept with each module. */
void ember_symbol_modules_read_symbols(struct ember_symbol_module *const *m, size_t n,
                                       unsigned threads);

/* libdwfl's view, for DWARF: the module and the bias to add to a file
 * address to get its libdwfl address. NULL for an unusable file. */
Dwfl_Module *ember_symbol_module_dwfl(const struct ember_symbol_module *m, uint64_t *bias);

#endif
