/*
 * cfi.c - ELF files' call frame information compiled into rows (cfi.h).
 *
 * libdwfl's unwinder asks libdw for the CFI row of every frame of every
 * sample (dwarf_cfi_addrframe executes the FDE's program up to the pc and
 * allocates the result) and then evaluates each register's rule as a
 * DWARF expression: about 16 us per sample of a python3 recording. Here a
 * row is asked for once, its rules kept in a fixed form, and every later
 * frame in its address range is a binary search. The rows of a file are
 * kept sorted by start, and do not overlap: each is part of one FDE's
 * row (cut where its program advances), from the first address asked
 * for in it to the row's end.
 * Invariants: a file is opened once per path and kept until
 * ember_cfi_free; rows[0, nrows) are sorted by start; a file that is not
 * ELF is remembered as such (elf NULL), so it is not opened again.
 */
#include "symbol/cfi.h"
#include "symbol/dso.h"
#include "base/strmap.h"
#include "base/vec.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ember_cfi_file {
    int fd;
    Elf *elf;       /* NULL: not ELF (or unreadable) */
    Dwarf_CFI *cfi; /* .eh_frame's, NULL when it has none */
    bool exec;      /* ET_EXEC: addresses are absolute */
    bool debug_frame;
    uint64_t vaddr; /* the first PT_LOAD's address, aligned down */
    struct ember_cfi_row *rows;
    size_t nrows, rcap;
    struct ember_cfi_expr *exprs; /* the rows' CFA expressions */
    size_t nexprs, ecap;
    struct hot_row *hot; /* addresses found before, by hash; emptied when rows move */
};

/* An address and its row's index in rows (at NO_ROW: empty). */
struct hot_row {
    uint64_t addr;
    uint32_t at;
};

enum { HOT_ROWS = 512, NO_ROW = UINT32_MAX };

struct ember_cfi {
    struct ember_strmap files; /* path -> struct ember_cfi_file * */
};

int ember_cfi_new(struct ember_cfi **out)
{
    struct ember_cfi *c = calloc(1, sizeof(*c));
    if (!c || ember_strmap_init(&c->files) < 0) {
        free(c);
        return -ENOMEM;
    }
    /* libelf's one global, set on the thread that makes the table: tables
     * of several threads' unwinders open files at once (perf_data_jobs.c) */
    elf_version(EV_CURRENT);
    *out = c;
    return 0;
}

static void file_free(struct ember_cfi_file *f)
{
    if (f->cfi)
        dwarf_cfi_end(f->cfi);
    if (f->elf)
        elf_end(f->elf);
    if (f->fd >= 0)
        close(f->fd);
    free(f->rows);
    free(f->exprs);
    free(f->hot);
    free(f);
}

void ember_cfi_free(struct ember_cfi *c)
{
    if (!c)
        return;
    struct strmap_slot *all = ember_strmap_sorted(&c->files);
    for (size_t i = 0; all && i < c->files.count; i++)
        file_free(all[i].value);
    free(all);
    ember_strmap_release(&c->files);
    free(c);
}

/* What libdwfl's module for the file would know: its load address and
 * whether it has a .debug_frame to fall back on. */
static void file_layout(struct ember_cfi_file *f)
{
    GElf_Ehdr eh;
    size_t phnum, shstrndx;
    if (!gelf_getehdr(f->elf, &eh))
        return;
    f->exec = eh.e_type == ET_EXEC;
    for (size_t i = 0; elf_getphdrnum(f->elf, &phnum) == 0 && i < phnum; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(f->elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
            f->vaddr = ph.p_vaddr & -ph.p_align;
            break;
        }
    }
    if (elf_getshdrstrndx(f->elf, &shstrndx) != 0)
        return;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(f->elf, scn));) {
        GElf_Shdr sh;
        const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(f->elf, shstrndx, sh.sh_name) : 0;
        if (name && strcmp(name, ".debug_frame") == 0)
            f->debug_frame = true;
    }
}

static void hot_clear(struct ember_cfi_file *f)
{
    for (size_t i = 0; i < HOT_ROWS; i++)
        f->hot[i] = (struct hot_row){0, NO_ROW};
}

static int file_open(const char *path, struct ember_cfi_file **out)
{
    struct ember_cfi_file *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->fd = ember_dso_open_regular(path);
    if (f->fd >= 0) {
        f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
        if (f->elf && elf_kind(f->elf) != ELF_K_ELF) {
            elf_end(f->elf);
            f->elf = NULL;
        }
    }
    if (f->elf) {
        f->cfi = dwarf_getcfi_elf(f->elf);
        file_layout(f);
        if (!(f->hot = malloc(HOT_ROWS * sizeof(*f->hot)))) {
            file_free(f);
            return -ENOMEM;
        }
        hot_clear(f);
    }
    *out = f;
    return 0;
}

int ember_cfi_file(struct ember_cfi *c, const char *path, struct ember_cfi_file **out)
{
    size_t len = strlen(path);
    struct ember_cfi_file *f = ember_strmap_get(&c->files, path, len);
    if (!f) {
        int err = file_open(path, &f);
        if (err)
            return err;
        if (ember_strmap_put(&c->files, path, len, f) < 0) {
            file_free(f);
            return -ENOMEM;
        }
    }
    *out = f->elf ? f : NULL;
    return 0;
}

uint64_t ember_cfi_bias(const struct ember_cfi_file *f, uint64_t base)
{
    return f->exec ? 0 : base - f->vaddr;
}

bool ember_cfi_has_debug_frame(const struct ember_cfi_file *f)
{
    return f->debug_frame;
}

/* ---- rows ----------------------------------------------------------------- */

/* One register's rule, as dwarf_frame_register hands it to libdwfl's
 * handle_cfi: no operations and ops_mem means undefined, no operations
 * and NULL the same value, else a location or value expression, of which
 * libdw's forms for offset(N), val_offset(N) and register(R) are known. */
static void compile_register(Dwarf_Frame *frame, int regno, struct ember_cfi_row *row)
{
    Dwarf_Op mem[3], *ops;
    size_t n;
    uint8_t *rule = &row->rule[regno];
    int32_t *val = &row->val[regno];
    *val = 0;
    if (dwarf_frame_register(frame, regno, mem, &ops, &n) != 0)
        *rule = EMBER_CFI_NONE;
    else if (n == 0)
        *rule = ops == mem ? EMBER_CFI_UNDEFINED : ops == NULL ? EMBER_CFI_SAME : EMBER_CFI_NONE;
    else if (n == 1 && ops[0].atom == DW_OP_regx && ops[0].number < EMBER_UNWIND_NREGS)
        *rule = EMBER_CFI_REGISTER, *val = (int32_t)ops[0].number;
    else if (ops[0].atom != DW_OP_call_frame_cfa || n > 3)
        row->complex = true;
    else {
        size_t i = 1;
        int64_t off = i < n && ops[i].atom == DW_OP_plus_uconst ? (int64_t)ops[i++].number : 0;
        *val = (int32_t)off;
        *rule = EMBER_CFI_OFFSET;
        if (i < n && ops[i].atom == DW_OP_stack_value)
            *rule = EMBER_CFI_VAL_OFFSET, i++;
        if (i != n || off != *val) /* rows keep 32-bit offsets: others are libdwfl's */
            row->complex = true;
    }
}

/* One DWARF operation into e, its effect on the stack's depth checked:
 * false for one outside the subset (cfi.h), or a stack that would run
 * dry. */
static bool compile_op(const Dwarf_Op *op, struct ember_cfi_expr *e, int *depth)
{
    static const uint8_t unary[] = {DW_OP_neg, DW_OP_not, DW_OP_abs};
    static const uint8_t binary[] = {DW_OP_plus, DW_OP_minus, DW_OP_mul, DW_OP_and,  DW_OP_or,
                                     DW_OP_xor,  DW_OP_shl,   DW_OP_shr, DW_OP_shra, DW_OP_eq,
                                     DW_OP_ne,   DW_OP_lt,    DW_OP_gt,  DW_OP_le,   DW_OP_ge};
    struct ember_cfi_op o = {.dwarf = op->atom, .num = (int64_t)op->number};
    int needs = 0, adds = 1;
    uint8_t a = op->atom;
    if (a == DW_OP_nop || a == DW_OP_stack_value) /* a CFA is a value either way */
        return true;
    if (e->n == EMBER_CFI_EXPR_OPS)
        return false;
    if (a >= DW_OP_lit0 && a <= DW_OP_lit31)
        o.atom = EMBER_CFI_OP_CONST, o.num = a - DW_OP_lit0;
    else if ((a >= DW_OP_const1u && a <= DW_OP_consts) || a == DW_OP_constu)
        o.atom = EMBER_CFI_OP_CONST;
    else if (a >= DW_OP_breg0 && a <= DW_OP_breg31)
        o.atom = EMBER_CFI_OP_REG, o.reg = (uint8_t)(a - DW_OP_breg0);
    else if (a >= DW_OP_reg0 && a <= DW_OP_reg31)
        o.atom = EMBER_CFI_OP_REG, o.reg = (uint8_t)(a - DW_OP_reg0), o.num = 0;
    else if ((a == DW_OP_bregx || a == DW_OP_regx) && op->number < EMBER_UNWIND_NREGS)
        o.atom = EMBER_CFI_OP_REG, o.reg = (uint8_t)op->number,
        o.num = a == DW_OP_bregx ? (int64_t)op->number2 : 0;
    else if (a == DW_OP_deref)
        o.atom = EMBER_CFI_OP_DEREF, needs = 1, adds = 0;
    else if (a == DW_OP_dup || a == DW_OP_over)
        o.atom = a == DW_OP_dup ? EMBER_CFI_OP_DUP : EMBER_CFI_OP_OVER,
        needs = a == DW_OP_dup ? 1 : 2;
    else if (a == DW_OP_drop)
        o.atom = EMBER_CFI_OP_DROP, needs = 1, adds = -1;
    else if (a == DW_OP_swap)
        o.atom = EMBER_CFI_OP_SWAP, needs = 2, adds = 0;
    else if (memchr(unary, a, sizeof(unary)))
        o.atom = EMBER_CFI_OP_UNARY, needs = 1, adds = 0;
    else if (memchr(binary, a, sizeof(binary)))
        o.atom = EMBER_CFI_OP_BINARY, needs = 2, adds = -1;
    else if (a == DW_OP_plus_uconst && e->n + 1 < EMBER_CFI_EXPR_OPS) /* const, plus */
        return compile_op(&(Dwarf_Op){.atom = DW_OP_constu, .number = op->number}, e, depth) &&
               compile_op(&(Dwarf_Op){.atom = DW_OP_plus}, e, depth);
    else
        return false;
    if (o.atom == EMBER_CFI_OP_REG && o.reg >= EMBER_UNWIND_NREGS)
        return false;
    if (*depth < needs)
        return false;
    *depth += adds;
    e->ops[e->n++] = o;
    return true;
}

/* A CFA expression kept for the row, when the subset can say it. */
static int compile_cfa_expr(struct ember_cfi_file *f, const Dwarf_Op *ops, size_t n,
                            struct ember_cfi_row *row)
{
    struct ember_cfi_expr e = {.n = 0};
    int depth = 0;
    for (size_t i = 0; i < n; i++)
        if (!compile_op(&ops[i], &e, &depth)) {
            row->complex = true;
            return 0;
        }
    if (depth < 1 || f->nexprs >= UINT32_MAX) {
        row->complex = true;
        return 0;
    }
    if (EMBER_VEC_RESERVE(f->exprs, f->ecap, f->nexprs + 1) < 0)
        return -ENOMEM;
    row->cfa_reg = EMBER_CFI_CFA_EXPR;
    row->cfa_expr = (uint32_t)f->nexprs;
    f->exprs[f->nexprs++] = e;
    return 0;
}

/* The CFA's rule: register + offset, an expression, or undefined. */
static int compile_cfa(struct ember_cfi_file *f, Dwarf_Frame *frame, struct ember_cfi_row *row)
{
    Dwarf_Op *ops;
    size_t n;
    row->cfa_reg = EMBER_CFI_NO_CFA;
    if (dwarf_frame_cfa(frame, &ops, &n) != 0 || n == 0)
        return 0;
    if (n == 1 && ops[0].atom == DW_OP_bregx && ops[0].number < EMBER_UNWIND_NREGS) {
        row->cfa_reg = (uint8_t)ops[0].number;
        row->cfa_off = (int64_t)ops[0].number2;
        return 0;
    }
    return compile_cfa_expr(f, ops, n, row);
}

static int compile_row(struct ember_cfi_file *f, Dwarf_Frame *frame, struct ember_cfi_row *row)
{
    Dwarf_Addr start, end;
    bool signal;
    memset(row, 0, sizeof(*row));
    /* a return address column other than rip is another ABI's: libdwfl's */
    if (dwarf_frame_info(frame, &start, &end, &signal) != EMBER_UNWIND_IP)
        row->complex = true;
    row->start = start;
    row->end = end;
    row->signal_frame = signal;
    for (int r = 0; r < EMBER_UNWIND_NREGS; r++) {
        compile_register(frame, r, row);
        if (row->rule[r] == EMBER_CFI_SAME)
            row->same |= 1u << r;
        else if (row->rule[r] >= EMBER_CFI_OFFSET)
            row->computed |= 1u << r;
    }
    return compile_cfa(f, frame, row);
}

const struct ember_cfi_expr *ember_cfi_cfa_expr(const struct ember_cfi_file *f,
                                                const struct ember_cfi_row *row)
{
    return &f->exprs[row->cfa_expr];
}

/* The index of the first row starting after addr. */
static size_t row_after(const struct ember_cfi_file *f, uint64_t addr)
{
    size_t lo = 0, hi = f->nrows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->rows[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct hot_row *hot_slot(const struct ember_cfi_file *f, uint64_t addr)
{
    return &f->hot[(addr * 0x9e3779b97f4a7c15ULL) >> 55]; /* 9 bits: HOT_ROWS */
}

int ember_cfi_row(struct ember_cfi_file *f, uint64_t addr, const struct ember_cfi_row **row)
{
    struct hot_row *h = hot_slot(f, addr);
    if (h->at != NO_ROW && h->addr == addr) {
        *row = &f->rows[h->at];
        return 1;
    }
    size_t at = row_after(f, addr);
    if (at > 0 && addr < f->rows[at - 1].end) {
        *row = &f->rows[at - 1];
        if (at - 1 < NO_ROW)
            *h = (struct hot_row){addr, (uint32_t)(at - 1)};
        return 1;
    }
    Dwarf_Frame *frame;
    if (!f->cfi || dwarf_cfi_addrframe(f->cfi, addr, &frame) != 0)
        return 0;
    struct ember_cfi_row new_row;
    int err = compile_row(f, frame, &new_row);
    free(frame);
    if (err)
        return err;
    /* The row is kept from addr: libdw's start is where the state
     * DW_CFA_restore_state brings back was made, which may be rows
     * before (its end is the next advance's, exact). rows[at] starts
     * after addr: a row reaching over it (FDEs that overlap) is cut. */
    new_row.start = addr;
    if (new_row.end <= addr)
        new_row.end = addr + 1;
    if (at < f->nrows && f->rows[at].start < new_row.end)
        new_row.end = f->rows[at].start;
    if (EMBER_VEC_RESERVE(f->rows, f->rcap, f->nrows + 1) < 0)
        return -ENOMEM;
    memmove(&f->rows[at + 1], &f->rows[at], (f->nrows - at) * sizeof(*f->rows));
    f->rows[at] = new_row;
    f->nrows++;
    hot_clear(f); /* the rows after it moved */
    *row = &f->rows[at];
    return 1;
}
