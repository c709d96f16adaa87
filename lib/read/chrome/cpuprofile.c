/*
 * cpuprofile.c - V8's CPU profiles: .cpuprofile files, and the Profile,
 * ProfileChunk and CpuProfile events that DevTools puts in its traces
 * (chrome.c reads the JSON and hands their parts over), by the rules of
 * speedscope's importer (chrome.ts):
 *
 * Nodes (id, callFrame, parent or children) and samples with timeDeltas;
 * consecutive equal samples are one run, and a run weighs the time to the
 * next run (times never go back: a negative delta counts 0); "(root)" and
 * "(idle)" are not frames (idle time is no stack), and "(program)" and
 * "(garbage collector)" sit on top of the previous stack, as speedscope
 * places them; a frame without a name is "(anonymous FILE:LINE)". The time
 * before the first sample, which speedscope shows as an empty stack, is not
 * a stack here. Several profiles (workers) get a root frame each, named
 * after their thread.
 *
 * Invariants: a profile's samples are resolved only once its nodes are
 * known (ready), in order, each paired with its time delta; a node, once
 * known, never changes (the first definition of an id holds), so parents
 * are cached; the current stack holds each node at most once (pos).
 *
 * Memory: per profile, its nodes, the current stack, and the samples (8
 * bytes each) that wait for their time deltas, which in a .cpuprofile come
 * after them; the distinct stacks (r->cpu); one profile chunk at a time in
 * the capture.
 */
#include "read/chrome/chrome_impl.h"
#include "base/u64map.h"
#include "base/vec.h"

#include <errno.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#define NS_PER_US 1000

enum { NODE_IGNORED = 1, NODE_ON_TOP = 2 };

/* ---- CPU profiles ------------------------------------------------------------------ */

struct pnode {
    int64_t id, parent_id;
    uint32_t frame, parent; /* parent: node index, UINT32_MAX until resolved */
    int32_t pos;            /* in the current stack, -1 if not there */
    uint8_t flags;
    bool has_parent_id;
};

struct cpu_profile {
    uint32_t root; /* its placeholder node in the reader's cpu profile */
    char pid[MAX_ID_TEXT], tid[MAX_ID_TEXT];
    struct pnode *nodes;
    size_t nnodes, ncap;
    struct ember_u64map ids;       /* node id -> index */
    struct ember_u64map parent_of; /* child id -> parent index, from children lists */
    bool ready;                    /* its nodes are known: samples can be resolved */
    /* samples and deltas waiting for each other */
    int64_t *samples, *deltas;
    size_t shead, nsamples, scap, dhead, ndeltas, dcap;
    /* the current run */
    bool started, in_run;
    int64_t last_id, elapsed, run_start;
    uint32_t *stack, *stack_node; /* node indices, and their profile nodes */
    size_t depth, stcap, sncap;
    uint32_t *open_tmp;
    size_t otcap;
    bool weighed;
};

/* ---- the parts of a profile as they are read --------------------------------------- */

static bool fixed_integer(const char *s, size_t n, int64_t *v)
{
    ember_fixed f;
    const ember_fixed unit = 1000000000;
    if (!ember_json_fixed(s, n, &f) || f % unit != 0 || f / unit > INT64_MAX / 2 ||
        f / unit < -(INT64_MAX / 2))
        return false;
    *v = (int64_t)(f / unit);
    return true;
}

static int queue(int64_t **v, size_t *n, size_t *cap, const int64_t *add, size_t nadd)
{
    if (nadd == 0)
        return 0;
    if (EMBER_VEC_RESERVE(*v, *cap, *n + nadd) < 0)
        return -ENOMEM;
    memcpy(*v + *n, add, nadd * sizeof(*add));
    *n += nadd;
    return 0;
}

/* The display name of a node: speedscope's. */
static int node_name(struct capture *c, struct cap_node *n)
{
    char buf[MAX_TEXT + 64];
    const char *s = buf;
    size_t len;
    n->flags = 0;
    if (text_is(&c->fn, "(root)") || text_is(&c->fn, "(idle)") ||
        text_is(&c->url, "native dummy.js"))
        n->flags |= NODE_IGNORED;
    if (text_is(&c->fn, "(program)") || text_is(&c->fn, "(garbage collector)"))
        n->flags |= NODE_ON_TOP;
    if (c->fn.set && c->fn.len) {
        s = c->fn.s, len = c->fn.len;
    } else if (c->url.set && c->url.len) {
        const char *slash = memrchr(c->url.s, '/', c->url.len);
        const char *base = slash ? slash + 1 : c->url.s;
        int m = c->line_set ? snprintf(buf, sizeof(buf), "(anonymous %.*s:%lld)",
                                       (int)(c->url.len - (size_t)(base - c->url.s)), base,
                                       (long long)c->line + 1)
                            : snprintf(buf, sizeof(buf), "(anonymous %.*s)",
                                       (int)(c->url.len - (size_t)(base - c->url.s)), base);
        len = m < 0 ? 0 : (size_t)m < sizeof(buf) ? (size_t)m : sizeof(buf) - 1;
    } else {
        s = "(anonymous)", len = 11;
    }
    size_t ulen = c->url.set && c->url.len <= UINT32_MAX ? c->url.len : 0;
    if (EMBER_VEC_RESERVE(c->names, c->names_cap, c->names_len + len + ulen + 1) < 0)
        return -ENOMEM;
    memcpy(c->names + c->names_len, s, len);
    ember_json_frame_name(c->names + c->names_len, len);
    n->name_off = (uint32_t)c->names_len;
    n->name_len = (uint32_t)len;
    c->names_len += len;
    /* where the function is: its script and line, as speedscope shows them */
    if (ulen)
        memcpy(c->names + c->names_len, c->url.s, ulen);
    n->url_off = (uint32_t)c->names_len;
    n->url_len = (uint32_t)ulen;
    c->names_len += ulen;
    n->line = c->line_set && c->line >= 0 && c->line < UINT32_MAX ? (uint32_t)c->line + 1 : 0;
    return 0;
}

int ember_cpuprofile_end_node(struct chrome_reader *r)
{
    struct capture *c = &r->cap;
    if (!c->node.has_id)
        return ember_json_fail(&r->j, "CPU profile node without an \"id\" (expected {\"id\": N, "
                                      "\"callFrame\": {...}, ...})");
    for (size_t i = c->node_children; i < c->nchildren; i++)
        c->children[i][0] = c->node.id;
    int err = node_name(c, &c->node);
    if (!err && EMBER_VEC_RESERVE(c->nodes, c->ncap, c->nnodes + 1) < 0)
        err = -ENOMEM;
    if (err)
        return ember_json_error(&r->j, err);
    c->nodes[c->nnodes++] = c->node;
    return 1;
}

int ember_cpuprofile_number(struct chrome_reader *r, enum ctx c, enum key k, const char *s,
                            size_t n)
{
    struct capture *cap = &r->cap;
    int64_t v;
    if (c == C_SAMPLES || c == C_DELTAS || c == C_CHILDREN) {
        if (!fixed_integer(s, n, &v))
            return ember_json_fail(&r->j, "expected an integer in %s, not %.*s",
                                   c == C_SAMPLES  ? "samples"
                                   : c == C_DELTAS ? "timeDeltas"
                                                   : "children",
                                   (int)(n > 30 ? 30 : n), s);
        int err = 0;
        if (c == C_SAMPLES) {
            err = queue(&cap->samples, &cap->nsamples, &cap->scap, &v, 1);
        } else if (c == C_DELTAS) {
            err = queue(&cap->deltas, &cap->ndeltas, &cap->dcap, &v, 1);
        } else if (EMBER_VEC_RESERVE(cap->children, cap->ccap, cap->nchildren + 1) < 0) {
            err = -ENOMEM;
        } else {
            /* (parent, child): the parent's id may come after, at the node's end */
            cap->children[cap->nchildren][0] = 0;
            cap->children[cap->nchildren++][1] = v;
        }
        return err ? ember_json_error(&r->j, err) : 1;
    }
    if (c == C_NODE && (k == K_ID || k == K_PARENT)) {
        if (!fixed_integer(s, n, &v))
            return ember_json_fail(&r->j, "expected an integer node %s",
                                   k == K_ID ? "id" : "parent");
        if (k == K_ID)
            cap->node.id = v, cap->node.has_id = true;
        else
            cap->node.parent = v, cap->node.has_parent = true;
        return 1;
    }
    if (c == C_CALLFRAME && k == K_LINE) {
        cap->line_set = fixed_integer(s, n, &cap->line);
        return 1;
    }
    return -1;
}

/* ---- profiles: nodes, and runs of samples ------------------------------------------- */

static int profile_get(struct chrome_reader *r, const char *pid, const char *id, const char *tid,
                       struct cpu_profile **out)
{
    char key[2 * MAX_TEXT + 2];
    size_t klen = ember_chrome_pair_key(key, sizeof(key), pid, id);
    uintptr_t v = (uintptr_t)ember_strmap_get(&r->profile_ids, key, klen);
    if (v) {
        *out = &r->profiles[v - 1];
        return 0;
    }
    if (EMBER_VEC_RESERVE(r->profiles, r->pcap, r->nprofiles + 1) < 0)
        return -ENOMEM;
    struct cpu_profile *cp = &r->profiles[r->nprofiles];
    memset(cp, 0, sizeof(*cp));
    snprintf(cp->pid, sizeof(cp->pid), "%s", pid);
    snprintf(cp->tid, sizeof(cp->tid), "%s", tid);
    int err = ember_u64map_init(&cp->ids);
    if (!err)
        err = ember_u64map_init(&cp->parent_of);
    r->nprofiles++; /* released whatever happened */
    if (!err)
        err = ember_chrome_add_placeholder(r->cpu, r->nprofiles - 1, &cp->root);
    if (err)
        return err;
    *out = cp;
    return ember_strmap_put(&r->profile_ids, key, klen, (void *)(uintptr_t)r->nprofiles);
}

static int add_nodes(struct chrome_reader *r, struct cpu_profile *cp, const struct capture *c)
{
    int err = 0;
    for (size_t i = 0; i < c->nnodes && !err; i++) {
        const struct cap_node *n = &c->nodes[i];
        uint32_t frame, index;
        if (ember_u64map_get(&cp->ids, (uint64_t)n->id, &index))
            continue; /* defined twice: the first one holds */
        if (cp->nnodes >= INT32_MAX || EMBER_VEC_RESERVE(cp->nodes, cp->ncap, cp->nnodes + 1) < 0)
            return -ENOMEM;
        struct ember_frame fr = {.name = c->names + n->name_off,
                                 .name_len = n->name_len,
                                 .file = n->url_len ? c->names + n->url_off : NULL,
                                 .file_len = n->url_len,
                                 .line = n->line,
                                 .module = EMBER_NO_MODULE};
        err = ember_profile_intern_frame(r->cpu, &fr, &frame);
        if (!err)
            err = ember_u64map_put(&cp->ids, (uint64_t)n->id, (uint32_t)cp->nnodes);
        cp->nodes[cp->nnodes++] =
            (struct pnode){n->id, n->parent, frame, UINT32_MAX, -1, n->flags, n->has_parent};
    }
    /* children lists: the parent is a node of this capture, known now */
    for (size_t i = 0; i < c->nchildren && !err; i++) {
        uint32_t parent;
        if (ember_u64map_get(&cp->ids, (uint64_t)c->children[i][0], &parent))
            err = ember_u64map_put(&cp->parent_of, (uint64_t)c->children[i][1], parent);
    }
    return err;
}

/* The parent of node n (an index), UINT32_MAX for none. */
static uint32_t parent_of(struct cpu_profile *cp, uint32_t n)
{
    struct pnode *pn = &cp->nodes[n];
    if (pn->parent != UINT32_MAX)
        return pn->parent;
    uint32_t index;
    if (pn->has_parent_id ? !ember_u64map_get(&cp->ids, (uint64_t)pn->parent_id, &index)
                          : !ember_u64map_get(&cp->parent_of, (uint64_t)pn->id, &index))
        return UINT32_MAX;
    if (index == n)
        return UINT32_MAX;
    pn->parent = index; /* cached: nodes never change once known */
    return index;
}

/* Where the walk from node n goes next: its parent, or for "(program)"
 * and "(garbage collector)" the top of the current stack. */
static uint32_t next_up(struct cpu_profile *cp, uint32_t n)
{
    if (cp->nodes[n].flags & NODE_ON_TOP)
        return cp->depth ? cp->stack[cp->depth - 1] : UINT32_MAX;
    return parent_of(cp, n);
}

/* Makes the stack that of node top, as speedscope's importer moves from
 * one sample's stack to the next (the nearest common ancestor stays). */
static int move_to(struct chrome_reader *r, struct cpu_profile *cp, uint32_t top)
{
    size_t steps = 0, limit = cp->nnodes + 1;
    uint32_t lca = top;
    while (lca != UINT32_MAX && cp->nodes[lca].pos < 0) {
        if (++steps > limit)
            return ember_json_fail(&r->j, "the CPU profile's nodes form a cycle (expected each "
                                          "node's parents to lead to the root)");
        lca = next_up(cp, lca);
    }
    while (cp->depth && cp->stack[cp->depth - 1] != lca)
        cp->nodes[cp->stack[--cp->depth]].pos = -1;
    size_t nopen = 0;
    steps = 0;
    for (uint32_t n = top; n != UINT32_MAX && n != lca && !(cp->nodes[n].flags & NODE_IGNORED);
         n = next_up(cp, n)) {
        if (++steps > limit)
            return ember_json_fail(&r->j, "the CPU profile's nodes form a cycle (expected each "
                                          "node's parents to lead to the root)");
        if (EMBER_VEC_RESERVE(cp->open_tmp, cp->otcap, nopen + 1) < 0)
            return ember_json_error(&r->j, -ENOMEM);
        cp->open_tmp[nopen++] = n;
    }
    while (nopen) {
        uint32_t n = cp->open_tmp[--nopen], node;
        uint32_t parent = cp->depth ? cp->stack_node[cp->depth - 1] : cp->root;
        int err = ember_profile_child(r->cpu, parent, cp->nodes[n].frame, &node);
        if (!err && (EMBER_VEC_RESERVE(cp->stack, cp->stcap, cp->depth + 1) < 0 ||
                     EMBER_VEC_RESERVE(cp->stack_node, cp->sncap, cp->depth + 1) < 0))
            err = -ENOMEM;
        if (err)
            return ember_json_error(&r->j, err);
        cp->nodes[n].pos = (int32_t)cp->depth;
        cp->stack[cp->depth] = n;
        cp->stack_node[cp->depth++] = node;
    }
    return 1;
}

/* The current run ends at time `at`: it weighs the time since it began. */
static int end_run(struct chrome_reader *r, struct cpu_profile *cp, int64_t at)
{
    if (!cp->in_run || at <= cp->run_start || !cp->depth)
        return 0;
    int err = ember_chrome_add_weight(r, r->cpu, cp->stack_node[cp->depth - 1], at - cp->run_start);
    cp->weighed |= !err;
    return err;
}

/* One sample: node id, and the time since the previous sample (µs). */
static int sample(struct chrome_reader *r, struct cpu_profile *cp, int64_t id, int64_t delta_us)
{
    int64_t delta;
    if (__builtin_mul_overflow(delta_us, NS_PER_US, &delta))
        return ember_json_fail(&r->j, "time delta out of range (expected µs)");
    if (!cp->started) {
        cp->started = true;
        cp->elapsed = delta;
    } else if (__builtin_add_overflow(cp->elapsed, delta, &cp->elapsed)) {
        return ember_json_fail(&r->j, "time deltas overflow (expected µs since the start)");
    }
    if (cp->in_run && id == cp->last_id)
        return 1;
    /* a new run: times never go back */
    int64_t at = cp->in_run && cp->elapsed < cp->run_start ? cp->run_start : cp->elapsed;
    int err = end_run(r, cp, at);
    if (err)
        return ember_json_error(&r->j, err);
    uint32_t index;
    cp->last_id = id;
    cp->in_run = true;
    cp->run_start = at;
    if (!ember_u64map_get(&cp->ids, (uint64_t)id, &index)) {
        ember_json_warn(&r->j, r->st, "sample of unknown node %lld (expected the id of a node)",
                        (long long)id);
        return 1;
    }
    return move_to(r, cp, index);
}

/* Pairs waiting samples and deltas, once the nodes are known. */
static int pair_samples(struct chrome_reader *r, struct cpu_profile *cp)
{
    if (!cp->ready)
        return 1;
    while (cp->shead < cp->nsamples && cp->dhead < cp->ndeltas)
        if (!sample(r, cp, cp->samples[cp->shead++], cp->deltas[cp->dhead++]))
            return 0;
    if (cp->shead == cp->nsamples)
        cp->shead = cp->nsamples = 0;
    if (cp->dhead == cp->ndeltas)
        cp->dhead = cp->ndeltas = 0;
    return 1;
}

/* Moves what the capture holds of a profile into cp. */
static int apply_capture(struct chrome_reader *r, struct cpu_profile *cp, struct capture *c,
                         bool ready)
{
    int err = add_nodes(r, cp, c);
    if (!err)
        err = queue(&cp->samples, &cp->nsamples, &cp->scap, c->samples, c->nsamples);
    if (!err)
        err = queue(&cp->deltas, &cp->ndeltas, &cp->dcap, c->deltas, c->ndeltas);
    if (err)
        return ember_json_error(&r->j, err);
    c->nnodes = c->nchildren = c->nsamples = c->ndeltas = c->names_len = 0;
    cp->ready |= ready;
    return pair_samples(r, cp);
}

int ember_cpuprofile_add_event(struct chrome_reader *r, struct capture *c)
{
    const char *pid = text_or(&c->pid), *tid = text_or(&c->tid);
    char key[2 * MAX_ID_TEXT + 2];
    const char *id = c->id.s;
    if (!c->id.set) {
        ember_chrome_pair_key(key, sizeof(key), pid, tid);
        id = key;
    }
    struct cpu_profile *cp;
    int err = profile_get(r, pid, id, tid, &cp);
    if (err)
        return ember_json_error(&r->j, err);
    if (!text_is(&c->name, "ProfileChunk")) {
        /* the event that declares it says whose thread it is */
        snprintf(cp->tid, sizeof(cp->tid), "%s", tid);
    }
    return apply_capture(r, cp, c, true);
}

/* ---- the reader's entries ---------------------------------------------------------- */

int ember_cpuprofile_init(struct chrome_reader *r)
{
    r->top_profile = -1;
    r->cpu = ember_profile_new();
    if (!r->cpu)
        return -ENOMEM;
    if (ember_profile_has_sequence(r->p))
        ember_profile_keep_sequence(r->cpu, true);
    return ember_strmap_init(&r->profile_ids);
}

int ember_cpuprofile_add_part(struct chrome_reader *r, bool nodes)
{
    struct cpu_profile *cp;
    if (r->top_profile < 0) {
        int err = profile_get(r, "", "", "", &cp);
        if (err)
            return ember_json_error(&r->j, err);
        r->top_profile = (int)(cp - r->profiles);
    }
    cp = &r->profiles[r->top_profile];
    return apply_capture(r, cp, &r->cap, cp->ready || nodes);
}

int ember_cpuprofile_finish(struct chrome_reader *r)
{
    int err = 0;
    for (size_t i = 0; i < r->nprofiles && !err; i++) {
        struct cpu_profile *cp = &r->profiles[i];
        cp->ready = true;
        if (pair_samples(r, cp)) /* the last run ends at the last sample */
            err = end_run(r, cp, cp->elapsed > cp->run_start ? cp->elapsed : cp->run_start);
        else
            err = r->j.err;
    }
    return err;
}

size_t ember_cpuprofile_weighed(const struct chrome_reader *r)
{
    size_t weighed = 0;
    for (size_t i = 0; i < r->nprofiles; i++)
        weighed += r->profiles[i].weighed;
    return weighed;
}

/* A CPU profile's placeholder becomes its thread's root frame when there
 * are several, and goes otherwise. */
static int rename_profile(void *ctx, struct ember_frame *fr)
{
    struct chrome_reader *r = ctx;
    long k = ember_chrome_read_placeholder(fr->name, fr->name_len);
    if (k < 0 || (size_t)k >= r->nprofiles)
        return 0;
    if (ember_cpuprofile_weighed(r) < 2) {
        fr->name = NULL;
        return 0;
    }
    const struct cpu_profile *cp = &r->profiles[k];
    fr->name_len =
        (size_t)ember_trace_events_label(r, cp->pid, cp->tid, r->label, sizeof(r->label));
    fr->name = r->label;
    fr->kind = EMBER_FRAME_THREAD;
    return 0;
}

int ember_cpuprofile_graft(struct chrome_reader *r)
{
    return ember_profile_merge_renamed(r->p, r->cpu, rename_profile, r);
}

void ember_cpuprofile_release(struct chrome_reader *r)
{
    for (size_t i = 0; i < r->nprofiles; i++) {
        struct cpu_profile *cp = &r->profiles[i];
        ember_u64map_release(&cp->ids);
        ember_u64map_release(&cp->parent_of);
        free(cp->nodes);
        free(cp->samples);
        free(cp->deltas);
        free(cp->stack);
        free(cp->stack_node);
        free(cp->open_tmp);
    }
    free(r->profiles);
    ember_profile_free(r->cpu);
    ember_strmap_release(&r->profile_ids);
}
