/*
 * profile_impl.h - the profile's representation, private to lib/model:
 * every reader, writer, renderer and transform elsewhere goes through
 * include/ember/model.h (the style/model-private test checks it).
 *
 * Invariants:
 * - nodes[0] is the root; a node's parent always has a smaller index, so a
 *   scan in index order visits parents before children;
 * - the child table maps (parent, frame) to the node; a slot holds all three,
 *   node 0 = empty (the root is nobody's child). Slots come in buckets of one
 *   cache line, filled in order; a child goes to the first bucket with room
 *   from its home bucket on, and the full buckets it passed are marked
 *   'over', so a lookup ends at a free slot or at a bucket not marked;
 * - a node's slot is found from its path hash, child_hash[n], a hash of the
 *   frames from the root down to it: child_hash[child] =
 *   ember_child_step(child_hash[parent], frame). The hash of a whole stack's
 *   nodes is known from its frames alone, before any node is found, so a
 *   reader can fetch every slot of a stack at once instead of one cache
 *   miss after another (ember_profile_child_path);
 * - the frame table maps frame records to ids; slots hold id + 1, 0 = empty;
 *   a frame of a name alone has a zero loc and an odd tag, a frame with more
 *   an even one, so that the name-only lookup (the hot path) never stops at
 *   a detailed frame;
 * - self[v][n] is node n's weight in value v, scaled by 10^decimals, for
 *   v < nvalues (the other arrays are NULL);
 * - selected < nvalues; a differential profile has exactly two values.
 */
#ifndef EMBER_MODEL_PROFILE_IMPL_H
#define EMBER_MODEL_PROFILE_IMPL_H

#include "ember/model.h"
#include "base/arena.h"
#include "base/hash.h"
#include "base/strmap.h"

#include <errno.h>
#include <string.h>

/* What a frame knows beyond its name (all zero for a name alone). */
struct ember_frame_loc {
    const char *file; /* interned in files: equal files, equal pointers */
    uint32_t file_len;
    uint32_t line, column, start_line, module;
    uint64_t address;
    uint8_t kind;
    bool has_address;
    bool place_in_name;      /* views of names spell "name:file:line" */
    bool kind_in_name;       /* views of names spell the kind: "name_[k]" */
    int64_t pid, tid;        /* PROCESS and THREAD frames; -1: unknown */
    const char *system_name; /* interned in files as file is; NULL: the name */
    uint32_t system_name_len;
    bool folded;
    bool detailed;
};

struct ember_frames {
    struct ember_arena names;
    const char **str;
    uint32_t *len;
    uint32_t *tag; /* high half of each frame's hash: cheap rejection */
    struct ember_frame_loc *loc;
    uint32_t count;
    size_t cap;
    uint32_t *slots;
    uint32_t mask;
    bool detailed;             /* some frame has a loc */
    struct ember_strmap files; /* file names and system names, each stored once */
};

struct ember_node {
    uint32_t frame;
    uint32_t parent;
};

struct ember_child_slot {
    uint32_t parent, frame;
    uint32_t node; /* 0: empty */
};

enum { EMBER_CHILD_BUCKET = 5 };

struct ember_child_bucket {
    struct ember_child_slot slot[EMBER_CHILD_BUCKET];
    uint32_t over; /* a child whose home is here or before went further */
};

/* The views of names a profile can be (ember_profile_names and friends):
 * its frames are names alone, spelled for folded stacks (';' as ':') or as
 * read. */
enum { EMBER_VIEW_NONE, EMBER_VIEW_FOLDED, EMBER_VIEW_NAMES };

struct ember_value_type {
    char type[EMBER_UNIT_MAX]; /* what the weights measure ... */
    char unit[EMBER_UNIT_MAX]; /* ... and in what */
};

struct ember_stack_cache;

struct ember_profile {
    struct ember_frames frames;
    struct ember_stack_cache *stacks; /* add_stack's memo of whole stacks, made on first use */
    bool no_stacks;                   /* ... or that could not be made: none */
    struct ember_module *modules;     /* strings in frames.names */
    uint32_t nmodules;
    size_t mcap;

    struct ember_node *nodes;
    int64_t *self[EMBER_MAX_VALUES];
    uint32_t nnodes;
    size_t ncap;

    struct ember_child_bucket *child_buckets;
    uint32_t *child_hash; /* per node, child_hash_cap of them */
    size_t child_hash_cap;
    uint32_t child_mask; /* buckets - 1 */

    unsigned nvalues;
    unsigned selected;              /* the value views show */
    bool weighed;                   /* a weight was added ... */
    bool named;                     /* ... or a value named: the default value is taken */
    uint8_t view;                   /* a view of names, which: EMBER_VIEW_* */
    bool diff;                      /* values are "before" and "after" ... */
    char diff_type[EMBER_UNIT_MAX]; /* ... of this */
    unsigned decimals;
    struct ember_value_type vt[EMBER_MAX_VALUES];
    int64_t total[EMBER_MAX_VALUES]; /* sum of self weights, kept exact */

    bool keep_seq;
    uint32_t *seq_node;
    int64_t *seq_w[EMBER_MAX_VALUES];
    size_t seq_len, seq_cap;

    uint32_t main_module;              /* + 1; 0: none named */
    struct ember_profile_extra *extra; /* meta, comments, labels; NULL: none */
};

/* What a profile says beyond its stacks (meta.c, labels.c). */
struct ember_labelled_part {
    uint32_t node, set;
    unsigned decimals; /* w's */
    int64_t w[EMBER_MAX_VALUES];
};
struct ember_profile_extra {
    struct ember_arena arena; /* the strings and label arrays */
    struct ember_profile_meta meta;
    struct ember_comment {
        const char *s;
        size_t len;
    } * comments;
    size_t ncomments, ccap;
    struct ember_strmap set_ids; /* a label set's bytes -> its id + 1 */
    struct ember_label_set {
        struct ember_label *labels;
        size_t n;
    } * sets;
    size_t nsets, scap;
    struct ember_strmap part_ids; /* (node, set) -> part index + 1 */
    struct ember_labelled_part *parts;
    size_t nparts, pcap;
    struct ember_counter {
        const char *name, *unit; /* in arena */
        uint64_t *times;
        int64_t *values;
        size_t n, cap;
    } * counters;
    unsigned ncounters;
    size_t kcap;
};

/* p's extra, made on first use (NULL: no memory). */
struct ember_profile_extra *ember_profile_extra(struct ember_profile *p);
void ember_profile_extra_free(struct ember_profile_extra *x);
/* Gives dst src's meta, comments and main module (a transform's result). */
int ember_profile_meta_like(struct ember_profile *dst, const struct ember_profile *src);
/* Gives dst copies of src's counters (counters.c). */
int ember_profile_counters_like(struct ember_profile *dst, const struct ember_profile *src);
void ember_profile_counters_free(struct ember_profile_extra *x);
/* Adds src's labelled part i to dst at node (its set interned in dst, its
 * weights moved to dst's values by vmap and scaled to dst's decimals). */
int ember_profile_labelled_copy(struct ember_profile *dst, const struct ember_profile *src,
                                size_t i, uint32_t node, const unsigned *vmap);

int ember_frames_init(struct ember_frames *f);
void ember_frames_release(struct ember_frames *f);
/* Room for n frames in all, its table sized for them: for one who knows
 * how many are coming (a merge: at least as many as its largest source). */
int ember_frames_reserve(struct ember_frames *f, size_t n);
int ember_frames_intern_slow(struct ember_frames *f, const char *s, size_t n, uint64_t h,
                             uint32_t *id);
/* A frame with a loc (interned like a name alone when loc says nothing). */
int ember_frames_intern_loc(struct ember_frames *f, const char *s, size_t n,
                            const struct ember_frame_loc *loc, uint32_t *id);
/* src's frames [from, to) interned in f, in order (a merge: the frames
 * another thread made), src's modules f's by mods; out[i - from]: frame
 * i's id in f. */
int ember_frames_copy(struct ember_frames *f, const struct ember_frames *src, uint32_t from,
                      uint32_t to, const uint32_t *mods, uint32_t *out);
/* The threads' merge of frames (profile_merge_frames.c), which finds and
 * writes frames itself: a frame's hash (loc NULL: a name alone); the
 * frame so keyed, or UINT32_MAX, writing nothing (threads may look up at
 * once); the one copy in f of a file's (or system name's) n bytes, NULL:
 * no memory; and n frames written in place after f's (their room made by
 * ember_frames_reserve) counted and placed, hash[i] frame count + i's. */
uint64_t ember_frames_hash(const char *s, size_t n, const struct ember_frame_loc *loc);
uint32_t ember_frames_find(const struct ember_frames *f, const char *s, size_t n,
                           const struct ember_frame_loc *loc, uint64_t h);
bool ember_frame_loc_same(const struct ember_frame_loc *a, const struct ember_frame_loc *b);
const char *ember_frames_keep(struct ember_frames *f, const char *s, size_t n);
void ember_frames_place_new(struct ember_frames *f, uint32_t n, const uint64_t *hash);
/* Whether the folded view spells the name [s, s + n) otherwise: it holds a
 * ';' or a control character (spell.c). */
bool ember_name_unfit_folded(const char *s, size_t n);
/* A folded stack's text [s, s + n) as the folded view spells its names:
 * control characters as "\xNN", and with strip_hex each 0x-number as
 * "0x..." (ember_name_strip_hex); into buf, of EMBER_FOLD_ROOM(n) bytes.
 * Returns its length. */
#define EMBER_FOLD_ROOM(n) (12 * (n) + 1)
size_t ember_stack_text_fold(const char *s, size_t n, bool strip_hex, char *buf);
/* Whether ember_stack_text_fold changes [s, s + n). */
bool ember_stack_text_unfit(const char *s, size_t n, bool strip_hex);
/* Room for need nodes: their weights in every value, zero (profile_tree.c). */
int ember_profile_node_reserve(struct ember_profile *p, size_t need);
/* Adds value (type, unit): its weights, zero for the nodes there are
 * (profile_values.c). */
int ember_profile_value_add(struct ember_profile *p, const char *type, const char *unit);
/* Multiplies every stored weight by 10^by (profile_values.c). */
int ember_profile_rescale_by(struct ember_profile *p, unsigned by);
/* Adds to a node's weight and the total, without recording the sequence;
 * -ERANGE if either would overflow. */
int ember_profile_add_raw(struct ember_profile *p, uint32_t node, unsigned value, int64_t weight);
/* Records (node, weight) in the arrival sequence only. */
int ember_profile_seq_append(struct ember_profile *p, uint32_t node, unsigned value,
                             int64_t weight);
/* Gives dst src's modules; map[i] is src's module i in dst (NULL when src
 * has none; free() it). */
int ember_profile_modules_like(struct ember_profile *dst, const struct ember_profile *src,
                               uint32_t **map);
/* src's frame in dst, with its record (its module mapped by module_map;
 * NULL: the same ids, for a dst given src's modules first), under name
 * when not NULL (a transform's new name), else its own. */
int ember_profile_copy_frame(struct ember_profile *dst, const struct ember_profile *src,
                             uint32_t frame, const char *name, size_t len,
                             const uint32_t *module_map, uint32_t *out);
/* Gives dst the values of src (by type and unit), and sets map[v] to the
 * index in dst of src's value v. */
int ember_profile_values_like(struct ember_profile *dst, const struct ember_profile *src,
                              unsigned map[EMBER_MAX_VALUES]);
/* rank[2 * frame + kind]: from 1, the byte order of every frame's name
 * (kind 0) and name followed by ';' (kind 1), which is the order of
 * folded lines ending at a frame and going on below it. */
int ember_piece_ranks(const struct ember_frames *f, uint32_t **rank);

/* Adds the child (parent, frame), whose path hash is h, and sets *node. */
int ember_profile_child_insert(struct ember_profile *p, uint32_t h, uint32_t parent, uint32_t frame,
                               uint32_t *node);
/* The nodes of the path from parent down through n frames, creating them
 * as needed: frames[0] is parent's child when step is 1, frames[n - 1] when
 * step is -1 (leaf-first stacks). Fills nodes[0 .. n) (in path order) when
 * nodes is not NULL, else only *leaf; *leaf is parent when n is 0. */
int ember_profile_child_path(struct ember_profile *p, uint32_t parent, const uint32_t *frames,
                             size_t n, int step, uint32_t *nodes, uint32_t *leaf);

/* For threads that fill the tables themselves (profile_merge.c): room for
 * `nodes` nodes in the child table, a new one, not zeroed, if it had to
 * grow (*fresh: every node is then to be placed again once it is), and
 * in the nodes and weights, whose new entries below `need` are not zeroed
 * (profile_tree.c). */
int ember_profile_children_presize(struct ember_profile *p, size_t nodes, bool *fresh);
int ember_profile_node_reserve_unzeroed(struct ember_profile *p, size_t need);
/* Puts node n (its frame, parent and path hash already stored) in the
 * child table if its home bucket and the first with room both lie in
 * [lo, hi): true if placed. The buckets it passed there are marked, so a
 * node left out is then placed by ember_profile_child_place. Threads
 * placing in ranges of their own need no lock (profile_merge.c). */
bool ember_profile_child_place_within(struct ember_profile *p, uint32_t n, uint32_t lo,
                                      uint32_t hi);
void ember_profile_child_place(struct ember_profile *p, uint32_t n);

/* A frame's tag, the high half of its hash: odd for a name alone, even
 * with a loc, so that neither lookup stops at the other's frames. */
static inline uint32_t ember_frame_tag(uint64_t h, bool detailed)
{
    return detailed ? (uint32_t)(h >> 32) & ~1u : (uint32_t)(h >> 32) | 1u;
}

/* The hot paths, inlined into readers: look up, and only call out to insert. */
static inline int ember_frames_intern_hashed(struct ember_frames *f, const char *s, size_t n,
                                             uint64_t h, uint32_t *id)
{
    uint32_t tag = ember_frame_tag(h, false);
    for (uint32_t i = (uint32_t)h & f->mask;; i = (i + 1) & f->mask) {
        uint32_t slot = f->slots[i];
        if (slot == 0)
            break;
        uint32_t cand = slot - 1;
        if (f->tag[cand] == tag && f->len[cand] == n && memcmp(f->str[cand], s, n) == 0) {
            *id = cand;
            return 0;
        }
    }
    return ember_frames_intern_slow(f, s, n, h, id);
}

static inline int ember_frames_intern(struct ember_frames *f, const char *s, size_t n, uint32_t *id)
{
    return ember_frames_intern_hashed(f, s, n, ember_hash_bytes(s, n, 0), id);
}

/* The path hash of a child from its parent's. */
static inline uint32_t ember_child_step(uint32_t parent_hash, uint32_t frame)
{
    return (uint32_t)ember_hash_u64((uint64_t)parent_hash << 32 | frame);
}

/* The child (parent, frame) whose path hash is h, 0 if there is none. */
static inline uint32_t ember_profile_child_find_at(const struct ember_profile *p, uint32_t h,
                                                   uint32_t parent, uint32_t frame)
{
    for (uint32_t b = h & p->child_mask;; b = (b + 1) & p->child_mask) {
        const struct ember_child_bucket *k = &p->child_buckets[b];
        for (unsigned j = 0; j < EMBER_CHILD_BUCKET; j++) {
            const struct ember_child_slot *s = &k->slot[j];
            if (s->node == 0)
                return 0;
            if (s->parent == parent && s->frame == frame)
                return s->node;
        }
        if (!k->over)
            return 0;
    }
}

/* The child (parent, frame) whose path hash is h, created if new. */
static inline int ember_profile_child_at(struct ember_profile *p, uint32_t h, uint32_t parent,
                                         uint32_t frame, uint32_t *node)
{
    uint32_t n = ember_profile_child_find_at(p, h, parent, frame);
    if (!n)
        return ember_profile_child_insert(p, h, parent, frame, node);
    *node = n;
    return 0;
}

/* The child (parent, frame), 0 if there is none (parent must exist). */
static inline uint32_t ember_profile_child_find(const struct ember_profile *p, uint32_t parent,
                                                uint32_t frame)
{
    return ember_profile_child_find_at(p, ember_child_step(p->child_hash[parent], frame), parent,
                                       frame);
}

static inline int ember_profile_child_fast(struct ember_profile *p, uint32_t parent, uint32_t frame,
                                           uint32_t *node)
{
    if (parent >= p->nnodes)
        return -EINVAL;
    return ember_profile_child_at(p, ember_child_step(p->child_hash[parent], frame), parent, frame,
                                  node);
}

#endif
