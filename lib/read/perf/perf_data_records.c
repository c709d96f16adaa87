/*
 * perf_data_records.c - samples decoded, unwound, built and weighed on
 * several threads (-j 2 and more, pd_jobs_record): an fp sample's stack
 * costs about 50 ns, less than decoding it on the reading thread and
 * handing it over did, so the reading thread hands over each sample's
 * record as the reader read it (the reader holds it; where it sorts its
 * rounds on threads, runs of them at once, pd_jobs_records, their holds
 * passed on) and does nothing more of it; a DWARF sample's too, in smaller
 * batches (its 8 KB stay in the caches).
 *
 * A batch of records is cut into pieces (perf_data_jobs.c), and whoever
 * takes a piece decodes each record, finds its thread (read only: one it
 * does not know, or whose pid it would learn, stops it), walks its user
 * stack by the compiled CFI rows (a walk only libdwfl can do stops it),
 * builds its stack in its overlay and weighs it in its tally; the caller
 * finishes what a builder left, in order, as one thread does (an error is
 * then the one one thread meets, libdwfl's sessions see the samples one
 * thread shows them), merges the overlays piece by piece in order, and
 * counts what order decides: which event came first. Sums do not depend
 * on order, so the tallies are added up at the end (pd_jobs_finish).
 *
 * A full batch flies: the workers build it while the reading thread fills
 * the next (two buffers, swapped), and it lands (the reading thread takes
 * the pieces left, then merges them) when the next is full, or at a drain.
 * So handing records over (ordering them, copying them into the batch:
 * about 20 ns a record on one thread) costs the read time only where it
 * outlasts the building. A drain (a record that changes threads or maps,
 * or the file's events: pd_reader_tool.file_changes, the data's end)
 * lands the one flying, then builds the one filled at once.
 * Where every piece of the batch landing was built whole, worker 1 merges
 * it once the next is launched, while the others build that one in their
 * other overlays (pd_jobs_behind), and the reading thread fills the next:
 * the merge only adds to the reader's trie, given room first, so the
 * workers may look it up meanwhile, and the reading thread leaves the
 * trie alone till that batch lands.
 * Invariants: only where no event is a context switch, the file is not a
 * pipe, no sample's place in the sequence is kept and the caller does not
 * filter samples (pd_jobs_records_start); the reading thread writes the batch, the others
 * only read it; at most one batch flies, and nothing the workers read
 * (the tasks, the file's events) changes while it does, nor the reader's
 * trie but by the merge behind; the profile is one thread's, byte for
 * byte. */
#include "read/perf/perf_data_jobs_impl.h"

#include <errno.h>
#include <stdlib.h>

/* ---- tallies ------------------------------------------------------------ */

/* Room for want elements of size in *pp (*n of them now, *cap
 * allocated), the new ones zeroed. */
static int grow_zeroed(void *pp, size_t *n, size_t *cap, size_t want, size_t size)
{
    if (want <= *n)
        return 0;
    if (want > *cap) {
        size_t c = *cap ? *cap : 16;
        while (c < want)
            c *= 2;
        void *p = realloc(*(void **)pp, c * size);
        if (!p)
            return -ENOMEM;
        *(void **)pp = p;
        *cap = c;
    }
    memset(*(char **)pp + *n * size, 0, (want - *n) * size);
    *n = want;
    return 0;
}

/* Room for the weights of the reader's first nodes nodes (tally grows it
 * for later ones) and the file's events. */
static int tally_ready(struct tally *t, const struct pd_jobs *j, size_t nodes)
{
    int err = grow_zeroed(&t->node, &t->nnodes, &t->nodecap, nodes, sizeof(*t->node));
    return err ? err
               : grow_zeroed(&t->event, &t->nevents, &t->eventcap, j->r->f->nattrs,
                             sizeof(*t->event));
}

/* A sample's weight: on node (the reader's, or the overlay's own), its
 * event and (unless pd_tasks_thread counted it) its process. */
static int tally(struct builder *b, uint32_t node, uint32_t process, int ai,
                 const struct pd_sample *s, bool count_process)
{
    struct tally *t = &b->tally;
    uint64_t period = pd_sample_weight(s);
    if (count_process && process != PD_NO_PROCESS) {
        int err = grow_zeroed(&t->process, &t->nprocess, &t->processcap, (size_t)process + 1,
                              sizeof(*t->process));
        if (err)
            return err;
        t->process[process]++;
    }
    t->event[ai].samples++;
    t->event[ai].weighed |= s->has_period && s->period > 0;
    if (node & PD_OVER) {
        pd_overlay(b)->samples[node & ~PD_OVER]++;
        pd_overlay(b)->period[node & ~PD_OVER] += period;
        return 0;
    }
    /* a node made since the piece began: by a merge behind, or by the
     * merge of the pieces before the one the caller finishes */
    if (node >= t->nnodes &&
        grow_zeroed(&t->node, &t->nnodes, &t->nodecap, (size_t)node + 1, sizeof(*t->node)) < 0)
        return -ENOMEM;
    t->node[node].samples++;
    t->node[node].period += period;
    return 0;
}

void pd_records_tally_release(struct tally *t)
{
    free(t->node);
    free(t->process);
    free(t->event);
}

/* The record as the reader handed it. */
static struct pd_record record_of(const struct pd_held_record *jb)
{
    return (struct pd_record){.data = jb->data,
                              .type = pd_u32(jb->data),
                              .size = pd_u16(jb->data + 6),
                              .misc = pd_u16(jb->data + 4),
                              .offset = jb->offset};
}

/* ---- a piece ----------------------------------------------------------- */

/* The most pieces a batch is cut into (perf_data_jobs.c's cut_pieces). */
static size_t pieces_max(const struct pd_jobs *j)
{
    return (size_t)j->nb * PIECES_PER_THREAD + 1;
}

void pd_records_weigh(struct pd_jobs *j, struct piece *pc)
{
    struct reader *r = j->r;
    for (size_t i = 0; i < pc->nfirst; i++) {
        if (!r->seen[pc->first[i]].first)
            r->seen[pc->first[i]].first = ++r->nseen;
        pc->seen[pc->first[i]] = 0;
    }
    pc->nfirst = 0;
    r->unknown_ids += pc->unknown;
    r->st->skipped += pc->unknown;
    pc->unknown = 0;
}

/* Event ai's sample in the piece: the events in the order they first
 * come. */
static void first_seen(struct piece *pc, int ai)
{
    if (!pc->seen[ai]) {
        pc->seen[ai] = 1;
        pc->first[pc->nfirst++] = (uint32_t)ai;
    }
}

/* A record's stack in b's overlay (a DWARF one walked by the compiled
 * rows), weighed in b's tally, on any thread: 1, or 0 where the caller
 * must do it (a record it cannot decode, a thread it does not know, a walk
 * only libdwfl can do, an error): the caller then meets what one thread
 * meets. */
static int build(struct pd_jobs *j, struct builder *b, struct piece *pc,
                 const struct pd_held_record *jb)
{
    const struct reader *r = j->r;
    struct pd_sample s;
    struct pd_sample_thread th;
    struct ember_diag d;
    uint32_t node;
    struct pd_record rec = record_of(jb);
    int ai = pd_file_attr_of(r->f, &rec);
    if (ai < 0) {
        pc->unknown++;
        return 1;
    }
    if (pd_file_parse_sample(r->f, &r->f->attrs[ai], &rec, &s, &d) < 0)
        return 0;
    uint64_t ips[MAX_STACK];
    size_t n = 0;
    if (!pd_tasks_thread_known(r->t, s.pid, s.tid, &th.process, &th.comm, &th.comm_len) ||
        (pd_sample_unwinds(&s) && /* 1: libdwfl's, in order, on the caller's unwinder */
         pd_unwind_sample_fast(b->uw, th.process, &s, ips, MAX_STACK, &n) != 0) ||
        pd_raw_stack(pd_overlay(b), ai, &s, &th, ips, n, &node) < 0 ||
        tally(b, node, th.process, ai, &s, true) < 0)
        return 0;
    first_seen(pc, ai);
    return 1;
}

/* How many of the piece's records are pinned in each chunk, counted here
 * on the thread that takes it, not on the reading thread one by one as it
 * lets them go (let_go). */
static void count_holds(const struct pd_jobs *j, struct piece *pc)
{
    pc->nholds = pc->copies = 0;
    for (size_t i = pc->from; i < pc->to; i++) {
        uint64_t hold = j->recs[i].hold;
        size_t k = 0;
        if (hold == RECORD_COPIED) { /* about one a chunk: the one cut at its end */
            pc->copies++;
            continue;
        }
        while (k < pc->nholds && pc->holds[k].hold != hold)
            k++;
        if (k == pc->nholds) {
            if (k == PIECE_HOLDS) {
                pc->nholds = PIECE_HOLDS + 1; /* one by one */
                return;
            }
            pc->holds[pc->nholds++].hold = hold;
            pc->holds[k].n = 0;
        }
        pc->holds[k].n++;
    }
}

void pd_records_take(struct pd_jobs *j, struct builder *b, struct piece *pc)
{
    count_holds(j, pc);
    size_t k = pieces_max(j) * j->set + (size_t)(pc - j->pieces[j->set]);
    size_t nevents = j->r->f->nattrs;
    pc->builder = (unsigned)(b - j->b);
    pc->built = pc->from;
    pc->first = j->firsts + k * nevents;
    pc->seen = j->seens + k * nevents;
    pc->nfirst = 0;
    pc->unknown = 0;
    if (!b->stopped && tally_ready(&b->tally, j, j->tally_nodes) < 0)
        b->stopped = true;
    for (size_t i = pc->from; i < pc->to && !b->stopped; i++) {
        if (!build(j, b, pc, &j->recs[i]))
            b->stopped = true; /* the caller's, from here */
        else
            pc->built = i + 1;
    }
    pc->n = pd_raw_count(pd_overlay(b));
}

/* What a builder left of a piece, on the caller's thread, as pd_raw_sample
 * does it (the tasks may change), in the piece's overlay. */
static int finish(struct pd_jobs *j, struct builder *b, struct piece *pc,
                  const struct pd_held_record *jb)
{
    struct reader *r = j->r;
    struct pd_sample s;
    struct pd_sample_thread th;
    size_t n = 0;
    uint32_t node;
    struct pd_record rec = record_of(jb);
    int ai = pd_file_attr_of(r->f, &rec);
    if (ai < 0) {
        pc->unknown++;
        return 0;
    }
    int err = pd_file_parse_sample(r->f, &r->f->attrs[ai], &rec, &s, r->d);
    if (!err)
        err = pd_tasks_thread(r->t, s.pid, s.tid, &th.process, &th.comm, &th.comm_len);
    if (!err && pd_sample_unwinds(&s))
        err = pd_unwind_sample(r->uw, th.process, &s, r->unwound, MAX_STACK, &n);
    if (!err)
        err = pd_raw_stack(pd_overlay(b), ai, &s, &th, r->unwound, n, &node);
    if (err)
        return err;
    err = tally(b, node, th.process, ai, &s, false); /* pd_tasks_thread counted it */
    if (!err)
        first_seen(pc, ai);
    return err;
}

int pd_records_finish(struct pd_jobs *j, struct piece *pc)
{
    struct builder *b = &j->b[pc->builder];
    if (pc->built == pc->to) /* its overlay holds later pieces' too */
        return 0;
    int err = tally_ready(&b->tally, j, j->r->raw.nnodes);
    for (size_t i = pc->built; i < pc->to && !err; i++)
        err = finish(j, b, pc, &j->recs[i]);
    pc->n = pd_raw_count(pd_overlay(b));
    return err;
}

void pd_records_overlay_weights(struct pd_jobs *j, struct builder *b, unsigned set)
{
    struct pd_raw *dst = &j->r->raw;
    const struct pd_raw_merge *m = &b->m[set];
    for (size_t i = 0; i < m->nnodes; i++) {
        uint32_t node = m->nodes[i];
        dst->samples[node] += b->raw[set].samples[i];
        dst->period[node] += b->raw[set].period[i];
    }
}

/* The copies among n records of a batch freed. */
static void free_copies(const struct pd_held_record *recs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (recs[i].hold == RECORD_COPIED)
            free((void *)recs[i].data);
}

/* n records let go one by one: their holds (runs in one chunk at once)
 * and their copies. */
static void let_go_each(struct pd_jobs *j, const struct pd_held_record *recs, size_t n)
{
    for (size_t i = 0, k; i < n; i = k) {
        uint64_t hold = recs[i].hold;
        for (k = i + 1; k < n && recs[k].hold == hold && hold != RECORD_COPIED; k++)
            ;
        if (hold == RECORD_COPIED)
            free((void *)recs[i].data);
        else
            pd_reader_let_go(j->r->rd, hold, k - i);
    }
}

/* The n records of a batch built in set let go: a chunk at a time as its
 * pieces' takers counted them (count_holds), else one by one. Every batch
 * with records was cut into that set's pieces when launched and waited
 * for, so each piece was taken and counted. A call of its own: the read's
 * profile tells it from launching a batch (bench/perfdata_phases.py). */
__attribute__((noinline)) static void let_go(struct pd_jobs *j, const struct pd_held_record *recs,
                                             size_t n, unsigned set)
{
    for (size_t k = 0; n > 0 && k < j->npieces[set]; k++) {
        const struct piece *pc = &j->pieces[set][k];
        if (pc->nholds > PIECE_HOLDS) {
            let_go_each(j, recs + pc->from, pc->to - pc->from);
            continue;
        }
        for (size_t h = 0; h < pc->nholds; h++)
            pd_reader_let_go(j->r->rd, pc->holds[h].hold, pc->holds[h].n);
        if (pc->copies)
            free_copies(recs + pc->from, pc->to - pc->from);
    }
}

/* The error of a batch, the first one's kept. */
static int failed(struct pd_jobs *j, int err)
{
    if (err && !j->err)
        j->err = err;
    return j->err;
}

/* The batch flying, if any, landed (its records still held): 0 or the
 * error met. */
static int land(struct pd_jobs *j)
{
    if (!j->flying)
        return j->err;
    j->flying = false;
    return failed(j, pd_jobs_land(j));
}

/* The batch filled becomes the one built, the one built (landed) the one
 * to fill. */
static void swap(struct pd_jobs *j)
{
    struct pd_held_record *t = j->recs;
    j->recs = j->fill;
    j->nrecs = j->nfill;
    j->fill = t;
    j->nfill = 0;
}

int pd_records_drain(struct pd_jobs *j)
{
    int err = land(j);
    let_go(j, j->recs, j->nrecs, j->set);
    j->nrecs = 0;
    if (err || j->nfill == 0)
        return err;
    swap(j);
    err = pd_jobs_run(j);
    let_go(j, j->recs, j->nrecs, j->set);
    j->nrecs = 0;
    return failed(j, err);
}

/* The batch filled launched; the landed one's records (in recs till
 * then) let go while the workers build it. */
static void launch_filled(struct pd_jobs *j)
{
    size_t landed = j->nrecs;
    swap(j);
    pd_jobs_launch(j);
    j->flying = true;
    let_go(j, j->fill, landed, j->set ^ 1);
}

/* A full batch to the workers. The one they build is landed first:
 * merged by worker 1 while the others build the next where it can be
 * (pd_jobs_behind), else here before they are woken. The landed one's
 * records are let go while they build, and the reading thread fills the
 * next meanwhile. Without workers, built here. */
static int send(struct pd_jobs *j)
{
    if (j->nb == 1)
        return pd_records_drain(j);
    if (j->flying && !j->err) {
        j->flying = false;
        if (failed(j, pd_jobs_built(j)))
            return j->err; /* its records let go at the next drain */
        if (pd_jobs_behind(j)) {
            launch_filled(j); /* worker 1 merges the one built first */
            return 0;
        }
        if (failed(j, pd_jobs_merge_built(j)))
            return j->err;
    }
    int err = land(j);
    if (err)
        return err; /* its records let go at the next drain */
    launch_filled(j);
    return 0;
}

void pd_records_free(struct pd_jobs *j)
{
    free_copies(j->recs, j->nrecs);
    free_copies(j->fill, j->nfill);
    free(j->recs);
    free(j->fill);
}

/* ---- the reader's side --------------------------------------------------- */

/* DWARF samples' records: a batch that keeps them in the caches, as many
 * for each thread as two share at -j 2, so that each batch's wake-up and
 * landing (tens of microseconds) is paid for as well on many threads. */
static size_t dwarf_batch(unsigned threads)
{
    size_t n = (size_t)JOBS_WALKS * (threads > 2 ? threads : 2) / 2;
    return n < JOBS_RECORDS ? n : JOBS_RECORDS;
}

bool pd_jobs_records_start(struct pd_jobs *j)
{
    const struct reader *r = j ? j->r : NULL;
    /* a pipe's events may come later; the caller's filter is asked in
     * order (ember_read_opts.keep_sample) */
    if (!r || r->f->pipe || r->keep_seq || r->o->keep_sample)
        return false;
    size_t npieces = 2 * pieces_max(j), nevents = r->f->nattrs;
    free(j->firsts);
    free(j->seens);
    j->firsts = malloc(npieces * nevents * sizeof(*j->firsts));
    j->seens = calloc(npieces * nevents, sizeof(*j->seens));
    if (!j->firsts || !j->seens) /* the other path, then */
        return false;
    j->max_recs = JOBS_RECORDS;
    for (size_t i = 0; i < r->f->nattrs; i++) {
        if (pd_offcpu_is_switches(&r->f->attrs[i]))
            return false;
        if (r->f->attrs[i].sample_type & PERF_SAMPLE_REGS_USER)
            j->max_recs = dwarf_batch(j->nb);
    }
    return true;
}

int pd_jobs_record(struct pd_jobs *j, const struct pd_record *rec)
{
    struct pd_held_record *jb = &j->fill[j->nfill];
    jb->data = rec->data;
    jb->offset = rec->offset;
    if (!pd_reader_hold(j->r->rd, rec, &jb->hold)) { /* rare: it straddled chunks */
        uint8_t *copy = malloc(rec->size);
        if (!copy)
            return -ENOMEM;
        jb->data = memcpy(copy, rec->data, rec->size);
        jb->hold = RECORD_COPIED;
    }
    int err = ++j->nfill == j->max_recs ? send(j) : 0;
    return err ? err : 1;
}

int pd_jobs_records(struct pd_jobs *j, const struct pd_held_record *recs, size_t n)
{
    while (n > 0) {
        size_t take = j->max_recs - j->nfill < n ? j->max_recs - j->nfill : n;
        memcpy(j->fill + j->nfill, recs, take * sizeof(*recs));
        j->nfill += take;
        recs += take;
        n -= take;
        int err = j->nfill == j->max_recs ? send(j) : 0;
        if (err)
            return err;
    }
    return 1;
}

/* The threads' tallies added to the reader's: its nodes' weights, its
 * events' samples, its processes'. */
static void add_tally(struct reader *r, struct tally *t)
{
    for (size_t i = 0; i < t->nnodes; i++) {
        r->raw.samples[i] += t->node[i].samples;
        r->raw.period[i] += t->node[i].period;
    }
    for (size_t i = 0; i < t->nprocess; i++)
        pd_tasks_count_samples(r->t, (uint32_t)i, t->process[i]);
    for (size_t i = 0; i < t->nevents; i++) {
        r->seen[i].samples += t->event[i].samples;
        r->seen[i].weighed |= t->event[i].weighed;
    }
    pd_records_tally_release(t);
    *t = (struct tally){0};
}

int pd_jobs_finish(struct pd_jobs *j)
{
    int err = pd_jobs_drain(j);
    for (unsigned i = 0; j && i < j->nb; i++)
        add_tally(j->r, &j->b[i].tally);
    return err;
}
