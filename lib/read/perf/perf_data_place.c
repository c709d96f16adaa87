/*
 * perf_data_place.c - the raw stacks of a perf.data (perf_data_stacks.c)
 * as the profile, once the whole file is read: perf writes the build-ids
 * and event names that naming needs at its end. Each raw frame is named
 * once (perf_data_names.c), each weighed raw stack is added to the profile
 * under its root frame ("comm", "comm-PID" or "comm-PID/TID" as for perf
 * script text), each raw node's frames below its parent's node
 * (ember_profile_child, the model's public API), and weighs the values of
 * the event kept (perf_data_values.c). With -j 2 and more this is done
 * on every thread where it can be (perf_data_place_threads.c).
 * Invariants: a raw frame's names are resolved at most once per
 * JVM-ness in a placing; only the events kept are placed; with off-CPU
 * time shown the context switches' own samples are not, their
 * intervals' marks are.
 */
#include "read/perf/perf_data_place.h"
#include "read/perf/perf_names.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

/* The raw nodes from which placing goes on threads (place_on_threads):
 * below, starting them and merging their profiles costs more than the
 * placing saves (about 0.35 us a raw node). */
enum { PLACE_THREADS_MIN = 512 };

static int push_id(struct id_vec *v, uint32_t id)
{
    if (EMBER_VEC_RESERVE(v->v, v->cap, v->n + 1) < 0)
        return -ENOMEM;
    v->v[v->n++] = id;
    return 0;
}

/* The root frame, as perf script's reader makes it (ember_perf_intern_root
 * in perf_names.c): the process or thread (views spell "comm-PID/TID"; the
 * kernel's -1, a task it could not name, is an unknown id), else the
 * command alone (spaces as '_'). */
static int root_frame(struct reader *r, struct ember_profile *p, const struct root *rt,
                      uint32_t *frame, bool *java)
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
        return ember_profile_intern_frame(p, &fr, frame);
    }
    char name[256];
    size_t n = 0;
    for (size_t i = 0; i < rt->comm_len && n < sizeof(name); i++)
        name[n++] = rt->comm[i] == ' ' ? '_' : rt->comm[i];
    return ember_perf_intern_root(p, name, n, false, frame);
}

/* An off-CPU mark's frame, in the memo of either JVM-ness. */
static int mark_frame(struct reader *r, struct ember_profile *p, struct memo *m, uint32_t frame)
{
    const char *name = frame == r->mark[1] ? "[preempted]" : "[off-cpu]";
    struct ember_frame fr = {.name = name,
                             .name_len = strlen(name),
                             .module = EMBER_NO_MODULE,
                             .kind = EMBER_FRAME_OFFCPU};
    uint32_t id;
    int err = ember_profile_intern_frame(p, &fr, &id);
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

/* What naming needs of a raw frame: its address and map. */
static struct pd_frame_src frame_src(const struct reader *r, uint32_t frame)
{
    const struct raw_frame *rf = &r->raw.frames[frame];
    if (!rf->mapref)
        return (struct pd_frame_src){.dso = PD_NO_DSO, .ip = rf->ip, .pc = rf->ip};
    const struct pd_map *mp = &r->raw.maprefs[rf->mapref];
    return (struct pd_frame_src){mp->dso,   mp->start, mp->end,
                                 mp->pgoff, rf->ip,    rf->ip - mp->start + mp->pgoff};
}

static int named(struct pd_placing *pl, uint32_t frame, bool java, const uint32_t **out, size_t *n)
{
    struct reader *r = pl->r;
    struct memo *m = &pl->m;
    int j = java;
    if (!m->at[j]) {
        m->at[j] = malloc((r->raw.nframes ? r->raw.nframes : 1) * sizeof(int64_t));
        m->count[j] = malloc((r->raw.nframes ? r->raw.nframes : 1) * sizeof(uint32_t));
        if (!m->at[j] || !m->count[j])
            return -ENOMEM;
        for (size_t i = 0; i < r->raw.nframes; i++)
            m->at[j][i] = -1;
    }
    if (m->at[j][frame] < 0 && (frame == r->mark[0] || frame == r->mark[1])) {
        int err = mark_frame(r, pl->p, m, frame);
        if (err)
            return err;
    }
    if (m->at[j][frame] < 0) {
        struct pd_frame_src src = frame_src(r, frame);
        const uint32_t *f;
        size_t k;
        int err = pd_names_resolve(pl->nm, &src, java, &f, &k);
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
static int root_frames(struct pd_placing *pl, const bool *keep)
{
    const struct pd_raw *raw = &pl->r->raw;
    for (size_t i = 0; i < raw->nroots; i++) {
        pl->rframe[i] = NO_NODE;
        int err = keep[raw->roots[i].attr]
                      ? root_frame(pl->r, pl->p, &raw->roots[i], &pl->rframe[i], &pl->rjvm[i])
                      : 0;
        if (err)
            return err;
        pl->any_jvm |= pl->rjvm[i];
    }
    return 0;
}

int pd_placing_init(struct pd_placing *pl, struct reader *r, struct ember_profile *p,
                    struct pd_names *nm, const bool *keep, uint32_t *at)
{
    size_t nroots = r->raw.nroots ? r->raw.nroots : 1;
    *pl = (struct pd_placing){.r = r, .p = p, .nm = nm, .at = at};
    pl->rframe = malloc(nroots * sizeof(*pl->rframe));
    pl->rjvm = calloc(nroots, sizeof(*pl->rjvm));
    for (size_t i = 1; i < r->raw.nnodes; i++)
        at[i] = UNPLACED;
    return pl->rframe && pl->rjvm ? root_frames(pl, keep) : -ENOMEM;
}

void pd_placing_release(struct pd_placing *pl)
{
    memo_release(&pl->m);
    free(pl->chain.v);
    free(pl->rframe);
    free(pl->rjvm);
}

/* Raw node c's profile node, from its parent's: its raw frame named
 * (perhaps several frames with inlined calls, or none) below it, NO_NODE
 * when its event is not kept; java: its root's JVM-ness. */
static int place_one(struct pd_placing *pl, uint32_t c, bool java)
{
    const struct pd_raw *raw = &pl->r->raw;
    uint32_t parent = raw->parent[c], *at = pl->at;
    if (parent == 0) {
        uint32_t frame = pl->rframe[raw->key[c]];
        at[c] = NO_NODE;
        return frame == NO_NODE ? 0 : ember_profile_child(pl->p, EMBER_ROOT, frame, &at[c]);
    }
    at[c] = at[parent];
    if (at[c] == NO_NODE)
        return 0;
    const uint32_t *f;
    size_t k;
    int err = named(pl, raw->key[c], java, &f, &k);
    for (size_t j = 0; j < k && !err; j++)
        err = ember_profile_child(pl->p, at[c], f[j], &at[c]);
    return err;
}

/* Only i's ancestors not placed yet are named and placed, each below its
 * parent's node (a weighed node's stack no longer named and walked from
 * the root, a cost per frame of every weighed node). */
int pd_placing_place(struct pd_placing *pl, uint32_t i)
{
    const struct pd_raw *raw = &pl->r->raw;
    uint32_t c = i;
    pl->chain.n = 0;
    for (; pl->at[c] == UNPLACED; c = raw->parent[c]) {
        if (push_id(&pl->chain, c) < 0)
            return -ENOMEM;
        if (raw->parent[c] == 0)
            break;
    }
    while (pl->any_jvm && raw->parent[c] != 0)
        c = raw->parent[c];
    bool java = pl->any_jvm && pl->rjvm[raw->key[c]];
    int err = 0;
    while (pl->chain.n && !err)
        err = place_one(pl, pl->chain.v[--pl->chain.n], java);
    return err;
}

/* Whether raw node i's weight counts: with off-CPU time shown, the
 * intervals' marks and not the context switches' own samples; without,
 * never the marks. attr[i] is the event of i's root. */
bool pd_place_counted(const struct reader *r, size_t i, const uint32_t *attr)
{
    if (!attr)
        return !pd_raw_is_mark(r, i);
    return pd_raw_is_mark(r, i) || !pd_offcpu_is_switches(&r->f->attrs[attr[i]]);
}

/* Each raw node's event (nodes come after their parents). */
static uint32_t *node_attrs(const struct reader *r)
{
    uint32_t *attr = malloc(r->raw.nnodes * sizeof(*attr));
    for (size_t i = 1; attr && i < r->raw.nnodes; i++)
        attr[i] = r->raw.parent[i] == 0 ? r->raw.roots[r->raw.key[i]].attr : attr[r->raw.parent[i]];
    return attr;
}

/* How many dsos the raw frames are in (naming opens no other), counted
 * in framed[] (room for every dso, zeroed). */
static size_t dsos_framed(const struct reader *r, bool *framed)
{
    size_t n = 0;
    for (size_t f = 0; f < r->raw.nframes; f++) {
        uint32_t dso = frame_src(r, (uint32_t)f).dso;
        if (dso != PD_NO_DSO && !framed[dso]) {
            framed[dso] = true;
            n++;
        }
    }
    return n;
}

/* The dsos naming will open (of the frames of each weighed node in turn,
 * root first, those of its ancestors before; done[]: the nodes whose
 * frames have been), each once, in the order it opens them, into want.
 * The walk stops once it has every dso a frame is in: the nodes left
 * could add none (the fp recording's 8 files are all found in its first
 * 30 thousand of 253 thousand nodes; walking them all took the reading
 * thread 2-5 ms, with the workers idle). */
static int dsos_named(struct reader *r, const uint32_t *rframe, const uint32_t *attr,
                      struct id_vec *want)
{
    bool *done = calloc(r->raw.nnodes, sizeof(*done));
    bool *left = calloc(pd_tasks_dso_count(r->t) + 1, sizeof(*left)); /* framed, not found yet */
    struct id_vec up = {0};
    int err = done && left ? 0 : -ENOMEM;
    size_t nleft = err ? 0 : dsos_framed(r, left);
    for (size_t i = 1; i < r->raw.nnodes && !err && nleft; i++) {
        if (!r->raw.samples[i] || !pd_place_counted(r, i, attr) || done[i])
            continue;
        size_t j = i;
        for (up.n = 0; !err && !done[j] && r->raw.parent[j] != 0; j = r->raw.parent[j])
            err = push_id(&up, (uint32_t)j);
        bool kept = done[j] || rframe[r->raw.key[j]] != NO_NODE; /* else never named */
        while (up.n && !err) {
            uint32_t k = up.v[--up.n], dso = frame_src(r, r->raw.key[k]).dso;
            done[k] = true;
            if (kept && dso != PD_NO_DSO && left[dso]) { /* a frame's: framed */
                left[dso] = false;
                nleft--;
                err = push_id(want, dso);
            }
        }
    }
    free(done);
    free(left);
    free(up.v);
    return err;
}

/* With threads to spare: the files' symbols read on every thread; with
 * --inline, or for placing on threads (all), each file naming will open
 * opened in the order naming opens them (so what is said of them is said
 * in that order); with --inline, their DWARF then read on every thread. */
static int open_ahead(struct reader *r, struct pd_names *nm, const uint32_t *rframe,
                      const uint32_t *attr, bool all)
{
    struct id_vec want = {0};
    int err = dsos_named(r, rframe, attr, &want);
    if (!err)
        err = pd_names_read_ahead(nm, want.v, want.n, r->o->threads);
    for (size_t i = 0; i < want.n && !err && (all || r->po.inline_frames); i++)
        err = pd_names_open(nm, &(struct pd_frame_src){.dso = want.v[i]});
    if (!err && r->po.inline_frames)
        err = pd_names_prepare(nm, r->o->threads);
    free(want.v);
    return err;
}

/* Placing on threads takes several, weights added node by node (no
 * sequence of samples kept for a timeline, no times told), perf's
 * symbols (--inline's DWARF frames come from one symbolizer, which is one
 * thread's), and enough raw nodes. */
static bool place_on_threads(const struct reader *r)
{
    return r->o->threads > 1 && !r->keep_seq && !r->o->sample_time && !r->po.inline_frames &&
           r->raw.nnodes >= PLACE_THREADS_MIN;
}

/* Every weighed raw node's profile node (NO_NODE: an event not kept, or
 * a weight not counted), added as a stack through the model's public API;
 * or, on threads, every such node placed and weighed (*weighed: the raw
 * nodes are then gone, pd_raw_drop). */
static int place_nodes(struct reader *r, struct pd_names *nm, const bool *keep,
                       const struct pd_values *v, uint32_t *pnode, bool *weighed)
{
    uint32_t *attr = v->offcpu ? node_attrs(r) : NULL;
    if (v->offcpu && !attr)
        return -ENOMEM;
    /* every node's place is found in pnode, then kept for the nodes weighed */
    struct pd_placing pl;
    int err = pd_placing_init(&pl, r, r->p, nm, keep, pnode);
    bool par = place_on_threads(r);
    if (!err && r->o->threads > 1)
        err = open_ahead(r, nm, pl.rframe, attr, par);
    int alone = !err && par ? pd_place_threads(r, nm, keep, attr, v) : 1;
    err = err ? err : alone < 0 ? alone : 0;
    *weighed = alone == 0;
    for (size_t i = 1; i < r->raw.nnodes && !err && alone; i++)
        if (r->raw.samples[i] && pd_place_counted(r, i, attr))
            err = pd_placing_place(&pl, (uint32_t)i);
    for (size_t i = 1; i < r->raw.nnodes && alone; i++)
        if (!r->raw.samples[i] || !pd_place_counted(r, i, attr) || pnode[i] == UNPLACED)
            pnode[i] = NO_NODE; /* a node's place on the way to those weighed */
    pd_placing_release(&pl);
    free(attr);
    return err;
}

/* Raw node i's weight (samples, period) in node n of p: an interval's
 * nanoseconds as off-CPU (and wall) time, and one sample (the context
 * switch that began it), a sample's period as its own (and wall) time. */
static int add_weight_to(struct reader *r, struct ember_profile *p, size_t i, uint32_t n,
                         uint64_t samples, uint64_t period, const struct pd_values *v,
                         uint64_t *total_samples)
{
    bool mark = pd_raw_is_mark(r, i);
    int err = ember_profile_add(p, n, v->samples, (int64_t)samples);
    if (!err && mark)
        err = ember_profile_add(p, n, v->off, (int64_t)period);
    else if (!err && v->period != v->samples)
        err = ember_profile_add(p, n, v->period, (int64_t)period);
    if (!err && v->wall != PD_NO_VALUE)
        err = ember_profile_add(p, n, v->wall, (int64_t)period);
    *total_samples += samples; /* an interval too: a profile may be off-CPU time alone */
    return err;
}

int pd_place_weigh(struct reader *r, struct ember_profile *p, size_t i, uint32_t n,
                   const struct pd_values *v, uint64_t *total_samples)
{
    return add_weight_to(r, p, i, n, r->raw.samples[i], r->raw.period[i], v, total_samples);
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
                err = add_weight_to(r, r->p, r->seq[i].node, n, r->seq[i].samples, r->seq[i].period,
                                    v, &r->st->samples);
            if (r->o->sample_time)
                tell_times(r, &next, r->seq[i].samples, n != NO_NODE);
        }
        return err;
    }
    for (size_t i = 1; i < r->raw.nnodes && !err; i++)
        if (r->raw.samples[i] && pnode[i] != NO_NODE)
            err = pd_place_weigh(r, r->p, i, pnode[i], v, &r->st->samples);
    return err;
}

/* Whether some raw frame is the kernel's (its symbols are then read). */
static bool has_kernel_frames(const struct reader *r)
{
    for (size_t i = 0; i < r->raw.nframes; i++) {
        uint32_t ref = r->raw.frames[i].mapref;
        if (!ref || r->raw.maprefs[ref].dso == PD_NO_DSO)
            continue;
        enum pd_dso_kind k = pd_tasks_dso(r->t, r->raw.maprefs[ref].dso)->kind;
        if (k == PD_DSO_KERNEL || k == PD_DSO_MODULE)
            return true;
    }
    return false;
}

int pd_place_profile(struct reader *r)
{
    size_t na = r->f->nattrs ? r->f->nattrs : 1;
    bool *keep = calloc(na, sizeof(*keep));
    uint32_t *pnode = malloc(r->raw.nnodes * sizeof(*pnode));
    struct pd_names *nm = NULL;
    int err = keep && pnode ? 0 : -ENOMEM;
    struct pd_values v;
    if (!err)
        err = pd_values_set(r->p, r->f, r->seen, r->po.event_filter, pd_offcpu_count(r->oc) > 0,
                            r->st, keep, &v);
    if (!err)
        err = pd_names_new(&nm, r->p, r->f, r->t, r->o);
    if (!err && r->o->threads > 1 && has_kernel_frames(r))
        err = pd_names_read_kernel_ahead(nm, &r->kernel_early);
    pd_kernel_ahead_free(r->kernel_early); /* read for nothing: no kernel frame */
    r->kernel_early = NULL;
    bool weighed = false;
    if (!err)
        err = place_nodes(r, nm, keep, &v, pnode, &weighed);
    if (!err && !weighed)
        err = add_weights(r, pnode, &v);
    if (!err)
        err = pd_profile_meta(r->p, nm, r->t, &v);
    if (err == -ERANGE)
        err = ember_diag_set(r->d, err, r->f->name, 0, "sample weights overflow a 64-bit count");
    pd_names_free(nm);
    free(keep);
    free(pnode);
    return err;
}
