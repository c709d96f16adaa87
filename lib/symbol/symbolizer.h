/*
 * symbolizer.h - (module, address) -> the source-level frames there, with
 * their inline chain (library-internal).
 *
 * Modules (ELF files) are opened once each, results are memoized per
 * (module identity, address): the build-id, or the path with its mtime
 * when the file has none, so two paths to one build share results. ELF
 * symbols are searched by bisection, lines and inline chains come from
 * libdw. Results are owned by the symbolizer and valid until it is freed.
 * A symbolizer is used by one thread at a time.
 *
 * Two ways in: perf script's frame lines (module path, the pc as text,
 * and perf's "sym+0xOFF"), and a module with a file address, for readers
 * and samplers that know the mappings (ember record, perf.data).
 */
#ifndef EMBER_SYMBOL_SYMBOLIZER_H
#define EMBER_SYMBOL_SYMBOLIZER_H

#include "ember/base.h"
#include "symbol/frame.h"
#include "symbol/module.h"

#include <stddef.h>
#include <stdint.h>

struct ember_symbolizer;

int ember_symbolizer_new(struct ember_symbolizer **s);
void ember_symbolizer_free(struct ember_symbolizer *s);

/*
 * libdwfl's debuginfod client loaded as libdwfl loads it, once a process,
 * the first time a module's debug file is not on disk, on that thread:
 * libdebuginfod, and with it libcurl and its TLS, dozens of libraries
 * (7-9 ms here). A reader with threads calls this on one of its own early,
 * so that naming does not wait for it. No server is asked anything.
 */
void ember_symbol_debuginfod_load(void);

/*
 * Where separate debug files are looked for, in libdwfl's syntax (see
 * dwfl_standard_find_debuginfo: "" is the file's own directory, each
 * absolute directory D is searched as D/.build-id/xx/yyyy.debug and by
 * .gnu_debuglink name). Default ":.debug:/usr/lib/debug". Only before the
 * first module is opened: -EBUSY after, -ENOMEM.
 */
int ember_symbolizer_set_debuginfo_path(struct ember_symbolizer *s, const char *path);

/*
 * The module for the ELF file at path[0, len), opened on first use. When
 * build_id_len > 0, the file's build-id must be build_id. Returns 0 with
 * *m, or fills d (the file, and why) and returns:
 *   -ENOENT  the file cannot be read as ELF (missing, not ELF, unreadable)
 *   -ESTALE  build-id mismatch: the file is not the one that was recorded
 *            (its build-id differs, or it has none)
 *   -ENOMEM
 */
int ember_symbolizer_module(struct ember_symbolizer *s, const char *path, size_t len,
                            const uint8_t *build_id, size_t build_id_len,
                            struct ember_symbol_module **m, struct ember_diag *d);

/*
 * The frames at file address addr of module m (see
 * ember_symbol_module_file_address for a process address): from DWARF,
 * else one frame named by the ELF symbol that covers addr. Returns 0 with
 * *out, -ENOENT when neither knows addr, or -ENOMEM.
 */
int ember_symbolizer_resolve(struct ember_symbolizer *s, struct ember_symbol_module *m,
                             uint64_t addr, const struct ember_symbol_chain **out);

/*
 * The DWARF frames of one of perf script's frame lines, as
 * stackcollapse-perf.pl --inline finds them with addr2line: pc (hex text)
 * is taken as a file address of mod when it is one, else the address is
 * sym's value plus its offset ("func+0xOFF", perf's name for a runtime
 * address). Returns 0 with *out (from DWARF, never an ELF symbol alone),
 * -ENOENT when the line cannot be resolved that way, or -ENOMEM.
 */
int ember_symbolizer_resolve_perf(struct ember_symbolizer *s, const char *mod, size_t modlen,
                                  const char *pc, size_t pclen, const char *sym, size_t symlen,
                                  const struct ember_symbol_chain **out);

#endif
