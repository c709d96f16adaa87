/*
 * leaf.h - putting back the caller a frame-pointer walk skips (issue 10,
 * item 2), for the perf.data reader: where a sample's user pc is in code
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

#endif
