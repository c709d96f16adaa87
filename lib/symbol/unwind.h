/*
 * unwind.h - DWARF unwinding (library-internal): a thread's user registers
 * and a copy of the top of its stack -> its frames, leaf first, with
 * the frames libdwfl's CFI unwinder gives, as perf script unwinds
 * --call-graph dwarf samples: by CFI rows compiled once (unwind.c), or by
 * libdwfl itself where they cannot say (unwind_dwfl.c).
 *
 * The unwinder knows no recording format: it asks its caller what is
 * mapped at an address of a process (a file and its load base, the vDSO,
 * or nothing readable), and keeps one session per process key the caller
 * gives. x86-64's registers, in DWARF's order.
 */
#ifndef EMBER_SYMBOL_UNWIND_H
#define EMBER_SYMBOL_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* x86-64's DWARF registers: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip. */
enum { EMBER_UNWIND_NREGS = 17, EMBER_UNWIND_SP = 7, EMBER_UNWIND_IP = 16 };

enum ember_unwind_file {
    EMBER_UNWIND_NO_FILE, /* mapped, but no CFI to read (JIT code, the kernel...) */
    EMBER_UNWIND_ELF,     /* the ELF file at name */
    EMBER_UNWIND_VDSO,    /* the vDSO: this process's own is read */
};

/* What is mapped at an address: name identifies the file (a session whose
 * module there has another name is started again); base = map start -
 * file offset; [start, end) the addresses the same answer holds for
 * while the process's maps stay as they are (during one sample's walk). */
struct ember_unwind_map {
    const char *name;
    enum ember_unwind_file file;
    uint64_t base;
    uint64_t start, end;
};

/* The map holding pc in process: false when none does. */
typedef bool (*ember_unwind_map_fn)(void *ctx, uint32_t process, uint64_t pc,
                                    struct ember_unwind_map *out);

/* One thread's state when sampled. */
struct ember_unwind_thread {
    uint32_t process; /* the caller's key of its process */
    uint32_t pid, tid;
    uint64_t regs[EMBER_UNWIND_NREGS]; /* unrecorded ones 0 */
    const uint8_t *stack;              /* size bytes copied from regs[EMBER_UNWIND_SP] */
    size_t size;
};

struct ember_unwind;

int ember_unwind_new(struct ember_unwind **out, ember_unwind_map_fn map, void *ctx);
void ember_unwind_free(struct ember_unwind *u);
/* The thread's frames: ips[0, *n), leaf first (the sampled address, then
 * each caller's return address minus one), 1 <= *n <= max
 * (none when max is 0). 0 or -ENOMEM. */
int ember_unwind_frames(struct ember_unwind *u, const struct ember_unwind_thread *th, uint64_t *ips,
                        size_t max, size_t *n);

/* The thread's frames by the compiled rows alone: ember_unwind_frames's
 * contract, or 1 (and *n 0) where libdwfl must walk it. Unwinders on
 * several threads, each its own, read the rows; one of them walks with
 * libdwfl, whose sessions cost memory and open files per process. */
int ember_unwind_frames_fast(struct ember_unwind *u, const struct ember_unwind_thread *th,
                             uint64_t *ips, size_t max, size_t *n);

/* Every sample through libdwfl, as before the compiled rows: the tests
 * compare the two. */
void ember_unwind_set_dwfl_only(struct ember_unwind *u, bool on);
/* The samples unwound so far by the compiled rows and by libdwfl. */
void ember_unwind_counts(const struct ember_unwind *u, uint64_t *fast, uint64_t *slow);

#endif
