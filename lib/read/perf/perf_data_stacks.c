/*
 * perf_data_stacks.c - the samples of a perf.data as raw stacks: each
 * sample's call chain (PERF_CONTEXT_* markers switching between kernel and
 * user space, at most perf script's 127 entries; DWARF call graphs'
 * unwound user frames; fp call graphs' skipped caller) becomes a path of
 * raw frames, a map and an address, under its root (event, thread, name)
 * in a trie of raw nodes (perf_data_raw.c), which weighs its samples and
 * periods.
 * Invariants: memory grows with distinct stacks, never with samples; a
 * sample whose thread's maps are unchanged and whose chain was seen before
 * costs one hash; building a stack reads the tasks and writes only its
 * trie, so that workers build theirs at once (perf_data_jobs.c).
 */
#include "read/perf/perf_data_build.h"
#include "base/hash.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

static int push_entry(struct pd_raw *raw, uint64_t ip, uint8_t cpumode)
{
    if (EMBER_VEC_RESERVE(raw->chain, raw->ccap, raw->nchain + 1) < 0)
        return -ENOMEM;
    raw->chain[raw->nchain++] = (struct entry){ip, cpumode};
    return 0;
}

/* perf's thread__resolve_callchain_sample: context markers switch the
 * address space, an unknown one discards the chain, at most MAX_STACK
 * addresses are kept. Without a chain, the sampled address alone. */
static int chain_entries(struct pd_raw *raw, const struct pd_sample *s)
{
    raw->nchain = 0;
    if (!s->chain)
        return push_entry(raw, s->ip, s->cpumode);
    uint8_t cpumode = PERF_RECORD_MISC_USER;
    for (uint64_t i = 0; i < s->nchain && raw->nchain < MAX_STACK; i++) {
        uint64_t ip = pd_u64(s->chain + 8 * i);
        if (ip < PERF_CONTEXT_MAX) {
            int err = push_entry(raw, ip, cpumode);
            if (err)
                return err;
            continue;
        }
        switch (ip) {
        case PERF_CONTEXT_HV:
            cpumode = PERF_RECORD_MISC_HYPERVISOR;
            break;
        case PERF_CONTEXT_KERNEL:
            cpumode = PERF_RECORD_MISC_KERNEL;
            break;
        case PERF_CONTEXT_USER:
            cpumode = PERF_RECORD_MISC_USER;
            break;
        default: /* perf: the chain is corrupt, discard it */
            raw->nchain = 0;
            return 0;
        }
    }
    return 0;
}

/* perf's DWARF call graphs: after the kernel's chain, the user stack
 * unwound from the sample's registers and stack copy (ips[0, n)). */
static int unwound_entries(struct pd_raw *raw, const struct pd_sample *s, const uint64_t *ips,
                           size_t n)
{
    bool user = false;
    for (size_t i = 0; i < raw->nchain && !user; i++)
        user = raw->chain[i].cpumode == PERF_RECORD_MISC_USER;
    raw->dwarf |= s->regs && !user; /* its user frames are the unwinder's alone */
    int err = 0;
    for (size_t i = 0; i < n && !err; i++)
        err = push_entry(raw, ips[i], PERF_RECORD_MISC_USER);
    return err;
}

/* An fp sample that carries the top of its user stack (ember record): the
 * caller the kernel's walk skipped, when the user pc's frame is not on the
 * frame pointer, goes in after the pc (issue 10, item 2). */
static int leaf_caller(struct pd_raw *raw, uint32_t process, const struct pd_sample *s)
{
    if (!s->chain || !s->stack || s->stack_size == 0 || s->regs)
        return 0;
    size_t u = 0;
    while (u < raw->nchain && raw->chain[u].cpumode != PERF_RECORD_MISC_USER)
        u++;
    if (u == raw->nchain)
        return 0;
    struct pd_map *m = pd_tasks_find_map(raw->t, process, PERF_RECORD_MISC_USER, raw->chain[u].ip);
    if (!m)
        return 0;
    /* made here, not with the trie: its symbolizer's tables were a tenth
     * of the page faults of making the 9 tries of -j 4, the workers idle */
    int got = raw->leaf ? 0 : pd_leaf_new(&raw->leaf);
    uint64_t ret;
    if (!got)
        got = pd_leaf_caller(raw->leaf, raw->t, m, raw->chain[u].ip, s->stack, s->stack_size, &ret);
    if (got <= 0 || (u + 1 < raw->nchain && raw->chain[u + 1].ip == ret))
        return got;
    int err = push_entry(raw, 0, 0); /* room for one more, then the rest moves up */
    if (!err) {
        memmove(raw->chain + u + 2, raw->chain + u + 1,
                (raw->nchain - u - 2) * sizeof(*raw->chain));
        raw->chain[u + 1] = (struct entry){ret, PERF_RECORD_MISC_USER};
    }
    return err;
}

/* The raw frame of an entry: the map that holds its address then (the
 * process's maps are the same while its generation is). An overlay's
 * memo keeps only its base's frames, which outlive the batch. */
static int entry_frame(struct pd_raw *raw, uint32_t process, uint64_t generation,
                       const struct entry *e, uint32_t *id)
{
    if (!raw->memo && !(raw->memo = calloc(ENTRY_MEMO, sizeof(*raw->memo))))
        return -ENOMEM;
    struct entry_memo *em = &raw->memo[ember_hash_u64(e->ip ^ generation) % ENTRY_MEMO];
    if (em->ip == e->ip && em->generation == generation && em->cpumode == e->cpumode &&
        em->frame1) {
        *id = em->frame1 - 1;
        return 0;
    }
    struct pd_map *m = pd_tasks_find_map(raw->t, process, (uint8_t)e->cpumode, e->ip);
    uint32_t ref = 0;
    int err = m ? pd_raw_mapref(raw, m, &ref) : 0;
    if (!err)
        err = pd_raw_frame(raw, ref, e->ip, id);
    if (!err && !(*id & PD_OVER && raw->base))
        *em = (struct entry_memo){e->ip, generation, *id + 1, (uint32_t)e->cpumode};
    return err;
}

/* The last stack of root id: the reader's trie keeps it with the root, an
 * overlay in a cache of its own (its base's roots are read only). */
static struct pd_prefix *prefix_of(struct pd_raw *raw, uint32_t id)
{
    if (!raw->base)
        return &raw->roots[id].stack;
    struct pd_prefix *p = &raw->prefix_hot[(id * 0x9e3779b1u) % ROOT_HOT];
    if (p->root != id) {
        p->root = id;
        p->generation = UINT64_MAX;
    }
    return p;
}

/* The raw node of the current chain under root id: the frames it shares,
 * from the root, with the root's last stack are not looked up again. */
static int stack_node(struct pd_raw *raw, uint32_t id, uint32_t process, uint32_t *node)
{
    struct pd_prefix *pf = prefix_of(raw, id);
    uint64_t gen = pd_tasks_generation(raw->t, process);
    size_t n = raw->nchain, k = 0;
    if (gen == pf->generation)
        while (k < n && k < pf->nlast &&
               memcmp(&raw->chain[n - 1 - k], &pf->last[pf->nlast - 1 - k], sizeof(struct entry)) ==
                   0)
            k++;
    if (EMBER_VEC_RESERVE(pf->path, pf->pcap, n) < 0 ||
        EMBER_VEC_RESERVE(pf->last, pf->lcap, n) < 0)
        return -ENOMEM;
    *node = k ? pf->path[k - 1] : pd_raw_root_at(raw, id)->node;
    for (size_t i = k; i < n; i++) {
        uint32_t frame;
        int err = entry_frame(raw, process, gen, &raw->chain[n - 1 - i], &frame);
        if (!err)
            err = pd_raw_child(raw, *node, frame, node);
        if (err) {
            pf->generation = UINT64_MAX; /* its path is not whole */
            return err;
        }
        pf->path[i] = *node;
    }
    if (n)
        memcpy(pf->last, raw->chain, n * sizeof(*pf->last));
    pf->nlast = n;
    pf->generation = gen;
    return 0;
}

int pd_raw_add_weight(struct reader *r, uint32_t node, uint64_t period)
{
    r->raw.samples[node]++;
    r->raw.period[node] += period;
    if (!r->keep_seq)
        return 0;
    if (r->nseq && r->seq[r->nseq - 1].node == node) {
        r->seq[r->nseq - 1].samples++;
        r->seq[r->nseq - 1].period += period;
        return 0;
    }
    if (EMBER_VEC_RESERVE(r->seq, r->seqcap, r->nseq + 1) < 0)
        return -ENOMEM;
    r->seq[r->nseq++] = (struct seq_entry){node, 1, period};
    return 0;
}

int pd_raw_note_time(struct reader *r, uint32_t pid, uint32_t tid, uint64_t time)
{
    if (!r->keep_seq || !r->o->sample_time)
        return 0;
    if (EMBER_VEC_RESERVE(r->times, r->tcap, r->ntimes + 1) < 0)
        return -ENOMEM;
    r->times[r->ntimes++] = (struct sample_time){time, pid, tid};
    return 0;
}

void pd_raw_seen(struct reader *r, int ai, bool weighed)
{
    struct pd_seen *seen = &r->seen[ai];
    if (!seen->first)
        seen->first = ++r->nseen;
    seen->samples++;
    seen->weighed |= weighed;
}

int pd_raw_sample_thread(struct reader *r, int ai, const struct pd_sample *s,
                         struct pd_sample_thread *th)
{
    if (r->o->keep_sample && !r->o->keep_sample(r->o->keep_sample_ctx, s->pid, s->tid, s->time))
        return 0;
    pd_raw_seen(r, ai, s->has_period && s->period > 0);
    int err = pd_tasks_thread(r->t, s->pid, s->tid, &th->process, &th->comm, &th->comm_len);
    return err ? err : 1;
}

int pd_raw_stack(struct pd_raw *raw, int ai, const struct pd_sample *s,
                 const struct pd_sample_thread *th, const uint64_t *ips, size_t n, uint32_t *node)
{
    uint32_t root;
    int err;
    if ((err = pd_raw_root(raw, (uint32_t)ai, s->pid, s->tid, th->comm, th->comm_len, &root)) < 0 ||
        (err = chain_entries(raw, s)) < 0 || (err = leaf_caller(raw, th->process, s)) < 0 ||
        (err = unwound_entries(raw, s, ips, n)) < 0)
        return err;
    return stack_node(raw, root, th->process, node);
}

int pd_raw_weigh(struct reader *r, int ai, const struct pd_sample *s, uint32_t node)
{
    int err = 0;
    if (pd_offcpu_is_switches(&r->f->attrs[ai]))
        err = pd_offcpu_stack(r->oc, s->pid, s->tid, node);
    if (!err)
        err = pd_raw_add_weight(r, node, pd_sample_weight(s));
    return err ? err : pd_raw_note_time(r, s->pid, s->tid, s->time);
}

int pd_raw_sample(struct reader *r, int ai, const struct pd_sample *s)
{
    struct pd_sample_thread th;
    size_t n = 0;
    uint32_t node;
    int got = pd_raw_sample_thread(r, ai, s, &th);
    if (got <= 0)
        return got;
    int err = pd_sample_unwinds(s)
                  ? pd_unwind_sample(r->uw, th.process, s, r->unwound, MAX_STACK, &n)
                  : 0;
    if (!err)
        err = pd_raw_stack(&r->raw, ai, s, &th, r->unwound, n, &node);
    return err ? err : pd_raw_weigh(r, ai, s, node);
}
