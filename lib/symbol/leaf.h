/*
 * leaf.h - putting back the caller a frame-pointer walk skips (issue 10,
 * item 2), for any reader of fp samples: where a sample's user pc is in code
 * whose frame is not set up on the frame pointer (a frameless leaf, or a
 * prologue before `mov %rsp,%rbp`), the kernel's walk starts from the
 * caller's frame and loses the caller. The module's CFI (.eh_frame) says
 * where the canonical frame address is; when it is SP-based, the return
 * address is at CFA - 8, inside the top of the stack `ember record` copies
 * with each fp sample (PERF_SAMPLE_STACK_USER, starting at SP).
 *
 * x86-64 only (elsewhere: -EOPNOTSUPP). One ember_leaf_cfi per module file,
 * kept by the caller (opening parses nothing until asked).
 */
#ifndef EMBER_SYMBOL_LEAF_H
#define EMBER_SYMBOL_LEAF_H

#include "symbol/symbolizer.h"

#include <stddef.h>
#include <stdint.h>

struct ember_leaf_cfi;

/* The CFI of an ELF file: 0, or a negative errno (-ENOENT, -EINVAL: no
 * ELF, -ENODATA: no CFI). */
int ember_leaf_cfi_open(const char *path, struct ember_leaf_cfi **out);
void ember_leaf_cfi_close(struct ember_leaf_cfi *c);

/* pc is the sampled instruction, in the file's addresses (the mapping's
 * load bias removed); stack the bytes copied from SP. Returns 1 with *ret
 * the return address the walk skipped, 0 when the frame is on the frame
 * pointer (the walk has the caller) or the CFI does not say, -ERANGE when
 * the copy is too short to hold it. */
int ember_leaf_caller(struct ember_leaf_cfi *c, uint64_t pc, const unsigned char *stack, size_t len,
                      uint64_t *ret);

/* A mapped file for the leaf fix: its module (for its file addresses)
 * and its CFI. */
struct ember_leaf_file {
    struct ember_symbol_module *mod; /* the symbolizer's */
    struct ember_leaf_cfi *cfi;
};

/* Opens path (len: its length) through sym: 0, -ENOMEM, or another negative errno
 * when the file cannot give a caller (f is then empty). */
int ember_leaf_file_open(struct ember_symbolizer *sym, const char *path, size_t len,
                         struct ember_leaf_file *f);
void ember_leaf_file_close(struct ember_leaf_file *f);

/* ember_leaf_caller at process address ip, in a mapping of the file that
 * starts at map_start with file offset map_pgoff: 1 with *ret, 0 when
 * there is no caller to put back (or the copy is too short), -ENOMEM. */
int ember_leaf_file_caller(const struct ember_leaf_file *f, uint64_t map_start, uint64_t map_pgoff,
                           uint64_t ip, const unsigned char *stack, size_t len, uint64_t *ret);

#endif
