/*
 * perf_data_build.h - the profile builder of the perf.data reader: its
 * state, shared by the files that build (library-internal).
 *
 * perf_data.c        the format: the reader's callbacks, off-CPU time
 * perf_data_stacks.c samples -> raw stacks (a trie of (map, address) frames)
 * perf_data_raw.c    the trie, and the workers' overlays on it, with
 *                    perf_data_raw_spare.c, the trie grown ahead of merges
 * perf_data_jobs.c   samples decoded, unwound and built on several threads
 *                    (perf_data_records.c: their records handed over)
 * perf_data_place.c  raw stacks -> the profile: named, placed, weighed
 * perf_data_place_threads.c  the same on several threads, then merged
 *
 * Invariants: in the reader's trie a raw node's parent has a smaller
 * index (an overlay's may be the trie's); node 0 is the
 * root, level 1 nodes are sample roots (event, thread, name), deeper ones
 * raw frames; a raw frame is (map, address), a map (dso, start, end,
 * pgoff); the off-CPU marks are raw frames without a map at addresses no
 * call chain holds.
 */
#ifndef EMBER_READ_PERF_DATA_BUILD_H
#define EMBER_READ_PERF_DATA_BUILD_H

#include "read/perf/perf_data.h"
#include "read/perf/perf_reader.h"
#include "base/strmap.h"

#include <pthread.h>

enum { MAX_STACK = 127, NO_NODE = UINT32_MAX, ROOT_HOT = 16 };

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

/* The last stack added under a root: a sample shares most of its frames,
 * from the root, with the one before it in its thread, and only the
 * others cost a lookup. */
struct pd_prefix {
    uint32_t root;       /* whose (in a worker's cache of them) */
    uint64_t generation; /* of its maps, when last was added; UINT64_MAX: none */
    struct entry *last;  /* leaf first */
    uint32_t *path;      /* path[i]: the node of last[n - 1 - i] */
    size_t nlast, pcap, lcap;
};

/* A sample's root (event, thread, name). */
struct root {
    uint32_t attr, pid, tid;
    const char *comm; /* in the trie's arena */
    size_t comm_len;
    uint32_t node;          /* its raw node */
    struct pd_prefix stack; /* the reader's trie's */
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
 * was found in is the same. Zeroed, it is none. */
struct entry_memo {
    uint64_t ip, generation;
    uint32_t frame1, cpumode; /* frame1: the frame + 1 */
};

enum { ENTRY_MEMO = 4096 };

/* An id (of a node, frame, map or root) in a worker's overlay, not (yet)
 * in the reader's trie. */
#define PD_OVER 0x80000000u

/* Raw stacks (perf_data_raw.c): the trie, its frames and maps, and the
 * caches that make a sample cost little. The reader has one. At -j 2 and
 * more each thread building stacks has an overlay (base set): it finds
 * what the reader's trie has there, read only while the threads build,
 * and makes what it lacks in its own, numbered from PD_OVER; the overlays
 * are merged into the reader's trie in the samples' order (pd_raw_merge)
 * and emptied after each batch. */
struct pd_raw {
    const struct pd_raw *base; /* an overlay's: the reader's trie */
    struct pd_tasks *t;        /* read only while stacks are built */
    struct pd_leaf *leaf;      /* fp call graphs' skipped callers (made where first asked) */
    bool dwarf;                /* samples whose user frames only unwinding gives */

    /* node 0 is the root (the reader's); level 1 keys are roots, deeper
     * ones raw frames */
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
    /* roots found lately, by a hash of their thread: id + 1, 0 empty */
    uint32_t root_hot[ROOT_HOT];
    /* an overlay's last stacks, by a hash of their root */
    struct pd_prefix prefix_hot[ROOT_HOT];

    uint32_t *slots; /* an overlay's: its tables' slots, found to empty them */
    size_t scap;
    /* ENTRY_MEMO of them (96 KB), made at the first sample built: an
     * overlay's on its worker, not all on the caller's thread as it makes
     * the overlays (calloc clears them: the 9 of -j 4 were 219 page faults
     * there, 0.9 ms of its time in profiles, the workers idle) */
    struct entry_memo *memo;
    struct entry *chain; /* the current sample's frames, leaf first */
    size_t nchain, ccap;
};

struct reader {
    struct ember_profile *p;
    const struct ember_read_opts *o;
    struct ember_perf_opts po; /* the options, read once */
    struct ember_read_stats *st;
    struct ember_diag *d;
    struct ember_input *in;
    struct pd_reader *rd;    /* the file's records, to the callbacks of perf_data.c */
    const struct pd_file *f; /* the reader's */
    struct pd_tasks *t;
    struct pd_unwind *uw;                 /* DWARF call graphs */
    struct pd_jobs *jobs;                 /* samples built on several threads (-j 2+)... */
    bool records_jobs;                    /* ...and decoded there (pd_jobs_record) */
    struct pd_kernel_ahead *kernel_early; /* /proc/kallsyms read from the data's start (-j 2+) */
    pthread_t debuginfod;                 /* libdwfl's debuginfod client loaded (-j 2+)... */
    bool debuginfod_loading;              /* ...where that thread was started */
    struct pd_offcpu *oc;                 /* context switches: off-CPU intervals */
    uint32_t mark[2]; /* raw frames: blocked, preempted; UINT32_MAX until used */
    uint64_t unwound[MAX_STACK];
    struct pd_raw raw;

    struct pd_seen *seen; /* per event */
    size_t seencap;
    uint64_t nseen, lost, unknown_ids;

    bool keep_seq;
    struct seq_entry *seq;
    size_t nseq, seqcap;
    struct sample_time *times; /* one per weight added to seq, for o->sample_time */
    size_t ntimes, tcap;
};

/* ---- raw stacks (perf_data_raw.c) ------------------------------------- */

/* An empty trie reading the maps of t: the reader's (base NULL: node 0,
 * the root, only), or an overlay on base. 0 or -ENOMEM. */
int pd_raw_init(struct pd_raw *raw, struct pd_tasks *t, const struct pd_raw *base);
void pd_raw_release(struct pd_raw *raw);
/* Its nodes, and its tables that find a node or frame, freed once the
 * nodes are placed and weighed (nnodes stays, its frames and maps too). */
void pd_raw_drop(struct pd_raw *raw);
/* An overlay emptied, once merged. 0 or -ENOMEM. */
int pd_raw_reset(struct pd_raw *raw);
/* The raw frame (mapref, ip), numbered on first sight (mapref 0: no map). */
int pd_raw_frame(struct pd_raw *raw, uint32_t mapref, uint64_t ip, uint32_t *id);
/* The child of parent under key, made when new. */
int pd_raw_child(struct pd_raw *raw, uint32_t parent, uint32_t key, uint32_t *node);
/* The root of (event, thread, command), made with its node when new. */
int pd_raw_root(struct pd_raw *raw, uint32_t attr, uint32_t pid, uint32_t tid, const char *comm,
                size_t len, uint32_t *id);
const struct root *pd_raw_root_at(const struct pd_raw *raw, uint32_t id);
/* The trie's number of a map: maps are numbered by all they say. */
int pd_raw_mapref(struct pd_raw *raw, struct pd_map *m, uint32_t *ref);

/* How many maps, frames and nodes a trie holds. */
struct pd_raw_count {
    size_t maps, frames, nodes;
};
static inline struct pd_raw_count pd_raw_count(const struct pd_raw *raw)
{
    return (struct pd_raw_count){raw->nmaprefs, raw->nframes, raw->nnodes};
}

/* How much of an overlay is in the reader's trie, and where: its maps',
 * frames' and nodes' numbers there. */
struct pd_raw_merge {
    uint32_t *maps, *frames, *nodes;
    size_t nmaps, nframes, nnodes; /* merged so far */
    size_t mcap, fcap, ncap;
};
/* What the overlay src made since the last merge, up to upto (what it
 * held after a piece of the samples), added to dst in src's order: one
 * dst has now was met in an earlier piece, one it has not is met first in
 * this one, where one thread would make it. */
int pd_raw_merge(struct pd_raw *dst, const struct pd_raw *src, struct pd_raw_merge *m,
                 struct pd_raw_count upto);
/* A node of the overlay merged (or of dst itself), as dst numbers it. */
static inline uint32_t pd_raw_merged(const struct pd_raw_merge *m, uint32_t node)
{
    return node & PD_OVER ? m->nodes[node & ~PD_OVER] : node;
}
/* m emptied with its overlay. */
static inline void pd_raw_merge_reset(struct pd_raw_merge *m)
{
    m->nmaps = m->nframes = m->nnodes = 0;
}
void pd_raw_merge_release(struct pd_raw_merge *m);

/* The reader's trie's node arrays and child table grown ahead: made on a
 * worker while a batch is built (the trie does not change then), taken
 * by the caller before the batch's merge, so that merging does not grow
 * them on the caller's thread (copying the nodes and rehashing the
 * children, and first touching the new pages, which cost more than the
 * merge's own work on an fp read). Not the frames': planned ahead as the
 * nodes are, their table doubled early (where the read would have ended
 * before needing it) and cost fp -j 2 4-5 MB of peak RSS, for 4-5 ms. */
struct pd_raw_spare {
    size_t nnodes;          /* the trie's, planned for; 0: no plan */
    size_t ncap;            /* the node arrays' to be */
    uint32_t mask;          /* the child table's to be (as planned: unchanged) */
    uint32_t *parent, *key; /* made: the node arrays, at ncap */
    uint64_t *samples, *period;
    struct ember_u64slot *slots; /* made: the child table, mask + 1 slots */
};
/* Room in raw for `frames` frames and `nodes` nodes more, made now, so
 * that adding them grows no table (perf_data_raw.c): 0 or -ENOMEM. */
int pd_raw_room(struct pd_raw *raw, size_t frames, size_t nodes);
/* Planned on the caller's thread, if merging `more` nodes would grow raw. */
void pd_raw_spare_plan(const struct pd_raw *raw, size_t more, struct pd_raw_spare *sp);
/* Made as planned, on any thread, while raw does not change (what finds
 * no memory is left: the merge grows it as it would have). */
void pd_raw_spare_make(const struct pd_raw *raw, struct pd_raw_spare *sp);
/* Taken into raw where raw is as planned for, then sp emptied. */
void pd_raw_spare_take(struct pd_raw *raw, struct pd_raw_spare *sp);
void pd_raw_spare_release(struct pd_raw_spare *sp);

/* ---- samples as raw stacks (perf_data_stacks.c) -------------------------- */

/* One weight (a sample, or an interval) of node. */
int pd_raw_add_weight(struct reader *r, uint32_t node, uint64_t period);
/* The time of the weight just added, when the caller wants the times of
 * the sequence (one per pd_raw_add_weight, in its order). */
int pd_raw_note_time(struct reader *r, uint32_t pid, uint32_t tid, uint64_t time);
/* A sample of the file's event attrs[ai]: its stack, weighed. */
int pd_raw_sample(struct reader *r, int ai, const struct pd_sample *s);

/* pd_raw_sample in three steps, for samples built on several threads
 * (perf_data_jobs.c): first its thread, in the order of the samples
 * (1; 0: the caller's filter drops it); then its stack's node in a trie
 * or an overlay, given the user frames unwound from it, ips[0, n), on any
 * thread, each trie's samples in their order; then its weight, in the
 * reader's trie, in the samples' order. */
struct pd_sample_thread {
    uint32_t process;
    const char *comm;
    size_t comm_len;
};
int pd_raw_sample_thread(struct reader *r, int ai, const struct pd_sample *s,
                         struct pd_sample_thread *th);
/* pd_raw_sample_thread's count of a sample of event ai, in order. */
void pd_raw_seen(struct reader *r, int ai, bool weighed);
int pd_raw_stack(struct pd_raw *raw, int ai, const struct pd_sample *s,
                 const struct pd_sample_thread *th, const uint64_t *ips, size_t n, uint32_t *node);
int pd_raw_weigh(struct reader *r, int ai, const struct pd_sample *s, uint32_t node);

static inline uint64_t pd_sample_weight(const struct pd_sample *s)
{
    return s->has_period && s->period > 0 ? s->period : 1;
}

/* perf's DWARF call graphs unwind a sample with user registers and a copy
 * of its stack. One whose stack the kernel could not copy (0 bytes: a
 * fault in a fresh fork) has no user frame at all in perf script, not
 * even its address (libunwind cannot start): the same here. */
static inline bool pd_sample_unwinds(const struct pd_sample *s)
{
    return s->regs && s->stack && s->stack_size;
}

/* ---- samples built on several threads (perf_data_jobs.c) ---------------- */

struct pd_jobs;
/* threads: the caller's and threads - 1 workers. 0 or -ENOMEM. */
int pd_jobs_new(struct pd_jobs **out, struct reader *r, unsigned threads);
void pd_jobs_free(struct pd_jobs *j);
/* A sample, as pd_raw_sample takes it: kept in the batch, its record held
 * by the reader until it is built (or at once, where it cannot be held). */
int pd_jobs_sample(struct pd_jobs *j, const struct pd_record *rec, int ai,
                   const struct pd_sample *s);
/* A sample's record, undecoded (the reader's sample_record): kept in the
 * batch, held, and decoded, unwound, built and weighed there
 * (perf_data_records.c). 1 (taken) or an error. Only where
 * pd_jobs_records_start said yes, once the file's events are known: not a
 * pipe, no context switch event, no sample's place in the sequence kept,
 * no filter of the caller's (those samples go to pd_jobs_sample). */
int pd_jobs_record(struct pd_jobs *j, const struct pd_record *rec);
/* The same of a run of samples' records the reader hands over held
 * (sample_records): their holds are the batch's. 1 or an error. */
int pd_jobs_records(struct pd_jobs *j, const struct pd_held_record *recs, size_t n);
/* Whether records can be taken, once the file's events are known; if so,
 * the batches made ready for them (false also where they cannot be). */
bool pd_jobs_records_start(struct pd_jobs *j);
/* The batch's samples unwound and built, in order (j NULL: none). */
int pd_jobs_drain(struct pd_jobs *j);
/* The last batch drained, and what the threads weighed of records added
 * to the reader's (j NULL: none). */
int pd_jobs_finish(struct pd_jobs *j);

/* Is raw node i an off-CPU mark (a leaf under the stack of a switch)? */
static inline bool pd_raw_is_mark(const struct reader *r, size_t node)
{
    const struct pd_raw *raw = &r->raw;
    return raw->parent[node] != 0 && (raw->key[node] == r->mark[0] || raw->key[node] == r->mark[1]);
}

/* ---- the profile (perf_data_place.c) ------------------------------------ */

/* The raw stacks named and added to the profile, with the values of the
 * event kept, and the profile's meta. */
int pd_place_profile(struct reader *r);

#endif
