/*
 * perf_data.c - perf.data (what `perf record` writes) as a profile: the
 * same stacks as `perf script -i FILE | ember collapse`, with the same
 * options, read directly.
 *
 * Records are delivered in perf's time order (perf_data_order.c) to the
 * model of threads and maps (perf_data_tasks.c); each sample's call chain
 * (PERF_CONTEXT_* markers switching between kernel and user space, at most
 * perf script's 127 entries) becomes a stack of raw frames: a map and an
 * address. Naming waits for the end of the file, where perf writes the
 * build-ids and event names that naming needs: raw stacks are kept in a
 * trie of their own (memory grows with distinct stacks, never with
 * samples), each raw frame is named once (perf_data_names.c), and each
 * weighed raw stack is added to the profile with ember_profile_add_stack
 * (the model's public API). The root frame is "comm", "comm-PID" or
 * "comm-PID/TID" as for perf script text, and the event kept is the one
 * asked for or the first sampled. A recording with context switches and
 * their switch records (ember record --off-cpu) also has off-CPU time
 * (perf_data_offcpu.c): each interval a thread was away weighs its
 * nanoseconds in a mark frame, [off-cpu] or [preempted], under the stack
 * of the switch, and the profile shows wall time (cpu + off-cpu).
 * Invariants: a raw node's parent has a smaller index; a raw frame is
 * (map, address), a map (dso, start, end, pgoff); a sample whose thread's
 * maps are unchanged and whose chain was seen before costs one hash.
 */
#include "read/perf/perf_data.h"
#include "read/perf/perf_names.h"
#include "read/read_impl.h"
#include "base/diag.h"
#include "base/hash.h"
#include "base/strmap.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAX_STACK = 127, NO_NODE = UINT32_MAX, PROGRESS_EVERY = 1 << 14 };

/* The raw frames that mark off-CPU time, leaves under the stack where a
 * thread stopped: addresses no call chain holds (perf's context markers
 * are filtered out before), without a map. */
#define MARK_BLOCKED_IP   (UINT64_MAX - 1)
#define MARK_PREEMPTED_IP (UINT64_MAX - 2)

/* A raw frame: (mapref, ip); mapref 0 is no map. */
struct raw_frame {
    uint64_t ip;
    uint32_t mapref;
};

struct frame_slot {
    uint64_t ip;
    uint32_t mapref;
    uint32_t id1; /* frame id + 1; 0: empty */
};

/* A frame of a call chain before it is numbered: an address and the
 * address space it belongs to. */
struct entry {
    uint64_t ip;
    uint64_t cpumode;
};

/* A sample's root (event, thread, name), and the last stack added under
 * it: a sample shares most of its frames, from the root, with the one
 * before it in its thread, and only the others cost a lookup. */
struct root {
    uint32_t attr, pid, tid;
    const char *comm; /* in the reader's arena */
    size_t comm_len;
    uint32_t node;       /* its raw node */
    uint64_t generation; /* of its maps, when last was added */
    struct entry *last;  /* leaf first */
    uint32_t *path;      /* path[i]: the node of last[n - 1 - i] */
    size_t nlast, pcap, lcap;
};

struct seq_entry {
    uint32_t node;
    uint64_t samples, period;
};

struct sample_time {
    uint64_t time;
    uint32_t pid, tid;
};

/* A recent entry's raw frame, valid while the generation of the maps it
 * was found in is the same. */
struct entry_memo {
    uint64_t ip, generation;
    uint32_t frame, cpumode;
};

enum { ENTRY_MEMO = 4096 };

struct reader {
    struct ember_profile *p;
    const struct ember_read_opts *o;
    struct ember_perf_opts po; /* the options, read once */
    struct ember_read_stats *st;
    struct ember_diag *d;
    struct ember_input *in;
    struct pd_stream s;
    struct pd_file f;
    struct pd_queue q;
    struct pd_tasks *t;
    struct pd_unwind *uw; /* DWARF call graphs */
    struct pd_leaf *leaf; /* fp call graphs' skipped callers */
    struct pd_offcpu *oc; /* context switches: off-CPU intervals */
    uint64_t last_time;   /* the latest record's (open intervals end at the recording's) */
    bool dwarf;           /* samples whose user frames only unwinding gives */
    uint32_t mark[2];     /* raw frames: blocked, preempted; UINT32_MAX until used */
    uint64_t unwound[MAX_STACK];

    /* raw stacks: node 0 is the root; level 1 keys are roots, deeper ones
     * raw frames */
    uint32_t *parent, *key;
    uint64_t *samples, *period;
    size_t nnodes, ncap;
    struct ember_u64map children;

    struct raw_frame *frames;
    size_t nframes, fcap;
    struct frame_slot *fslots;
    uint32_t fmask, fcount;

    struct pd_map *maprefs; /* from 1 */
    size_t nmaprefs, mcap;
    struct ember_strmap mapref_ids;

    struct root *roots;
    size_t nroots, rcap;
    struct ember_strmap root_ids;

    struct pd_seen *seen; /* per event */
    size_t seencap;
    uint64_t nseen, lost, unknown_ids;

    bool keep_seq;
    struct seq_entry *seq;
    size_t nseq, seqcap;
    struct sample_time *times; /* one per weight added to seq, for o->sample_time */
    size_t ntimes, tcap;

    struct entry_memo memo[ENTRY_MEMO];
    struct entry *chain; /* the current sample's frames, leaf first */
    size_t nchain, ccap;
    uint64_t records;
};

/* ---- raw frames and stacks ---------------------------------------------- */

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

static int raw_frame(struct reader *r, uint32_t mapref, uint64_t ip, uint32_t *id)
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

static int new_node(struct reader *r, uint32_t parent, uint32_t key, uint32_t *node)
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

static int child(struct reader *r, uint32_t parent, uint32_t key, uint32_t *node)
{
    if (ember_u64map_get(&r->children, (uint64_t)parent << 32 | key, node))
        return 0;
    return new_node(r, parent, key, node);
}

static int root_of(struct reader *r, uint32_t attr, uint32_t pid, uint32_t tid, const char *comm,
                   size_t len, uint32_t *id)
{
    char key[12 + 256];
    if (len > 256)
        len = 256;
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
        int err = new_node(r, 0, (uint32_t)r->nroots, &r->roots[r->nroots].node);
        if (err)
            return err;
        r->roots[r->nroots].generation = UINT64_MAX;
        v = ++r->nroots;
        if (ember_strmap_put(&r->root_ids, key, 12 + len, (void *)v) < 0)
            return -ENOMEM;
    }
    *id = (uint32_t)(v - 1);
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
 * unwound from the sample's registers and stack copy. A sample whose
 * stack the kernel could not copy (0 bytes: a fault in a fresh fork) has
 * no user frame at all in perf script, not even its address (libunwind
 * cannot start): the same here. */
static int unwound_entries(struct reader *r, uint32_t process, const struct pd_sample *s)
{
    bool user = false;
    for (size_t i = 0; i < r->nchain && !user; i++)
        user = r->chain[i].cpumode == PERF_RECORD_MISC_USER;
    r->dwarf |= s->regs && !user; /* its user frames are the unwinder's alone */
    if (!s->regs || !s->stack || s->stack_size == 0)
        return 0;
    size_t n;
    int err = pd_unwind_sample(r->uw, process, s, r->unwound, MAX_STACK, &n);
    for (size_t i = 0; i < n && !err; i++)
        err = push_entry(r, r->unwound[i], PERF_RECORD_MISC_USER);
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
        err = raw_frame(r, ref, e->ip, id);
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
            err = child(r, *node, frame, node);
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

static int add_weight(struct reader *r, uint32_t node, uint64_t period)
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

/* The time of the weight just added, when the caller wants the times of
 * the sequence (one per add_weight, in its order). */
static int note_time(struct reader *r, uint32_t pid, uint32_t tid, uint64_t time)
{
    if (!r->keep_seq || !r->o->sample_time)
        return 0;
    if (EMBER_VEC_RESERVE(r->times, r->tcap, r->ntimes + 1) < 0)
        return -ENOMEM;
    r->times[r->ntimes++] = (struct sample_time){time, pid, tid};
    return 0;
}

static int on_sample(struct reader *r, const struct pd_record *rec)
{
    int ai = pd_file_attr_of(&r->f, rec);
    if (ai < 0) {
        r->unknown_ids++;
        r->st->skipped++;
        return 0;
    }
    struct pd_sample s;
    int err = pd_file_parse_sample(&r->f, &r->f.attrs[ai], rec, &s, r->d);
    if (err)
        return err;
    if (r->o->keep_sample && !r->o->keep_sample(r->o->keep_sample_ctx, s.pid, s.tid, s.time))
        return 0;
    struct pd_seen *seen = &r->seen[ai];
    if (!seen->first)
        seen->first = ++r->nseen;
    seen->samples++;
    uint32_t process, root, node;
    const char *comm;
    size_t comm_len;
    if ((err = pd_tasks_thread(r->t, s.pid, s.tid, &process, &comm, &comm_len)) < 0 ||
        (err = root_of(r, (uint32_t)ai, s.pid, s.tid, comm, comm_len, &root)) < 0)
        return err;
    if ((err = chain_entries(r, &s)) < 0 || (err = leaf_caller(r, process, &s)) < 0 ||
        (err = unwound_entries(r, process, &s)) < 0 ||
        (err = stack_node(r, &r->roots[root], process, &node)) < 0)
        return err;
    if (pd_offcpu_is_switches(&r->f.attrs[ai]) &&
        (err = pd_offcpu_stack(r->oc, s.pid, s.tid, node)) < 0)
        return err;
    uint64_t period = 1;
    if (s.has_period && s.period > 0) {
        period = s.period;
        seen->weighed = true;
    }
    err = add_weight(r, node, period);
    return err ? err : note_time(r, s.pid, s.tid, s.time);
}

/* ---- off-CPU time --------------------------------------------------------- */

static bool is_mark(const struct reader *r, size_t node)
{
    return r->parent[node] != 0 && (r->key[node] == r->mark[0] || r->key[node] == r->mark[1]);
}

/* An interval away: a mark under its stack, weighing its nanoseconds. */
static int add_interval(struct reader *r, const struct pd_offcpu_interval *iv)
{
    uint32_t *mark = &r->mark[iv->preempted];
    uint32_t node;
    int err = 0;
    if (*mark == UINT32_MAX)
        err = raw_frame(r, 0, iv->preempted ? MARK_PREEMPTED_IP : MARK_BLOCKED_IP, mark);
    if (!err)
        err = child(r, iv->node, *mark, &node);
    if (!err)
        err = add_weight(r, node, iv->ns);
    return err ? err : note_time(r, iv->pid, iv->tid, iv->start);
}

static int on_switch(struct reader *r, const struct pd_record *rec)
{
    uint32_t pid, tid;
    struct pd_offcpu_interval iv;
    if (!pd_file_tid_of(&r->f, rec, &pid, &tid))
        return 0;
    int got = pd_offcpu_switch(r->oc, tid, pd_file_time_of(&r->f, rec), rec->misc, &iv);
    return got > 0 ? add_interval(r, &iv) : got;
}

/* Threads still away when the recording ended were away until then: the
 * latest time the file holds, its records' or the one its header gives
 * (where ember record says when it stopped; perf's is its last sample). */
static int close_intervals(struct reader *r)
{
    struct pd_offcpu_interval iv;
    uint64_t end = r->f.time_end > r->last_time ? r->f.time_end : r->last_time;
    int got, err = 0;
    while (!err && (got = pd_offcpu_close_next(r->oc, end, &iv)) > 0)
        err = add_interval(r, &iv);
    return err;
}

/* A record in time order. */
static int deliver(void *ctx, const struct pd_record *rec)
{
    struct reader *r = ctx;
    switch (rec->type) {
    case PERF_RECORD_SAMPLE:
        return on_sample(r, rec);
    case PERF_RECORD_LOST:
        if (rec->size >= 8 + 16)
            r->lost += pd_u64(rec->data + 16);
        return 0;
    case PERF_RECORD_SWITCH:
    case PERF_RECORD_SWITCH_CPU_WIDE:
        return on_switch(r, rec);
    case PERF_RECORD_EXIT:
        if (rec->size >= 8 + 16) /* pid, ppid, tid */
            pd_offcpu_exit(r->oc, pd_u32(rec->data + 16));
        return pd_tasks_record(r->t, &r->f, rec, r->d);
    default:
        return pd_tasks_record(r->t, &r->f, rec, r->d);
    }
}

static int on_record(struct reader *r, const struct pd_record *rec)
{
    if (++r->records % PROGRESS_EVERY == 0 && r->o->progress)
        r->o->progress(r->o->progress_ctx, r->in);
    if (rec->type == PD_RECORD_FINISHED_ROUND)
        return pd_queue_flush(&r->q, false, deliver, r);
    if (rec->type >= PD_RECORD_HEADER_ATTR) {
        int err = pd_file_user_record(&r->f, rec, r->d);
        if (!err && rec->type == PD_RECORD_HEADER_ATTR) {
            /* pipe mode: events arrive as records */
            if (EMBER_VEC_RESERVE(r->seen, r->seencap, r->f.nattrs) < 0)
                return -ENOMEM;
            r->seen[r->f.nattrs - 1] = (struct pd_seen){0};
        }
        return err;
    }
    if (r->f.nattrs == 0)
        return pd_corrupt(r->d, r->f.name, rec, "a record before any event is described");
    uint64_t time = pd_file_time_of(&r->f, rec);
    if (time == 0 || time == UINT64_MAX)
        return deliver(r, rec); /* untimed (synthesized) records: at once, as perf */
    if (time > r->last_time)
        r->last_time = time;
    return pd_queue_push(&r->q, rec, time);
}

/* ---- the profile -------------------------------------------------------- */

/* A growing array of frame ids. */
struct id_vec {
    uint32_t *v;
    size_t n, cap;
};

static int push_id(struct id_vec *v, uint32_t id)
{
    if (EMBER_VEC_RESERVE(v->v, v->cap, v->n + 1) < 0)
        return -ENOMEM;
    v->v[v->n++] = id;
    return 0;
}

/* The root frame, as perf_script.c makes it: the process or thread (views
 * spell "comm-PID/TID"; the kernel's -1, a task it could not name, is an
 * unknown id), else the command alone (spaces as '_'). */
static int root_frame(struct reader *r, const struct root *rt, uint32_t *frame, bool *java)
{
    const struct ember_perf_opts *po = &r->po;
    *java = rt->comm_len >= 4 && memcmp(rt->comm, "java", 4) == 0;
    if (po->include_tid || po->include_pid) {
        struct ember_frame fr = {.name = rt->comm,
                                 .name_len = rt->comm_len,
                                 .module = EMBER_NO_MODULE,
                                 .kind = po->include_tid ? EMBER_FRAME_THREAD : EMBER_FRAME_PROCESS,
                                 .pid = (int32_t)rt->pid,
                                 .tid = (int32_t)rt->tid,
                                 .kind_in_name = true};
        return ember_profile_intern_frame(r->p, &fr, frame);
    }
    char name[256];
    size_t n = 0;
    for (size_t i = 0; i < rt->comm_len && n < sizeof(name); i++)
        name[n++] = rt->comm[i] == ' ' ? '_' : rt->comm[i];
    return ember_perf_intern_root(r->p, name, n, false, frame);
}

/* Each raw frame's profile frames, named once (per JVM-ness). */
struct memo {
    int64_t *at[2]; /* offset in pool, -1 unnamed */
    uint32_t *count[2];
    uint32_t *pool;
    size_t npool, pcap;
};

/* An off-CPU mark's frame, in the memo of either JVM-ness. */
static int mark_frame(struct reader *r, struct memo *m, uint32_t frame)
{
    const char *name = frame == r->mark[1] ? "[preempted]" : "[off-cpu]";
    struct ember_frame fr = {.name = name,
                             .name_len = strlen(name),
                             .module = EMBER_NO_MODULE,
                             .kind = EMBER_FRAME_OFFCPU};
    uint32_t id;
    int err = ember_profile_intern_frame(r->p, &fr, &id);
    if (!err)
        err = EMBER_VEC_RESERVE(m->pool, m->pcap, m->npool + 1);
    if (err)
        return err;
    for (int j = 0; j < 2; j++) {
        if (!m->at[j])
            continue;
        m->at[j][frame] = (int64_t)m->npool;
        m->count[j][frame] = 1;
    }
    m->pool[m->npool++] = id;
    return 0;
}

static int named(struct reader *r, struct pd_names *nm, struct memo *m, uint32_t frame, bool java,
                 const uint32_t **out, size_t *n)
{
    int j = java;
    if (!m->at[j]) {
        m->at[j] = malloc((r->nframes ? r->nframes : 1) * sizeof(int64_t));
        m->count[j] = malloc((r->nframes ? r->nframes : 1) * sizeof(uint32_t));
        if (!m->at[j] || !m->count[j])
            return -ENOMEM;
        for (size_t i = 0; i < r->nframes; i++)
            m->at[j][i] = -1;
    }
    if (m->at[j][frame] < 0 && (frame == r->mark[0] || frame == r->mark[1])) {
        int err = mark_frame(r, m, frame);
        if (err)
            return err;
    }
    if (m->at[j][frame] < 0) {
        const struct raw_frame *rf = &r->frames[frame];
        struct pd_frame_src src = {.dso = PD_NO_DSO, .ip = rf->ip, .pc = rf->ip};
        if (rf->mapref) {
            const struct pd_map *mp = &r->maprefs[rf->mapref];
            src = (struct pd_frame_src){mp->dso,   mp->start, mp->end,
                                        mp->pgoff, rf->ip,    rf->ip - mp->start + mp->pgoff};
        }
        const uint32_t *f;
        size_t k;
        int err = pd_names_resolve(nm, &src, java, &f, &k);
        if (!err)
            err = EMBER_VEC_RESERVE(m->pool, m->pcap, m->npool + k);
        if (err)
            return err;
        if (k)
            memcpy(m->pool + m->npool, f, k * sizeof(*f));
        m->at[j][frame] = (int64_t)m->npool;
        m->count[j][frame] = (uint32_t)k;
        m->npool += k;
    }
    *out = m->pool + m->at[j][frame];
    *n = m->count[j][frame];
    return 0;
}

static void memo_release(struct memo *m)
{
    for (int j = 0; j < 2; j++) {
        free(m->at[j]);
        free(m->count[j]);
    }
    free(m->pool);
}

/* The roots' frames, interned once each (NO_NODE: an event not kept). */
static int root_frames(struct reader *r, const bool *keep, uint32_t *frame, bool *jvm)
{
    for (size_t i = 0; i < r->nroots; i++) {
        frame[i] = NO_NODE;
        int err = keep[r->roots[i].attr] ? root_frame(r, &r->roots[i], &frame[i], &jvm[i]) : 0;
        if (err)
            return err;
    }
    return 0;
}

/* The stack of raw node i, root first, as profile frames (its raw frames
 * named, each perhaps several with inlined calls): *n 0 when its event is
 * not kept. */
static int stack_of(struct reader *r, struct pd_names *nm, struct memo *m, size_t i,
                    const uint32_t *rframe, const bool *rjvm, struct id_vec *raw,
                    struct id_vec *out)
{
    raw->n = out->n = 0;
    for (; r->parent[i] != 0; i = r->parent[i])
        if (push_id(raw, r->key[i]) < 0)
            return -ENOMEM;
    uint32_t root = r->key[i];
    if (rframe[root] == NO_NODE)
        return 0;
    if (push_id(out, rframe[root]) < 0)
        return -ENOMEM;
    while (raw->n) {
        const uint32_t *f;
        size_t k;
        int err = named(r, nm, m, raw->v[--raw->n], rjvm[root], &f, &k);
        if (!err)
            err = EMBER_VEC_RESERVE(out->v, out->cap, out->n + k);
        if (err)
            return err;
        memcpy(out->v + out->n, f, k * sizeof(*f));
        out->n += k;
    }
    return 0;
}

/* Whether raw node i's weight counts: with off-CPU time shown, the
 * intervals' marks and not the context switches' own samples; without,
 * never the marks. attr[i] is the event of i's root. */
static bool counted(const struct reader *r, size_t i, const uint32_t *attr)
{
    if (!attr)
        return !is_mark(r, i);
    return is_mark(r, i) || !pd_offcpu_is_switches(&r->f.attrs[attr[i]]);
}

/* Each raw node's event (nodes come after their parents). */
static uint32_t *node_attrs(const struct reader *r)
{
    uint32_t *attr = malloc(r->nnodes * sizeof(*attr));
    for (size_t i = 1; attr && i < r->nnodes; i++)
        attr[i] = r->parent[i] == 0 ? r->roots[r->key[i]].attr : attr[r->parent[i]];
    return attr;
}

/* Every weighed raw node's profile node (NO_NODE: an event not kept, or
 * a weight not counted), added as a stack through the model's public API. */
static int place_nodes(struct reader *r, struct pd_names *nm, const bool *keep, bool offcpu,
                       uint32_t *pnode)
{
    uint32_t *attr = offcpu ? node_attrs(r) : NULL;
    if (offcpu && !attr)
        return -ENOMEM;
    struct memo m = {0};
    struct id_vec raw = {0}, out = {0};
    uint32_t *rframe = malloc((r->nroots ? r->nroots : 1) * sizeof(*rframe));
    bool *rjvm = calloc(r->nroots ? r->nroots : 1, sizeof(*rjvm));
    int err = rframe && rjvm ? root_frames(r, keep, rframe, rjvm) : -ENOMEM;
    for (size_t i = 1; i < r->nnodes && !err; i++) {
        pnode[i] = NO_NODE;
        if (!r->samples[i] || !counted(r, i, attr))
            continue;
        err = stack_of(r, nm, &m, i, rframe, rjvm, &raw, &out);
        if (!err && out.n)
            err = ember_profile_add_stack(r->p, out.v, out.n, EMBER_ROOT_FIRST, NULL, &pnode[i]);
    }
    memo_release(&m);
    free(attr);
    free(raw.v);
    free(out.v);
    free(rframe);
    free(rjvm);
    return err;
}

/* Raw node i's weight (samples, period) in its profile node n: an
 * interval's nanoseconds as off-CPU (and wall) time, and one sample (the
 * context switch that began it), a sample's period as its own (and wall)
 * time. */
static int add_weight_to(struct reader *r, size_t i, uint32_t n, uint64_t samples, uint64_t period,
                         const struct pd_values *v)
{
    bool mark = is_mark(r, i);
    int err = ember_profile_add(r->p, n, v->samples, (int64_t)samples);
    if (!err && mark)
        err = ember_profile_add(r->p, n, v->off, (int64_t)period);
    else if (!err && v->period != v->samples)
        err = ember_profile_add(r->p, n, v->period, (int64_t)period);
    if (!err && v->wall != PD_NO_VALUE)
        err = ember_profile_add(r->p, n, v->wall, (int64_t)period);
    r->st->samples += samples; /* an interval too: a profile may be off-CPU time alone */
    return err;
}

/* The times of the k samples from *next, told when placed. */
static void tell_times(struct reader *r, size_t *next, uint64_t k, bool placed)
{
    for (uint64_t j = 0; j < k && *next < r->ntimes; j++, ++*next)
        if (placed)
            r->o->sample_time(r->o->sample_time_ctx, r->times[*next].pid, r->times[*next].tid,
                              r->times[*next].time);
}

static int add_weights(struct reader *r, const uint32_t *pnode, const struct pd_values *v)
{
    int err = 0;
    if (r->keep_seq) {
        size_t next = 0;
        for (size_t i = 0; i < r->nseq && !err; i++) {
            uint32_t n = pnode[r->seq[i].node];
            if (n != NO_NODE)
                err = add_weight_to(r, r->seq[i].node, n, r->seq[i].samples, r->seq[i].period, v);
            if (r->o->sample_time)
                tell_times(r, &next, r->seq[i].samples, n != NO_NODE);
        }
        return err;
    }
    for (size_t i = 1; i < r->nnodes && !err; i++)
        if (r->samples[i] && pnode[i] != NO_NODE)
            err = add_weight_to(r, i, pnode[i], r->samples[i], r->period[i], v);
    return err;
}

static int build_profile(struct reader *r)
{
    size_t na = r->f.nattrs ? r->f.nattrs : 1;
    bool *keep = calloc(na, sizeof(*keep));
    uint32_t *pnode = malloc(r->nnodes * sizeof(*pnode));
    struct pd_names *nm = NULL;
    int err = keep && pnode ? 0 : -ENOMEM;
    struct pd_values v;
    if (!err)
        err = pd_values_set(r->p, &r->f, r->seen, r->po.event_filter, pd_offcpu_count(r->oc) > 0,
                            r->st, keep, &v);
    if (!err)
        err = pd_names_new(&nm, r->p, &r->f, r->t, r->o);
    if (!err)
        err = place_nodes(r, nm, keep, v.offcpu, pnode);
    if (!err)
        err = add_weights(r, pnode, &v);
    if (!err)
        err = pd_profile_meta(r->p, nm, r->t, &v);
    if (err == -ERANGE)
        err = ember_diag_set(r->d, err, r->f.name, 0, "sample weights overflow a 64-bit count");
    pd_names_free(nm);
    free(keep);
    free(pnode);
    return err;
}

/* ---- the format ----------------------------------------------------------- */

static int reader_init(struct reader *r, struct ember_profile *p, struct ember_input *in,
                       const struct ember_read_opts *o, struct ember_read_stats *st,
                       struct ember_diag *d)
{
    memset(r, 0, sizeof(*r));
    r->p = p;
    r->o = o;
    r->po = ember_perf_opts_of(o);
    r->st = st;
    r->d = d;
    r->in = in;
    r->keep_seq = ember_profile_has_sequence(p);
    pd_stream_init(&r->s, in);
    pd_file_init(&r->f, ember_input_name(in));
    pd_queue_init(&r->q);
    for (size_t i = 0; i < ENTRY_MEMO; i++)
        r->memo[i].frame = UINT32_MAX;
    r->fmask = 1023;
    r->fslots = calloc(r->fmask + 1, sizeof(*r->fslots));
    uint32_t root;
    int err = r->fslots ? 0 : -ENOMEM;
    if (!err)
        err = pd_tasks_new(&r->t);
    if (!err)
        err = pd_unwind_new(&r->uw, r->t);
    if (!err)
        err = pd_leaf_new(&r->leaf);
    if (!err)
        err = pd_offcpu_new(&r->oc);
    r->mark[0] = r->mark[1] = UINT32_MAX;
    if (!err)
        err = ember_u64map_init(&r->children);
    if (!err)
        err = ember_strmap_init(&r->mapref_ids);
    if (!err)
        err = ember_strmap_init(&r->root_ids);
    if (!err)
        err = new_node(r, UINT32_MAX, UINT32_MAX, &root); /* node 0: the root */
    return err;
}

static void reader_release(struct reader *r)
{
    pd_stream_release(&r->s);
    pd_file_release(&r->f);
    pd_queue_release(&r->q);
    pd_unwind_free(r->uw);
    pd_leaf_free(r->leaf);
    pd_offcpu_free(r->oc);
    pd_tasks_free(r->t);
    free(r->parent);
    free(r->key);
    free(r->samples);
    free(r->period);
    ember_u64map_release(&r->children);
    free(r->frames);
    free(r->fslots);
    free(r->maprefs);
    ember_strmap_release(&r->mapref_ids);
    for (size_t i = 0; i < r->nroots; i++) {
        free(r->roots[i].last);
        free(r->roots[i].path);
    }
    free(r->roots);
    ember_strmap_release(&r->root_ids);
    free(r->seen);
    free(r->seq);
    free(r->times);
    free(r->chain);
}

static int read_data(struct reader *r)
{
    if (!r->f.pipe && r->f.data_size == 0)
        return ember_diag_set(r->d, -ENODATA, r->f.name, 0,
                              "the perf.data header says its data section is empty (perf record "
                              "was stopped before it could finish the file?)");
    if (r->f.nattrs && EMBER_VEC_RESERVE(r->seen, r->seencap, r->f.nattrs) < 0)
        return -ENOMEM;
    if (r->f.nattrs)
        memset(r->seen, 0, r->f.nattrs * sizeof(*r->seen));
    struct pd_record rec;
    int err;
    while ((err = pd_file_next_record(&r->f, &r->s, &rec, r->d)) == 0)
        if ((err = on_record(r, &rec)) < 0)
            return err;
    if (err < 0)
        return err;
    return pd_queue_flush(&r->q, true, deliver, r);
}

static void warn_lost(struct reader *r)
{
    struct ember_diag w;
    if (r->o->warn && r->lost) {
        ember_diag_set(&w, 0, r->f.name, 0,
                       "%llu samples were lost while recording (perf record could not keep up)",
                       (unsigned long long)r->lost);
        r->o->warn(r->o->warn_ctx, &w);
    }
    if (r->o->warn && r->unknown_ids) {
        ember_diag_set(&w, 0, r->f.name, 0,
                       "%llu samples skipped: their event id is none of the file's events",
                       (unsigned long long)r->unknown_ids);
        r->o->warn(r->o->warn_ctx, &w);
    }
}

static int perf_data_read(struct ember_profile *p, struct ember_input *in,
                          const struct ember_read_opts *o, struct ember_read_stats *st,
                          struct ember_diag *d)
{
    struct reader r;
    int err = reader_init(&r, p, in, o, st, d);
    if (!err)
        err = pd_file_read_header(&r.f, &r.s, d);
    if (!err)
        err = read_data(&r);
    if (!err)
        err = pd_file_read_features(&r.f, &r.s, d);
    if (!err && r.dwarf)
        err = pd_file_check_arch(&r.f, d);
    if (!err)
        err = close_intervals(&r);
    if (!err) {
        warn_lost(&r);
        err = build_profile(&r);
    }
    if (o->progress)
        o->progress(o->progress_ctx, in);
    reader_release(&r);
    return err;
}

/* perf's magic, and those of the files the reader refuses by name: a
 * big-endian one, perf's first format. */
static enum ember_probe perf_data_probe(const char *data, size_t len)
{
    static const char *const magic[] = {PD_MAGIC, PD_MAGIC_SWAPPED, PD_MAGIC_V1};
    for (size_t i = 0; len >= PD_MAGIC_LEN && i < sizeof(magic) / sizeof(magic[0]); i++)
        if (memcmp(data, magic[i], PD_MAGIC_LEN) == 0)
            return EMBER_PROBE_YES;
    return EMBER_PROBE_NO;
}

const struct ember_format ember_format_perf_data = {
    .name = "perf.data",
    .description = "perf.data, as perf record writes it (fp and DWARF call graphs)",
    .probe = perf_data_probe,
    .read = perf_data_read,
    .options = ember_perf_options,
    .options_heading = EMBER_PERF_OPTIONS_HEADING,
};
