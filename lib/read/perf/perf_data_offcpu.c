/*
 * perf_data_offcpu.c - off-CPU time from a recording's context switches
 * (`ember record --off-cpu`, or `perf record -e context-switches/period=1/
 * --switch-events -g`): a context-switch sample says where a thread is
 * about to stop running (its stack), its PERF_RECORD_SWITCH out record
 * when it stopped and whether it was preempted (still runnable) or
 * blocked, its switch-in record when it ran again. The interval between
 * the two is the thread's time off the CPU, charged to that stack.
 *
 * Invariants: records arrive in time order; a thread is away from its
 * switch-out to its next switch-in, and only an away thread with a stack
 * makes an interval (a switch-out without a sample before it, as when
 * samples were lost, measures nothing rather than something wrong); a
 * thread that ended is never away.
 */
#include "read/perf/perf_data.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

struct thread {
    uint32_t pid, tid, node;
    uint64_t out; /* switch-out time, when away */
    bool has_stack, away, preempted;
};

struct pd_offcpu {
    struct ember_u64map index; /* tid -> threads[] */
    struct thread *threads;
    size_t n, cap;
    size_t closing; /* pd_offcpu_close_next's place */
    uint64_t intervals;
};

int pd_offcpu_new(struct pd_offcpu **out)
{
    struct pd_offcpu *o = calloc(1, sizeof(*o));
    if (!o || ember_u64map_init(&o->index) < 0) {
        free(o);
        return -ENOMEM;
    }
    *out = o;
    return 0;
}

void pd_offcpu_free(struct pd_offcpu *o)
{
    if (!o)
        return;
    ember_u64map_release(&o->index);
    free(o->threads);
    free(o);
}

bool pd_offcpu_is_switches(const struct pd_attr *a)
{
    return a->type == PERF_TYPE_SOFTWARE && a->config == PERF_COUNT_SW_CONTEXT_SWITCHES;
}

static struct thread *find(struct pd_offcpu *o, uint32_t tid)
{
    uint32_t i;
    return ember_u64map_get(&o->index, tid, &i) ? &o->threads[i] : NULL;
}

static int add(struct pd_offcpu *o, uint32_t tid, struct thread **t)
{
    if (EMBER_VEC_RESERVE(o->threads, o->cap, o->n + 1) < 0 ||
        ember_u64map_put(&o->index, tid, (uint32_t)o->n) < 0)
        return -ENOMEM;
    *t = &o->threads[o->n++];
    **t = (struct thread){.tid = tid};
    return 0;
}

int pd_offcpu_stack(struct pd_offcpu *o, uint32_t pid, uint32_t tid, uint32_t node)
{
    struct thread *t = find(o, tid);
    int err = t ? 0 : add(o, tid, &t);
    if (err)
        return err;
    t->pid = pid;
    t->node = node;
    t->has_stack = true;
    return 0;
}

/* t's time away, from its switch-out to end. */
static struct pd_offcpu_interval interval(const struct thread *t, uint64_t end)
{
    return (struct pd_offcpu_interval){.node = t->node,
                                       .pid = t->pid,
                                       .tid = t->tid,
                                       .preempted = t->preempted,
                                       .start = t->out,
                                       .ns = end > t->out ? end - t->out : 0};
}

int pd_offcpu_switch(struct pd_offcpu *o, uint32_t tid, uint64_t time, uint16_t misc,
                     struct pd_offcpu_interval *iv)
{
    struct thread *t = find(o, tid);
    if (!t || !t->has_stack || tid == 0) /* tid 0: the idle task, never "waiting" */
        return 0;
    if (misc & PERF_RECORD_MISC_SWITCH_OUT) {
        t->away = true;
        t->out = time;
        t->preempted = misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
        return 0;
    }
    if (!t->away)
        return 0;
    t->away = t->has_stack = false;
    *iv = interval(t, time);
    o->intervals++;
    return 1;
}

void pd_offcpu_exit(struct pd_offcpu *o, uint32_t tid)
{
    struct thread *t = find(o, tid);
    if (t)
        t->away = t->has_stack = false;
}

int pd_offcpu_close_next(struct pd_offcpu *o, uint64_t end, struct pd_offcpu_interval *iv)
{
    for (; o->closing < o->n; o->closing++) {
        struct thread *t = &o->threads[o->closing];
        if (!t->away || !t->has_stack)
            continue;
        t->away = t->has_stack = false;
        *iv = interval(t, end);
        o->intervals++;
        return 1;
    }
    return 0;
}

uint64_t pd_offcpu_count(const struct pd_offcpu *o)
{
    return o->intervals;
}
