/*
 * unwind.c - DWARF call graphs (perf record --call-graph dwarf) unwound
 * fast: a thread's registers and its stack copy walked frame by frame
 * with CFI rows compiled once per address range (symbol/cfi.h), to the
 * frames libdwfl's unwinder gives (unwind_dwfl.c), which perf script
 * uses. Each step follows libdwfl's (frame_unwind.c, handle_cfi):
 *   - a frame's row is looked up at its pc, less one unless it is the
 *     sampled frame or its callee was a signal frame (a return address
 *     points after the call);
 *   - every register's rule is evaluated against the callee's registers;
 *     one that cannot be (its register unset, its memory outside the
 *     stack copy) is left unset;
 *   - the return address undefined, unset or 0 is the outermost frame;
 *   - where no file's .eh_frame holds the pc, x86-64's frame-pointer
 *     step (elfutils' x86_64_unwind) is tried, which must move the stack
 *     up;
 *   - a frame is an activation (its pc kept, not less one) when it is the
 *     sampled one, or it or its caller's row is a signal frame.
 * CFA expressions in the subset cfi.h compiles (PLT entries', OCaml's) are
 * evaluated here. A sample meeting a row with another DWARF expression,
 * or an address only .debug_frame covers, is unwound again whole by
 * libdwfl: the answer is libdwfl's in every case, in about 0.75 us per
 * sample of a python3 recording (17 frames, 45 ns each: timed around
 * ember_unwind_frames) where libdwfl takes 16 us. What a frame costs is
 * mostly its row's cache miss: a walk asks for each map once, and rows
 * are found again through a small cache of addresses.
 *
 * One difference is kept: libdwfl cannot start a process's session from
 * a sample whose address no ELF file holds (JIT code), and gives that
 * sample its address alone; here it is unwound by frame pointers as the
 * process's later samples are.
 */
#include "symbol/unwind_impl.h"
#include "symbol/dso.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ember_unwind_new(struct ember_unwind **out, ember_unwind_map_fn map, void *ctx)
{
    struct ember_unwind *u = calloc(1, sizeof(*u));
    if (!u || ember_cfi_new(&u->cfi) < 0) {
        free(u);
        return -ENOMEM;
    }
    u->map = map;
    u->ctx = ctx;
    u->vdso_fd = -1;
    *out = u;
    return 0;
}

void ember_unwind_free(struct ember_unwind *u)
{
    if (!u)
        return;
    ember_unwind_dwfl_free(u->dwfl);
    ember_cfi_free(u->cfi);
    if (u->vdso_fd >= 0)
        close(u->vdso_fd);
    free(u);
}

void ember_unwind_set_dwfl_only(struct ember_unwind *u, bool on)
{
    u->dwfl_only = on;
}

void ember_unwind_counts(const struct ember_unwind *u, uint64_t *fast, uint64_t *slow)
{
    *fast = u->nfast;
    *slow = u->nslow;
}

const char *ember_unwind_file_of(struct ember_unwind *u, const struct ember_unwind_map *m)
{
    if (m->file == EMBER_UNWIND_ELF)
        return m->name;
    if (m->file != EMBER_UNWIND_VDSO)
        return NULL;
    if (!u->vdso_tried)
        ember_dso_vdso_open(&u->vdso_fd, u->vdso_path, sizeof(u->vdso_path));
    u->vdso_tried = true;
    return u->vdso_fd >= 0 ? u->vdso_path : NULL;
}

/* ---- one frame's state ---------------------------------------------------- */

struct frame {
    uint64_t regs[EMBER_UNWIND_NREGS];
    uint32_t set; /* bit r: regs[r] known */
    uint64_t pc;
    bool initial, signal;
};

enum step { STEP_NEXT, STEP_END, STEP_FAIL, STEP_SLOW };

static bool has(const struct frame *f, unsigned r)
{
    return f->set >> r & 1;
}

static void put(struct frame *f, unsigned r, uint64_t v)
{
    f->regs[r] = v;
    f->set |= 1u << r;
}

bool ember_unwind_stack_read(const struct ember_unwind_thread *th, uint64_t addr, uint64_t *v)
{
    uint64_t sp = th->regs[EMBER_UNWIND_SP];
    if (addr < sp || th->size < 8 || addr - sp > th->size - 8)
        return false;
    memcpy(v, th->stack + (addr - sp), sizeof(*v));
    return true;
}

/* a op b, as libdwfl's expr_eval computes it on x86-64 (shift counts
 * taken modulo 64, as the shift instructions do). */
static uint64_t binary(uint8_t op, uint64_t a, uint64_t b)
{
    int64_t sa = (int64_t)a, sb = (int64_t)b;
    switch (op) {
    case DW_OP_plus:
        return a + b;
    case DW_OP_minus:
        return a - b;
    case DW_OP_mul:
        return a * b;
    case DW_OP_and:
        return a & b;
    case DW_OP_or:
        return a | b;
    case DW_OP_xor:
        return a ^ b;
    case DW_OP_shl:
        return a << (b & 63);
    case DW_OP_shr:
        return a >> (b & 63);
    case DW_OP_shra:
        return (uint64_t)(sa >> (b & 63));
    case DW_OP_eq:
        return sa == sb;
    case DW_OP_ne:
        return sa != sb;
    case DW_OP_lt:
        return sa < sb;
    case DW_OP_gt:
        return sa > sb;
    case DW_OP_le:
        return sa <= sb;
    default:
        return sa >= sb; /* DW_OP_ge: the only other one compiled */
    }
}

static uint64_t unary(uint8_t op, uint64_t a)
{
    int64_t sa = (int64_t)a;
    if (op == DW_OP_neg)
        return -a;
    if (op == DW_OP_not)
        return ~a;
    return sa < 0 ? -a : a; /* DW_OP_abs */
}

/* A CFA expression's value: false where libdwfl's evaluation fails (a
 * register unset, memory outside the stack copy). The depth was checked
 * when it was compiled. */
static bool eval_cfa(const struct ember_cfi_expr *e, const struct ember_unwind_thread *th,
                     const struct frame *cur, uint64_t *out)
{
    uint64_t st[EMBER_CFI_EXPR_OPS];
    size_t n = 0;
    for (size_t i = 0; i < e->n; i++) {
        const struct ember_cfi_op *o = &e->ops[i];
        switch (o->atom) {
        case EMBER_CFI_OP_CONST:
            st[n++] = (uint64_t)o->num;
            break;
        case EMBER_CFI_OP_REG:
            if (!has(cur, o->reg))
                return false;
            st[n++] = cur->regs[o->reg] + (uint64_t)o->num;
            break;
        case EMBER_CFI_OP_DEREF:
            if (!ember_unwind_stack_read(th, st[n - 1], &st[n - 1]))
                return false;
            break;
        case EMBER_CFI_OP_DUP:
            st[n] = st[n - 1], n++;
            break;
        case EMBER_CFI_OP_DROP:
            n--;
            break;
        case EMBER_CFI_OP_SWAP: {
            uint64_t t = st[n - 1];
            st[n - 1] = st[n - 2], st[n - 2] = t;
            break;
        }
        case EMBER_CFI_OP_OVER:
            st[n] = st[n - 2], n++;
            break;
        case EMBER_CFI_OP_UNARY:
            st[n - 1] = unary(o->dwarf, st[n - 1]);
            break;
        default:
            n--, st[n - 1] = binary(o->dwarf, st[n - 1], st[n]);
            break;
        }
    }
    *out = st[n - 1];
    return true;
}

/* The row's CFA: false when it cannot be had. */
static bool cfa_of(const struct ember_cfi_file *f, const struct ember_cfi_row *row,
                   const struct ember_unwind_thread *th, const struct frame *cur, uint64_t *cfa)
{
    if (row->cfa_reg == EMBER_CFI_CFA_EXPR)
        return eval_cfa(ember_cfi_cfa_expr(f, row), th, cur, cfa);
    if (row->cfa_reg == EMBER_CFI_NO_CFA || !has(cur, row->cfa_reg))
        return false;
    *cfa = cur->regs[row->cfa_reg] + (uint64_t)row->cfa_off;
    return true;
}

/* The caller's registers by the row's rules (libdwfl's handle_cfi). */
static enum step apply_row(const struct ember_unwind_thread *th, const struct ember_cfi_file *f,
                           const struct ember_cfi_row *row, const struct frame *cur,
                           struct frame *next)
{
    uint64_t cfa = 0;
    bool cfa_ok = cfa_of(f, row, th, cur, &cfa);
    bool ra_undefined = row->rule[EMBER_UNWIND_IP] == EMBER_CFI_UNDEFINED;
    uint64_t v;
    next->set = row->same & cur->set; /* unset, undefined and none stay unset */
    for (uint32_t m = next->set; m; m &= m - 1) {
        unsigned r = (unsigned)__builtin_ctz(m);
        next->regs[r] = cur->regs[r];
    }
    next->signal = row->signal_frame;
    for (uint32_t m = row->computed; m; m &= m - 1) {
        unsigned r = (unsigned)__builtin_ctz(m);
        uint64_t at = cfa + (uint64_t)(int64_t)row->val[r];
        switch (row->rule[r]) {
        case EMBER_CFI_OFFSET:
            if (cfa_ok && ember_unwind_stack_read(th, at, &v))
                put(next, r, v);
            break;
        case EMBER_CFI_VAL_OFFSET:
            if (cfa_ok)
                put(next, r, at);
            break;
        case EMBER_CFI_REGISTER:
            if (has(cur, (unsigned)row->val[r]))
                put(next, r, cur->regs[row->val[r]]);
            break;
        }
    }
    if (ra_undefined || !has(next, EMBER_UNWIND_IP) || next->regs[EMBER_UNWIND_IP] == 0)
        return STEP_END;
    next->pc = next->regs[EMBER_UNWIND_IP];
    return STEP_NEXT;
}

/* Where no CFI holds the pc: the frame pointer's frame, if it moves the
 * stack up (elfutils' x86_64_unwind). Only rbp, rsp and the pc are known
 * in the caller. */
static enum step frame_pointer_step(const struct ember_unwind_thread *th, const struct frame *cur,
                                    struct frame *next)
{
    if (!has(cur, 6) || cur->regs[6] == 0)
        return STEP_FAIL;
    uint64_t fp = cur->regs[6], prev_fp, ret;
    uint64_t sp = has(cur, EMBER_UNWIND_SP) ? cur->regs[EMBER_UNWIND_SP] : 0;
    if (!ember_unwind_stack_read(th, fp, &prev_fp))
        prev_fp = 0;
    if (!ember_unwind_stack_read(th, fp + 8, &ret) || sp >= fp + 16)
        return STEP_FAIL;
    next->set = 0;
    put(next, 6, prev_fp);
    put(next, EMBER_UNWIND_SP, fp + 16);
    next->pc = ret;
    next->signal = false;
    return STEP_NEXT;
}

/* The maps one walk met, with their files (NULL: no CFI to read): a
 * sample's frames are in a few maps, which cannot change during its walk,
 * so each is asked of the caller and its file found once. */
enum { WALK_MAPS = 4 };

struct walk_maps {
    struct {
        uint64_t start, end, bias;
        struct ember_cfi_file *file;
    } m[WALK_MAPS];
    unsigned n, next;
};

/* The file mapped at pc (*f NULL: none) and its bias: 0 or -ENOMEM. */
static int file_at(struct ember_unwind *u, struct walk_maps *w, uint32_t process, uint64_t pc,
                   struct ember_cfi_file **f, uint64_t *bias)
{
    for (unsigned i = 0; i < w->n; i++)
        if (w->m[i].start <= pc && pc < w->m[i].end) {
            *f = w->m[i].file;
            *bias = w->m[i].bias;
            return 0;
        }
    struct ember_unwind_map m;
    *f = NULL;
    if (!u->map(u->ctx, process, pc, &m))
        return 0;
    const char *path = ember_unwind_file_of(u, &m);
    int err = path ? ember_cfi_file(u->cfi, path, f) : 0;
    if (err)
        return err;
    *bias = *f ? ember_cfi_bias(*f, m.base) : 0;
    unsigned i = w->n < WALK_MAPS ? w->n++ : w->next++ % WALK_MAPS;
    w->m[i].start = m.start;
    w->m[i].end = m.end;
    w->m[i].bias = *bias;
    w->m[i].file = *f;
    return 0;
}

/* The row of the file mapped at pc: 1 with *row, 0 where no file's
 * .eh_frame says, STEP_SLOW's -1 where libdwfl would read .debug_frame,
 * or -ENOMEM (< -1). */
static int row_at(struct ember_unwind *u, struct walk_maps *w, uint32_t process, uint64_t pc,
                  struct ember_cfi_file **file, const struct ember_cfi_row **row)
{
    struct ember_cfi_file *f;
    uint64_t bias;
    int err = file_at(u, w, process, pc, &f, &bias);
    if (err || !f)
        return err;
    *file = f;
    int found = ember_cfi_row(f, pc - bias, row);
    if (found == 0 && ember_cfi_has_debug_frame(f))
        return -1;
    return found;
}

/* cur's caller into next; < 0: -ENOMEM. */
static int step(struct ember_unwind *u, struct walk_maps *w, const struct ember_unwind_thread *th,
                const struct frame *cur, struct frame *next)
{
    const struct ember_cfi_row *row;
    struct ember_cfi_file *f;
    uint64_t pc = cur->initial || cur->signal ? cur->pc : cur->pc - 1;
    next->initial = false;
    int found = row_at(u, w, th->process, pc, &f, &row);
    if (found == -1 || (found == 1 && row->complex))
        return STEP_SLOW;
    if (found < 0)
        return found;
    return found ? (int)apply_row(th, f, row, cur, next) : (int)frame_pointer_step(th, cur, next);
}

/* The walk: STEP_SLOW when libdwfl must do it, else 0 or -ENOMEM. */
static int walk(struct ember_unwind *u, const struct ember_unwind_thread *th, uint64_t *ips,
                size_t max, size_t *n)
{
    struct frame f[2];
    struct frame *cur = &f[0], *next = &f[1];
    struct walk_maps w = {.n = 0};
    memcpy(cur->regs, th->regs, sizeof(cur->regs));
    cur->set = (1u << EMBER_UNWIND_NREGS) - 1;
    cur->pc = th->regs[EMBER_UNWIND_IP];
    cur->initial = true;
    cur->signal = false;
    for (*n = 0;;) {
        int s = step(u, &w, th, cur, next);
        if (s < 0 || s == STEP_SLOW)
            return s;
        bool activation = cur->initial || cur->signal || (s == STEP_NEXT && next->signal);
        ips[(*n)++] = activation ? cur->pc : cur->pc - 1;
        if (*n == max || s != STEP_NEXT)
            return 0;
        struct frame *t = cur;
        cur = next;
        next = t;
    }
}

int ember_unwind_frames_fast(struct ember_unwind *u, const struct ember_unwind_thread *th,
                             uint64_t *ips, size_t max, size_t *n)
{
    *n = 0;
    if (max == 0)
        return 0;
    int err = u->dwfl_only ? STEP_SLOW : walk(u, th, ips, max, n);
    if (err == STEP_SLOW) {
        *n = 0;
        return 1;
    }
    u->nfast += err == 0;
    return err;
}

int ember_unwind_frames(struct ember_unwind *u, const struct ember_unwind_thread *th, uint64_t *ips,
                        size_t max, size_t *n)
{
    int err = ember_unwind_frames_fast(u, th, ips, max, n);
    if (err != 1)
        return err;
    u->nslow++;
    return ember_unwind_dwfl_frames(u, th, ips, max, n);
}
