/*
 * cfi.h - an ELF file's call frame information compiled into rows, for
 * unwinding recorded stacks fast (library-internal; see cfi.c).
 *
 * A row says, for the file addresses [start, end) of one FDE row, how
 * the caller's registers follow from the callee's: the CFA is a register
 * plus an offset, and each register is undefined, unchanged, at CFA +
 * offset, CFA + offset itself, or another register. These are the rules
 * of nearly every frame of compiled code; rows with anything else (a DWARF
 * expression) are marked complex, and their samples are unwound by
 * libdwfl. Rows are read through libdw (dwarf_cfi_addrframe and
 * dwarf_frame_register), once per row, so a row says what libdwfl's
 * unwinder would do there: the same rules, the ABI's defaults included.
 * x86-64's registers, in DWARF's order (symbol/unwind.h).
 */
#ifndef EMBER_SYMBOL_CFI_H
#define EMBER_SYMBOL_CFI_H

#include "symbol/unwind.h"

#include <stdbool.h>
#include <stdint.h>

enum ember_cfi_rule {
    EMBER_CFI_NONE,       /* no value (libdw could not say): left unset */
    EMBER_CFI_UNDEFINED,  /* unset; for the return address: the outermost frame */
    EMBER_CFI_SAME,       /* the callee's value */
    EMBER_CFI_OFFSET,     /* the 8 bytes at CFA + val */
    EMBER_CFI_VAL_OFFSET, /* CFA + val */
    EMBER_CFI_REGISTER,   /* the callee's register val */
};

/* cfa_reg's values that are not registers: the CFA undefined, or given by
 * an expression (ember_cfi_cfa_expr). */
enum { EMBER_CFI_NO_CFA = 0xff, EMBER_CFI_CFA_EXPR = 0xfe };

/* A CFA expression, in the subset of DWARF's stack machine compiled:
 * constants, registers (plus an offset), 8-byte loads, arithmetic and
 * comparisons, dup/drop/swap/over; no branches. Its depth never exceeds
 * its length, and it leaves a value (checked as it is compiled). The
 * forms seen: PLT entries' rsp + 8 + ((rip & 15) >= 11) * 8, OCaml 5's
 * switch to the C stack, *(rsp + 8) + 16. */
enum ember_cfi_atom {
    EMBER_CFI_OP_CONST, /* push num */
    EMBER_CFI_OP_REG,   /* push register reg + num; fails when it is unset */
    EMBER_CFI_OP_DEREF, /* the 8 bytes at the top; fails outside the stack copy */
    EMBER_CFI_OP_DUP,
    EMBER_CFI_OP_DROP,
    EMBER_CFI_OP_SWAP,
    EMBER_CFI_OP_OVER,
    EMBER_CFI_OP_UNARY,  /* dwarf: DW_OP_neg, not, abs */
    EMBER_CFI_OP_BINARY, /* dwarf: DW_OP_plus, minus, mul, and, or, xor, shl, shr,
                          * shra, eq, ne, lt, gt, le, ge */
};

enum { EMBER_CFI_EXPR_OPS = 16 };

struct ember_cfi_op {
    uint8_t atom; /* enum ember_cfi_atom */
    uint8_t reg;
    uint8_t dwarf; /* the DW_OP_ of a unary or binary operation */
    int64_t num;
};

struct ember_cfi_expr {
    struct ember_cfi_op ops[EMBER_CFI_EXPR_OPS];
    uint8_t n;
};

struct ember_cfi_row {
    uint64_t start, end;              /* file addresses */
    int64_t cfa_off;                  /* CFA = callee's register cfa_reg + cfa_off */
    int32_t val[EMBER_UNWIND_NREGS];  /* each register's rule's operand */
    uint8_t rule[EMBER_UNWIND_NREGS]; /* enum ember_cfi_rule */
    uint32_t same;                    /* bit r: rule[r] is EMBER_CFI_SAME */
    uint32_t computed;                /* bit r: OFFSET, VAL_OFFSET or REGISTER */
    uint32_t cfa_expr;                /* with EMBER_CFI_CFA_EXPR: its expression's number */
    uint8_t cfa_reg;                  /* or EMBER_CFI_NO_CFA, EMBER_CFI_CFA_EXPR */
    bool signal_frame;                /* the FDE's CIE has the 'S' augmentation */
    bool complex;                     /* a rule only libdwfl evaluates */
};

/* The files, by path. */
struct ember_cfi;
/* One ELF file: its CFI, and how its file addresses relate to a load base. */
struct ember_cfi_file;

int ember_cfi_new(struct ember_cfi **out);
void ember_cfi_free(struct ember_cfi *c);

/* The file at path, opened on first use: *out NULL when it cannot be
 * read as ELF (libdwfl then has no module there either). 0 or -ENOMEM. */
int ember_cfi_file(struct ember_cfi *c, const char *path, struct ember_cfi_file **out);

/* The file's load bias for a mapping whose start - file offset is base:
 * process address - bias = file address (libdwfl's, for dwfl_report_elf
 * with that base: base less the first PT_LOAD's aligned address for a
 * shared object, 0 for an executable). */
uint64_t ember_cfi_bias(const struct ember_cfi_file *f, uint64_t base);

/* Whether libdwfl would look in .debug_frame where .eh_frame says
 * nothing: the file has one. */
bool ember_cfi_has_debug_frame(const struct ember_cfi_file *f);

/* The row holding file address addr: 1 with *row, 0 when .eh_frame has
 * none, -ENOMEM. *row stays valid until the next call for this file.
 * Addresses asked before are found in a small cache, not searched: a
 * recording's return addresses repeat. */
int ember_cfi_row(struct ember_cfi_file *f, uint64_t addr, const struct ember_cfi_row **row);

/* The CFA expression of a row of f whose cfa_reg is EMBER_CFI_CFA_EXPR. */
const struct ember_cfi_expr *ember_cfi_cfa_expr(const struct ember_cfi_file *f,
                                                const struct ember_cfi_row *row);

#endif
