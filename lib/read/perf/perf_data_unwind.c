/*
 * perf_data_unwind.c - DWARF call graphs (perf record --call-graph dwarf)
 * of the perf.data reader: the glue to symbol/unwind.h, which unwinds. A
 * sample's perf registers (sample_regs_user's bit order) become DWARF's,
 * and the unwinder asks the reader's maps what is mapped at an address
 * (perf's maps at the sample's time, as perf reports them).
 * Invariants: the unwinder's sessions are keyed by the reader's process
 * numbers; a sample without its user IP and SP unwinds to nothing.
 */
#include "read/perf/perf_data.h"
#include "symbol/unwind.h"

#include <errno.h>
#include <stdlib.h>

struct pd_unwind {
    struct pd_tasks *t;
    struct ember_unwind *u;
};

/* perf's x86-64 user registers (bit numbers of sample_regs_user) in DWARF's
 * order: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip. */
static const uint8_t perf_reg_of_dwarf[EMBER_UNWIND_NREGS] = {0,  3,  2,  1,  4,  5,  6,  7, 16,
                                                              17, 18, 19, 20, 21, 22, 23, 8};
enum { PERF_REG_SP = 7, PERF_REG_IP = 8 };

/* The value of perf register bit in the sample (its registers are in the
 * mask's bit order): false when it was not recorded. */
static bool sample_reg(const struct pd_sample *s, unsigned bit, uint64_t *v)
{
    if (!s->regs || !(s->regs_mask >> bit & 1))
        return false;
    unsigned at = (unsigned)__builtin_popcountll(s->regs_mask & ((1ULL << bit) - 1));
    *v = pd_u64(s->regs + 8 * at);
    return true;
}

/* What the process's user maps hold at pc, for the unwinder. */
static bool map_at(void *ctx, uint32_t process, uint64_t pc, struct ember_unwind_map *out)
{
    struct pd_tasks *t = ctx;
    struct pd_map *m = pd_tasks_find_map(t, process, PERF_RECORD_MISC_USER, pc);
    if (!m)
        return false;
    const struct pd_dso *dso = pd_tasks_dso(t, m->dso);
    out->name = dso->name;
    out->file = dso->kind == PD_DSO_FILE   ? EMBER_UNWIND_ELF
                : dso->kind == PD_DSO_VDSO ? EMBER_UNWIND_VDSO
                                           : EMBER_UNWIND_NO_FILE;
    out->base = m->start - m->pgoff;
    out->start = m->start;
    out->end = m->end;
    return true;
}

int pd_unwind_new(struct pd_unwind **out, struct pd_tasks *t)
{
    struct pd_unwind *u = calloc(1, sizeof(*u));
    int err = u ? ember_unwind_new(&u->u, map_at, t) : -ENOMEM;
    if (err) {
        free(u);
        return err;
    }
    u->t = t;
    *out = u;
    return 0;
}

void pd_unwind_free(struct pd_unwind *u)
{
    if (!u)
        return;
    ember_unwind_free(u->u);
    free(u);
}

struct ember_unwind *pd_unwind_engine(struct pd_unwind *u)
{
    return u->u;
}

/* The sample's thread for the unwinder: false without its user IP and SP. */
static bool thread_of(const struct pd_unwind *u, uint32_t process, const struct pd_sample *sample,
                      struct ember_unwind_thread *th)
{
    *th = (struct ember_unwind_thread){
        .process = process,
        .pid = pd_tasks_pid(u->t, process),
        .tid = sample->tid,
        .stack = sample->stack,
        .size = sample->stack_size,
    };
    if (!sample_reg(sample, PERF_REG_IP, &th->regs[EMBER_UNWIND_IP]) ||
        !sample_reg(sample, PERF_REG_SP, &th->regs[EMBER_UNWIND_SP]))
        return false;
    for (unsigned i = 0; i < EMBER_UNWIND_NREGS; i++)
        sample_reg(sample, perf_reg_of_dwarf[i], &th->regs[i]);
    return true;
}

typedef int (*frames_fn)(struct ember_unwind *u, const struct ember_unwind_thread *th,
                         uint64_t *ips, size_t max, size_t *n);

static int unwind_by(frames_fn fn, struct pd_unwind *u, uint32_t process,
                     const struct pd_sample *sample, uint64_t *ips, size_t max, size_t *n)
{
    struct ember_unwind_thread th;
    *n = 0;
    if (max == 0 || !thread_of(u, process, sample, &th))
        return 0;
    return fn(u->u, &th, ips, max, n);
}

int pd_unwind_sample(struct pd_unwind *u, uint32_t process, const struct pd_sample *sample,
                     uint64_t *ips, size_t max, size_t *n)
{
    return unwind_by(ember_unwind_frames, u, process, sample, ips, max, n);
}

int pd_unwind_sample_fast(struct pd_unwind *u, uint32_t process, const struct pd_sample *sample,
                          uint64_t *ips, size_t max, size_t *n)
{
    return unwind_by(ember_unwind_frames_fast, u, process, sample, ips, max, n);
}
