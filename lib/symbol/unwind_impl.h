/*
 * unwind_impl.h - what the two unwinders of symbol/unwind.h share
 * (library-internal): unwind.c walks a stack with compiled CFI rows
 * (symbol/cfi.h), unwind_dwfl.c with libdwfl, for the samples whose rows
 * hold rules the compiled form cannot say.
 * Invariants: both read memory only from the thread's stack copy and ask
 * the caller's map callback what is mapped; both read the vDSO from this
 * process's own image, opened once.
 */
#ifndef EMBER_SYMBOL_UNWIND_IMPL_H
#define EMBER_SYMBOL_UNWIND_IMPL_H

#include "symbol/cfi.h"
#include "symbol/unwind.h"

struct ember_unwind_dwfl;

struct ember_unwind {
    ember_unwind_map_fn map;
    void *ctx;
    bool dwfl_only; /* every sample through libdwfl (tests compare the two) */
    int vdso_fd;    /* this process's vDSO, for frames in [vdso]: -1 until needed */
    bool vdso_tried;
    char vdso_path[64];
    struct ember_cfi *cfi;
    struct ember_unwind_dwfl *dwfl; /* NULL until a sample needs it */
    uint64_t nfast, nslow;          /* samples unwound each way */
};

/* The file to read a map's CFI from: its path; for [vdso], this
 * process's. NULL: none (JIT code, the kernel...). */
const char *ember_unwind_file_of(struct ember_unwind *u, const struct ember_unwind_map *m);

/* The 8 bytes at addr, if the thread's stack copy holds them: the only
 * memory either way reads. */
bool ember_unwind_stack_read(const struct ember_unwind_thread *th, uint64_t addr, uint64_t *v);

/* The sample unwound by libdwfl (unwind_dwfl.c): ember_unwind_frames's
 * contract. */
int ember_unwind_dwfl_frames(struct ember_unwind *u, const struct ember_unwind_thread *th,
                             uint64_t *ips, size_t max, size_t *n);
void ember_unwind_dwfl_free(struct ember_unwind_dwfl *d);

#endif
