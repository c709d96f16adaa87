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
 * A sample meeting a row whose rules are DWARF expressions, or an address
 * only .debug_frame covers, is unwound again whole by libdwfl: the answer
 * is libdwfl's in every case, in a few hundred nanoseconds per sample
 * where libdwfl takes about 16 us.
 *
 * One difference is kept: libdwfl cannot start a process's session from
 * a sample whose address no ELF file holds (JIT code), and gives that
 * sample its address alone; here it is unwound by frame pointers as the
 * process's later samples are.
 */
#include "symbol/unwind_impl.h"
#include "symbol/dso.h"

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

/* The 8 bytes at addr, if the stack copy holds them. */
static bool stack_read(const struct ember_unwind_thread *th, uint64_t addr, uint64_t *v)
{
    uint64_t sp = th->regs[EMBER_UNWIND_SP];
    if (addr < sp || th->size < 8 || addr - sp > th->size - 8)
        return false;
    memcpy(v, th->stack + (addr - sp), sizeof(*v));
    return true;
}

/* The caller's registers by the row's rules (libdwfl's handle_cfi). */
static enum step apply_row(const struct ember_unwind_thread *th, const struct ember_cfi_row *row,
                           const struct frame *cur, struct frame *next)
{
    bool cfa_ok = row->cfa_reg != EMBER_CFI_NO_CFA && has(cur, row->cfa_reg);
    uint64_t cfa = cfa_ok ? cur->regs[row->cfa_reg] + (uint64_t)row->cfa_off : 0;
    bool ra_undefined = false;
    uint64_t v;
    next->set = 0;
    next->signal = row->signal_frame;
    for (unsigned r = 0; r < EMBER_UNWIND_NREGS; r++) {
        uint64_t at = cfa + (uint64_t)row->val[r];
        switch (row->rule[r]) {
        case EMBER_CFI_UNDEFINED:
            ra_undefined |= r == EMBER_UNWIND_IP;
            break;
        case EMBER_CFI_SAME:
            if (has(cur, r))
                put(next, r, cur->regs[r]);
            break;
        case EMBER_CFI_OFFSET:
            if (cfa_ok && stack_read(th, at, &v))
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
    if (!stack_read(th, fp, &prev_fp))
        prev_fp = 0;
    if (!stack_read(th, fp + 8, &ret) || sp >= fp + 16)
        return STEP_FAIL;
    next->set = 0;
    put(next, 6, prev_fp);
    put(next, EMBER_UNWIND_SP, fp + 16);
    next->pc = ret;
    next->signal = false;
    return STEP_NEXT;
}

/* The row of the file mapped at pc: 1 with *row, 0 where no file's
 * .eh_frame says, STEP_SLOW's -1 where libdwfl would read .debug_frame,
 * or -ENOMEM (< -1). */
static int row_at(struct ember_unwind *u, uint32_t process, uint64_t pc,
                  const struct ember_cfi_row **row)
{
    struct ember_unwind_map m;
    struct ember_cfi_file *f = NULL;
    const char *path = u->map(u->ctx, process, pc, &m) ? ember_unwind_file_of(u, &m) : NULL;
    int err = path ? ember_cfi_file(u->cfi, path, &f) : 0;
    if (err || !f)
        return err;
    int found = ember_cfi_row(f, pc - ember_cfi_bias(f, m.base), row);
    if (found == 0 && ember_cfi_has_debug_frame(f))
        return -1;
    return found;
}

/* cur's caller into next; < 0: -ENOMEM. */
static int step(struct ember_unwind *u, const struct ember_unwind_thread *th,
                const struct frame *cur, struct frame *next)
{
    const struct ember_cfi_row *row;
    uint64_t pc = cur->initial || cur->signal ? cur->pc : cur->pc - 1;
    next->initial = false;
    int found = row_at(u, th->process, pc, &row);
    if (found == -1 || (found == 1 && row->complex))
        return STEP_SLOW;
    if (found < 0)
        return found;
    return found ? (int)apply_row(th, row, cur, next) : (int)frame_pointer_step(th, cur, next);
}

/* The walk: STEP_SLOW when libdwfl must do it, else 0 or -ENOMEM. */
static int walk(struct ember_unwind *u, const struct ember_unwind_thread *th, uint64_t *ips,
                size_t max, size_t *n)
{
    struct frame f[2];
    struct frame *cur = &f[0], *next = &f[1];
    memcpy(cur->regs, th->regs, sizeof(cur->regs));
    cur->set = (1u << EMBER_UNWIND_NREGS) - 1;
    cur->pc = th->regs[EMBER_UNWIND_IP];
    cur->initial = true;
    cur->signal = false;
    for (*n = 0;;) {
        int s = step(u, th, cur, next);
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

int ember_unwind_frames(struct ember_unwind *u, const struct ember_unwind_thread *th, uint64_t *ips,
                        size_t max, size_t *n)
{
    *n = 0;
    if (max == 0)
        return 0;
    int err = u->dwfl_only ? STEP_SLOW : walk(u, th, ips, max, n);
    if (err != STEP_SLOW) {
        u->nfast += err == 0;
        return err;
    }
    u->nslow++;
    return ember_unwind_dwfl_frames(u, th, ips, max, n);
}
