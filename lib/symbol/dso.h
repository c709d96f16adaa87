/*
 * dso.h - where perf finds a mapped object's symbols (library-internal),
 * for any reader of recorded addresses: perf's build-id cache, an ELF
 * file chosen as perf chooses it (cached copy first, the first with a
 * symbol table), JIT compilers' /tmp/perf-PID.map files, and this
 * process's vDSO as a file; a file's build-id, for a recorder to write.
 * Everything here takes plain data (paths, build-ids); tables returned
 * are the caller's to free.
 */
#ifndef EMBER_SYMBOL_DSO_H
#define EMBER_SYMBOL_DSO_H

#include "symbol/symbolizer.h"
#include "symbol/symtab.h"
#include "base/arena.h"
#include "base/diag.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A build-id's bytes as hexadecimal, into out (2 * len + 1 bytes). */
void ember_dso_build_id_hex(char *out, const uint8_t *bits, size_t len);

/* perf's build-id cache (perf record copies there each binary it samples,
 * and perf script reads it first): DIR/.build-id/xx/rest/NAME under
 * $PERF_BUILDID_DIR, else ~/.debug, into out. True when that file can be
 * read; false too without a build-id (len 0). */
bool ember_dso_cache_path(const uint8_t *bits, size_t len, const char *name, char *out, size_t cap);

/* An ELF object to find perf's symbols of. */
struct ember_dso_elf {
    const char *path;        /* where it is read when perf's cache has no copy */
    const uint8_t *build_id; /* the recorded one, checked (len 0: none) */
    size_t build_id_len;
    bool vdso; /* its cached copy is named "vdso", not "elf" */
};

/*
 * The module and perf's symbols (elfsyms.h) of e, found as perf finds
 * them: the cached copy when there is one, then the file, the first with
 * a symbol table, else the first readable. *mod is NULL when none could be
 * used (why says why); the error is then the symbolizer's (-ESTALE: the
 * file changed since recording, -ENOENT). 0, a negative errno, -ENOMEM.
 */
int ember_dso_elf_symbols(struct ember_symbolizer *sym, const struct ember_dso_elf *e,
                          struct ember_symbol_module **mod, const struct ember_symtab **syms,
                          struct ember_diag *why);
/* The module ember_dso_elf_symbols looks at first (the cached copy, else
 * the file), opened in sym, for its symbols to be read ahead
 * (ember_symbol_modules_read_symbols): 0, or the symbolizer's error, which
 * ember_dso_elf_symbols meets again and says. */
int ember_dso_elf_first(struct ember_symbolizer *sym, const struct ember_dso_elf *e,
                        struct ember_symbol_module **mod);

/* The symbol perf names process address ip with, in a mapping of the
 * object at map_start with file offset map_pgoff: syms are mod's file
 * addresses (mod NULL: process addresses, a JIT map's). NULL: none, perf
 * prints [unknown]. */
const char *ember_dso_symbol_at(const struct ember_symbol_module *mod,
                                const struct ember_symtab *syms, uint64_t map_start,
                                uint64_t map_pgoff, uint64_t ip);

/* perf's dso__load_perf_map: a JIT map file's lines "START SIZE name"
 * (hexadecimal, process addresses), names in names. 0, -ENOENT, -ENOMEM. */
int ember_dso_jit_symbols(const char *path, struct ember_arena *names, struct ember_symtab **out);

/* The file at path opened read-only if it is a regular file (a FIFO or a
 * device named by a damaged recording must not block a reader): its
 * descriptor, or -errno (-EINVAL: not a regular file). */
int ember_dso_open_regular(const char *path);

/* This process's vDSO as a file (a memfd; the recorded one on the same
 * kernel): its descriptor, and its path for libdwfl. 0 or -ENOENT. */
int ember_dso_vdso_open(int *fd, char *path, size_t cap);

/* The build-id of the ELF file at path (its NT_GNU_BUILD_ID note) into
 * id: its length, 0 when it has none that fits cap or cannot be read. */
int ember_dso_file_build_id(const char *path, unsigned char *id, size_t cap);

#endif
