/*
 * perf_data_stacks.c - the samples of a perf.data as raw stacks: each
 * sample's call chain (PERF_CONTEXT_* markers switching between kernel and
 * user space, at most perf script's 127 entries; DWARF call graphs'
 * unwound user frames; fp call graphs' skipped caller) becomes a path of
 * raw frames, a map and an address, under its root (event, thread, name)
 * in a trie of raw nodes, which weighs its samples and periods.
 * Invariants: memory grows with distinct stacks, never with samples; a
 * sample whose thread's maps are unchanged and whose chain was seen before
 * costs one hash; a raw node's parent has a smaller index.
 */
#include "read/perf/perf_data_build.h"
#include "base/hash.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

static uint64_t frame_slot_hash(const void *slot)
{
    const struct frame_slot *s = slot;
    return ember_hash_u64(s->ip * 31 + s->mapref);
}

static bool frame_slot_used(const void *slot)
{
    return ((const struct frame_slot *)slot)->id1 != 0;
}

static struct frame_slot *frame_find(struct reader *r, uint32_t mapref, uint64_t ip)
{
    struct frame_slot probe = {ip, mapref, 0};
    for (uint32_t i = (uint32_t)frame_slot_hash(&probe) & r->fmask;; i = (i + 1) & r->fmask) {
        struct frame_slot *s = &r->fslots[i];
        if (!s->id1 || (s->ip == ip && s->mapref == mapref))
            return s;
    }
}

int pd_raw_frame(struct reader *r, uint32_t mapref, uint64_t ip, uint32_t *id)
{
    struct frame_slot *s = frame_find(r, mapref, ip);
    if (s->id1) {
        *id = s->id1 - 1;
        return 0;
    }
    if (r->nframes >= UINT32_MAX - 1)
        return -ERANGE;
    if ((r->fcount + 1) * 2 > r->fmask + 1) {
        if (ember_table_grow((void **)&r->fslots, &r->fmask, sizeof(*r->fslots), frame_slot_hash,
                             frame_slot_used) < 0)
            return -ENOMEM;
        s = frame_find(r, mapref, ip);
    }
    if (EMBER_VEC_RESERVE(r->frames, r->fcap, r->nframes + 1) < 0)
        return -ENOMEM;
    r->frames[r->nframes] = (struct raw_frame){ip, mapref};
    *s = (struct frame_slot){ip, mapref, (uint32_t)r->nframes + 1};
    r->fcount++;
    *id = (uint32_t)r->nframes++;
    return 0;
}

/* The reader's number of a map: maps are numbered by all they say. */
static int mapref_of(struct reader *r, struct pd_map *m, uint32_t *ref)
{
    if (m->ref) {
        *ref = m->ref;
        return 0;
    }
    uint64_t key[4] = {m->start, m->end, m->pgoff, m->dso};
    uintptr_t v = (uintptr_t)ember_strmap_get(&r->mapref_ids, (const char *)key, sizeof(key));
    if (!v) {
        if (EMBER_VEC_RESERVE(r->maprefs, r->mcap, r->nmaprefs + 2) < 0)
            return -ENOMEM;
        v = ++r->nmaprefs;
        r->maprefs[v] = *m;
        if (ember_strmap_put(&r->mapref_ids, (const char *)key, sizeof(key), (void *)v) < 0)
            return -ENOMEM;
    }
    m->ref = (uint32_t)v;
    *ref = m->ref;
    return 0;
}

/* Grows the node arrays together (one capacity for all). */
static int grow_nodes(struct reader *r)
{
    size_t cap = r->ncap ? r->ncap * 2 : 1024;
    uint32_t *parent = realloc(r->parent, cap * sizeof(*parent));
    if (parent)
        r->parent = parent;
    uint32_t *key = parent ? realloc(r->key, cap * sizeof(*key)) : NULL;
    if (key)
        r->key = key;
    uint64_t *samples = key ? realloc(r->samples, cap * sizeof(*samples)) : NULL;
    if (samples)
        r->samples = samples;
    uint64_t *period = samples ? realloc(r->period, cap * sizeof(*period)) : NULL;
    if (!period)
        return -ENOMEM;
    r->period = period;
    r->ncap = cap;
    return 0;
}

int pd_raw_new_node(struct reader *r, uint32_t parent, uint32_t key, uint32_t *node)
{
    if (r->nnodes >= UINT32_MAX - 1)
        return -ERANGE;
    if (r->nnodes == r->ncap && grow_nodes(r) < 0)
        return -ENOMEM;
    size_t i = r->nnodes++;
    r->parent[i] = parent;
    r->key[i] = key;
    r->samples[i] = r->period[i] = 0;
    *node = (uint32_t)i;
    return ember_u64map_put(&r->children, (uint64_t)parent << 32 | key, *node);
}

int pd_raw_child(struct reader *r, uint32_t parent, uint32_t key, uint32_t *node)
{
    if (ember_u64map_get(&r->children, (uint64_t)parent << 32 | key, node))
        return 0;
    return pd_raw_new_node(r, parent, key, node);
}

/* The cache slot of a thread's root. */
static uint32_t *root_slot(struct reader *r, uint32_t attr, uint32_t pid, uint32_t tid)
{
    return &r->root_hot[(pid * 0x9e3779b1u ^ tid ^ attr << 3) % ROOT_HOT];
}

/* The root found lately for the thread, when its command is the same. */
static bool root_hot(struct reader *r, uint32_t attr, uint32_t pid, uint32_t tid, const char *comm,
                     size_t len, uint32_t *id)
{
    uint32_t id1 = *root_slot(r, attr, pid, tid);
    if (id1 == 0)
        return false;
    const struct root *rt = &r->roots[id1 - 1];
    if (rt->attr != attr || rt->pid != pid || rt->tid != tid || rt->comm_len != len ||
        (len && memcmp(rt->comm, comm, len) != 0))
        return false;
    *id = id1 - 1;
    return true;
}

/* The root of (event, thread, command): a key of the event, the thread
 * and the command's first 256 bytes. */
static int root_of(struct reader *r, uint32_t attr, uint32_t pid, uint32_t tid, const char *comm,
                   size_t len, uint32_t *id)
{
    char key[12 + 256];
    if (len > 256)
        len = 256;
    if (root_hot(r, attr, pid, tid, comm, len, id))
        return 0;
    memcpy(key, &attr, 4);
    memcpy(key + 4, &pid, 4);
    memcpy(key + 8, &tid, 4);
    memcpy(key + 12, comm, len);
    uintptr_t v = (uintptr_t)ember_strmap_get(&r->root_ids, key, 12 + len);
    if (!v) {
        if (EMBER_VEC_RESERVE(r->roots, r->rcap, r->nroots + 1) < 0)
            return -ENOMEM;
        char *copy = ember_arena_strndup(&r->root_ids.arena, comm, len);
        if (!copy)
            return -ENOMEM;
        r->roots[r->nroots] =
            (struct root){.attr = attr, .pid = pid, .tid = tid, .comm = copy, .comm_len = len};
        int err = pd_raw_new_node(r, 0, (uint32_t)r->nroots, &r->roots[r->nroots].node);
        if (err)
            return err;
        r->roots[r->nroots].generation = UINT64_MAX;
        v = ++r->nroots;
        if (ember_strmap_put(&r->root_ids, key, 12 + len, (void *)v) < 0)
            return -ENOMEM;
    }
    *id = (uint32_t)(v - 1);
    *root_slot(r, attr, pid, tid) = *id + 1;
    return 0;
}

/* ---- samples ------------------------------------------------------------ */

static int push_entry(struct reader *r, uint64_t ip, uint8_t cpumode)
{
    if (EMBER_VEC_RESERVE(r->chain, r->ccap, r->nchain + 1) < 0)
        return -ENOMEM;
    r->chain[r->nchain++] = (struct entry){ip, cpumode};
    return 0;
}

/* perf's thread__resolve_callchain_sample: context markers switch the
 * address space, an unknown one discards the chain, at most MAX_STACK
 * addresses are kept. Without a chain, the sampled address alone. */
static int chain_entries(struct reader *r, const struct pd_sample *s)
{
    r->nchain = 0;
    if (!s->chain)
        return push_entry(r, s->ip, s->cpumode);
    uint8_t cpumode = PERF_RECORD_MISC_USER;
    for (uint64_t i = 0; i < s->nchain && r->nchain < MAX_STACK; i++) {
        uint64_t ip = pd_u64(s->chain + 8 * i);
        if (ip < PERF_CONTEXT_MAX) {
            int err = push_entry(r, ip, cpumode);
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
            r->nchain = 0;
            return 0;
        }
    }
    return 0;
}

/* perf's DWARF call graphs: after the kernel's chain, the user stack
 * unwound from the sample's registers and stack copy (ips[0, n)). */
static int unwound_entries(struct reader *r, const struct pd_sample *s, const uint64_t *ips,
                           size_t n)
{
    bool user = false;
    for (size_t i = 0; i < r->nchain && !user; i++)
        user = r->chain[i].cpumode == PERF_RECORD_MISC_USER;
    r->dwarf |= s->regs && !user; /* its user frames are the unwinder's alone */
    int err = 0;
    for (size_t i = 0; i < n && !err; i++)
        err = push_entry(r, ips[i], PERF_RECORD_MISC_USER);
    return err;
}

/* An fp sample that carries the top of its user stack (ember record): the
 * caller the kernel's walk skipped, when the user pc's frame is not on the
 * frame pointer, goes in after the pc (issue 10, item 2). */
static int leaf_caller(struct reader *r, uint32_t process, const struct pd_sample *s)
{
    if (!s->chain || !s->stack || s->stack_size == 0 || s->regs)
        return 0;
    size_t u = 0;
    while (u < r->nchain && r->chain[u].cpumode != PERF_RECORD_MISC_USER)
        u++;
    if (u == r->nchain)
        return 0;
    struct pd_map *m = pd_tasks_find_map(r->t, process, PERF_RECORD_MISC_USER, r->chain[u].ip);
    uint64_t ret;
    int got =
        m ? pd_leaf_caller(r->leaf, r->t, m, r->chain[u].ip, s->stack, s->stack_size, &ret) : 0;
    if (got <= 0 || (u + 1 < r->nchain && r->chain[u + 1].ip == ret))
        return got;
    int err = push_entry(r, 0, 0); /* room for one more, then the rest moves up */
    if (!err) {
        memmove(r->chain + u + 2, r->chain + u + 1, (r->nchain - u - 2) * sizeof(*r->chain));
        r->chain[u + 1] = (struct entry){ret, PERF_RECORD_MISC_USER};
    }
    return err;
}

/* The raw frame of an entry: the map that holds its address then (the
 * process's maps are the same while its generation is). */
static int entry_frame(struct reader *r, uint32_t process, uint64_t generation,
                       const struct entry *e, uint32_t *id)
{
    struct entry_memo *em = &r->memo[ember_hash_u64(e->ip ^ generation) % ENTRY_MEMO];
    if (em->ip == e->ip && em->generation == generation && em->cpumode == e->cpumode &&
        em->frame != UINT32_MAX) {
        *id = em->frame;
        return 0;
    }
    struct pd_map *m = pd_tasks_find_map(r->t, process, (uint8_t)e->cpumode, e->ip);
    uint32_t ref = 0;
    int err = m ? mapref_of(r, m, &ref) : 0;
    if (!err)
        err = pd_raw_frame(r, ref, e->ip, id);
    if (!err)
        *em = (struct entry_memo){e->ip, generation, *id, (uint32_t)e->cpumode};
    return err;
}

/* The raw node of the current chain under root rt: the frames it shares,
 * from the root, with the root's last stack are not looked up again. */
static int stack_node(struct reader *r, struct root *rt, uint32_t process, uint32_t *node)
{
    uint64_t gen = pd_tasks_generation(r->t, process);
    size_t n = r->nchain, k = 0;
    if (gen == rt->generation)
        while (k < n && k < rt->nlast &&
               memcmp(&r->chain[n - 1 - k], &rt->last[rt->nlast - 1 - k], sizeof(struct entry)) ==
                   0)
            k++;
    if (EMBER_VEC_RESERVE(rt->path, rt->pcap, n) < 0 ||
        EMBER_VEC_RESERVE(rt->last, rt->lcap, n) < 0)
        return -ENOMEM;
    *node = k ? rt->path[k - 1] : rt->node;
    for (size_t i = k; i < n; i++) {
        uint32_t frame;
        int err = entry_frame(r, process, gen, &r->chain[n - 1 - i], &frame);
        if (!err)
            err = pd_raw_child(r, *node, frame, node);
        if (err)
            return err;
        rt->path[i] = *node;
    }
    if (n)
        memcpy(rt->last, r->chain, n * sizeof(*rt->last));
    rt->nlast = n;
    rt->generation = gen;
    return 0;
}

int pd_raw_add_weight(struct reader *r, uint32_t node, uint64_t period)
{
    r->samples[node]++;
    r->period[node] += period;
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

int pd_raw_sample_thread(struct reader *r, int ai, const struct pd_sample *s,
                         struct pd_sample_thread *th)
{
    if (r->o->keep_sample && !r->o->keep_sample(r->o->keep_sample_ctx, s->pid, s->tid, s->time))
        return 0;
    struct pd_seen *seen = &r->seen[ai];
    if (!seen->first)
        seen->first = ++r->nseen;
    seen->samples++;
    int err = pd_tasks_thread(r->t, s->pid, s->tid, &th->process, &th->comm, &th->comm_len);
    return err ? err : 1;
}

int pd_raw_sample_stack(struct reader *r, int ai, const struct pd_sample *s,
                        const struct pd_sample_thread *th, const uint64_t *ips, size_t n)
{
    uint32_t root, node;
    int err;
    if ((err = root_of(r, (uint32_t)ai, s->pid, s->tid, th->comm, th->comm_len, &root)) < 0 ||
        (err = chain_entries(r, s)) < 0 || (err = leaf_caller(r, th->process, s)) < 0 ||
        (err = unwound_entries(r, s, ips, n)) < 0 ||
        (err = stack_node(r, &r->roots[root], th->process, &node)) < 0)
        return err;
    if (pd_offcpu_is_switches(&r->f->attrs[ai]) &&
        (err = pd_offcpu_stack(r->oc, s->pid, s->tid, node)) < 0)
        return err;
    uint64_t period = 1;
    if (s->has_period && s->period > 0) {
        period = s->period;
        r->seen[ai].weighed = true;
    }
    err = pd_raw_add_weight(r, node, period);
    return err ? err : pd_raw_note_time(r, s->pid, s->tid, s->time);
}

int pd_raw_sample(struct reader *r, int ai, const struct pd_sample *s)
{
    struct pd_sample_thread th;
    size_t n = 0;
    int got = pd_raw_sample_thread(r, ai, s, &th);
    if (got <= 0)
        return got;
    int err = pd_sample_unwinds(s)
                  ? pd_unwind_sample(r->uw, th.process, s, r->unwound, MAX_STACK, &n)
                  : 0;
    return err ? err : pd_raw_sample_stack(r, ai, s, &th, r->unwound, n);
}
