/*
 * ember/model.h - the profile: what every reader fills and every writer
 * walks.
 *
 * A profile is a table of interned frame names and a stack tree (a trie):
 * node 0 is the root, every other node is one frame under its parent and
 * carries a self weight per value. Memory grows with the number of distinct
 * stacks, never with the number of samples read.
 *
 * Values are pprof's sample types: each sample carries one number per value,
 * named with its unit ("samples"/"count", "cpu"/"nanoseconds",
 * "alloc_space"/"bytes", callgrind's "Ir"/"count"). Views that show one
 * number (flame graphs, reports, folded stacks) show the selected value;
 * writers that can carry them all (pprof) write them all. A differential
 * profile is its own kind: two values, "before" and "after".
 *
 * Weights are exact decimals: integers scaled by 10^decimals, where decimals
 * grows (and existing weights are rescaled) when a reader adds a value with
 * more fractional digits. Most profiles count samples and stay at 0.
 *
 * When asked to (ember_profile_keep_sequence), the profile also keeps the
 * order in which stacks arrived, for flame charts.
 */
#ifndef EMBER_MODEL_H
#define EMBER_MODEL_H

#include "ember/base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EMBER_ROOT         0u
#define EMBER_MAX_VALUES   16
#define EMBER_MAX_DECIMALS 9

struct ember_profile;

/* A decimal number as read: mant / 10^digits. */
struct ember_decimal {
    int64_t mant;
    unsigned digits;
};

EMBER_API struct ember_profile *ember_profile_new(void);
EMBER_API void ember_profile_free(struct ember_profile *p);

/* Values. A new profile has one, "samples"/"count". Names are cut to
 * EMBER_UNIT_MAX - 1 bytes. */
#define EMBER_UNIT_MAX 64
EMBER_API unsigned ember_profile_values(const struct ember_profile *p);
/* The index of the value (type, unit), added when it is new; -ENOSPC past
 * EMBER_MAX_VALUES. */
EMBER_API int ember_profile_value(struct ember_profile *p, const char *type, const char *unit,
                                  unsigned *index);
EMBER_API const char *ember_profile_value_type(const struct ember_profile *p, unsigned index);
EMBER_API const char *ember_profile_value_unit(const struct ember_profile *p, unsigned index);
/* The value views show: a reader's default (pprof's default_sample_type,
 * perf's period), or the user's choice by type name or index ("1"); -ENOENT
 * when no value has that name. */
EMBER_API unsigned ember_profile_selected(const struct ember_profile *p);
EMBER_API int ember_profile_select(struct ember_profile *p, const char *name);
EMBER_API void ember_profile_select_index(struct ember_profile *p, unsigned index);
/* Renames value 0, for readers of one value: what the weights measure, in
 * pprof's words ("cpu"/"nanoseconds"). NULL keeps a part. */
EMBER_API void ember_profile_set_unit(struct ember_profile *p, const char *type, const char *unit);
/* Renames value v (a reader that learns what its weights measure once it
 * has read them); removes value v and its weights (the later values move
 * down one). */
EMBER_API void ember_profile_value_rename(struct ember_profile *p, unsigned v, const char *type,
                                          const char *unit);
EMBER_API void ember_profile_value_drop(struct ember_profile *p, unsigned v);
/* The selected value's type and unit. */
EMBER_API const char *ember_profile_sample_type(const struct ember_profile *p);
EMBER_API const char *ember_profile_unit(const struct ember_profile *p);

/* A differential profile: two values, "before" (0) and "after" (1), of the
 * type and unit of the profiles compared (which ember_profile_sample_type
 * then gives). Set before any stack is added, or on a profile of one value,
 * whose weights so far become both before and after (unchanged). */
EMBER_API int ember_profile_set_differential(struct ember_profile *p, const char *type,
                                             const char *unit);
EMBER_API bool ember_profile_is_differential(const struct ember_profile *p);
/* p, whose frames are names alone, becomes a differential profile of
 * (type, unit) in place: its selected value is "before" (its other values,
 * its sequence and its modules are dropped), at decimals (at least p's),
 * and, when norm is not NULL and neither total is 0, scaled to the total
 * norm and truncated, as difffolded.pl -n does; the empty stack's weight
 * is dropped; "after" is zeros. On an error p is changed. */
EMBER_API int ember_profile_to_before(struct ember_profile *p, const char *type, const char *unit,
                                      unsigned decimals, const struct ember_decimal *norm);
/* Raises p's decimals to decimals, rescaling its weights (-ERANGE when one
 * overflows); never lowers them. */
EMBER_API int ember_profile_rescale(struct ember_profile *p, unsigned decimals);
EMBER_API unsigned ember_profile_decimals(const struct ember_profile *p);
/* What a count counts, for labels ("samples", "cycles", "Ir"): the sample
 * type when the unit is a count; NULL when values are times or sizes, which
 * ember_unit_format writes with their unit. */
EMBER_API const char *ember_profile_count_word(const struct ember_profile *p);
/* Whether values in unit are times or sizes that ember_unit_format scales. */
EMBER_API bool ember_unit_scales(const char *unit);
/* A value in unit, as people read it: "1.23 s", "450 us", "12.5 MiB" (two
 * decimals at most, in the largest unit where it is at least 1). Returns
 * the length written, or 0 (buf unspecified) when unit is a count. */
EMBER_API size_t ember_unit_format(char *buf, size_t cap, double value, const char *unit);

/* Frames: each distinct frame is stored once and named by a small integer.
 * A frame is a record: the function's name, and what the input knows of
 * where it comes from. ember_profile_intern makes a frame of a name alone
 * (folded stacks, FlameGraph's spelling); ember_profile_intern_frame one
 * with whatever else is known. Two frames are one when every field is. */
enum ember_frame_kind {
    EMBER_FRAME_USER = 0,
    EMBER_FRAME_KERNEL,
    EMBER_FRAME_JIT,
    EMBER_FRAME_INLINED, /* a call inlined into the frame below it (same address) */
    EMBER_FRAME_PROCESS,
    EMBER_FRAME_THREAD,
    EMBER_FRAME_OFFCPU, /* not a function: time its thread spent switched out, under the
                           stack where it stopped ("[off-cpu]", "[preempted]") */
};
#define EMBER_NO_MODULE UINT32_MAX
#define EMBER_NO_FRAME  UINT32_MAX

struct ember_frame {
    const char *name;
    size_t name_len;
    const char *file; /* NULL: unknown */
    size_t file_len;
    uint32_t line, column; /* 0: unknown */
    uint32_t start_line;   /* where the function begins (pprof's start_line); 0: unknown */
    uint64_t address;      /* valid when has_address */
    bool has_address;
    uint32_t module; /* an ember_profile_module id, or EMBER_NO_MODULE */
    enum ember_frame_kind kind;
    /* views of names spell it "name:file:line", as stackcollapse-perf.pl
     * --srcline and --context do */
    bool place_in_name;
    /* views of names spell the kind as FlameGraph does: after the name
     * ("name_[k]": --kernel, --jit, inlined pieces of a perf symbol), or a
     * process or thread named by its command as "comm-PID", "comm-PID/TID" */
    bool kind_in_name;
    /* PROCESS frames: the process; THREAD frames: the process and the
     * thread; -1: unknown */
    int64_t pid, tid;
    /* the function's name as linked (pprof's system_name: mangled), when
     * the input says it; NULL: not known */
    const char *system_name;
    size_t system_name_len;
    /* pprof's Location.is_folded: the address holds several functions
     * folded into one by the linker */
    bool folded;
};

/* FlameGraph's annotation of a kind: "_[k]" kernel, "_[j]" JIT, "_[i]"
 * inlined; "" for the others. */
EMBER_API const char *ember_frame_kind_suffix(enum ember_frame_kind kind);
/* A frame's name as views of names show it (FlameGraph's spelling): the
 * name, its kind's annotation when kind_in_name, ":file:line" (the file
 * without its directories) when place_in_name; a process or thread as
 * "comm-PID/TID", its spaces as '_'. Writes at most cap - 1 bytes and a
 * NUL; returns the length of the whole spelling. */
EMBER_API size_t ember_frame_spell(const struct ember_frame *f, char *buf, size_t cap);
/* Whether ember_frame_spell writes more than the name. */
EMBER_API bool ember_frame_spelled(const struct ember_frame *f);
/* The frame as a piece of a folded stack, what folded stacks, flame graphs,
 * reports and the rules that match names (--hide, --focus...) show:
 * ember_frame_spell, each ';' of the name (which separates frames there)
 * as ':', and each byte of a control character (bytes below 0x20, DEL,
 * U+0080..U+009F: a newline would end the line) as "\xNN". Names keep
 * their bytes everywhere else (the pprof, speedscope and Chrome exports). */
EMBER_API size_t ember_frame_spell_folded(const struct ember_frame *f, char *buf, size_t cap);
/* Whether ember_frame_spell_folded writes more than the name, or else. */
EMBER_API bool ember_frame_spelled_folded(const struct ember_frame *f);
/* The name [s, s+n) with each 0x-prefixed hex number as "0x..." (diff
 * --strip-hex: stacks that differ only by addresses compare equal) into
 * buf (2 * n + 1 bytes suffice: "0x1" grows to "0x..."); returns its length. */
EMBER_API size_t ember_name_strip_hex(const char *s, size_t n, char *buf);

/* A mapping of a binary (pprof's Mapping): what addresses belong to. */
enum {
    EMBER_MODULE_FUNCTIONS = 1, /* symbolized: has_functions ... */
    EMBER_MODULE_FILES = 2,
    EMBER_MODULE_LINES = 4,
    EMBER_MODULE_INLINES = 8,
};
struct ember_module {
    const char *path;     /* NULL: none */
    const char *build_id; /* NULL: none */
    uint64_t start, limit, offset;
    unsigned flags; /* EMBER_MODULE_* */
};

EMBER_API int ember_profile_intern(struct ember_profile *p, const char *name, size_t len,
                                   uint32_t *frame);
EMBER_API int ember_profile_intern_frame(struct ember_profile *p, const struct ember_frame *f,
                                         uint32_t *frame);
/* The record of a frame (pointers valid while p lives). Files are stored
 * once per profile: two frames of one file have equal file pointers. */
EMBER_API void ember_profile_frame(const struct ember_profile *p, uint32_t frame,
                                   struct ember_frame *out);
/* Whether a frame carries more than its name (made by
 * ember_profile_intern_frame with something known beyond the name). */
EMBER_API bool ember_profile_frame_detailed(const struct ember_profile *p, uint32_t frame);
/* Whether some frame carries more than its name. */
EMBER_API bool ember_profile_detailed(const struct ember_profile *p);
/* Modules, interned by every field. */
EMBER_API int ember_profile_module(struct ember_profile *p, const struct ember_module *m,
                                   uint32_t *id);
EMBER_API uint32_t ember_profile_module_count(const struct ember_profile *p);
EMBER_API const struct ember_module *ember_profile_module_info(const struct ember_profile *p,
                                                               uint32_t id);
/* The main program's module (pprof's first mapping, "File:" in go tool
 * pprof): a reader's (the executable of perf.data's busiest process, a
 * pprof's first mapping); EMBER_NO_MODULE when none was named (or the
 * modules were dropped). */
EMBER_API void ember_profile_set_main_module(struct ember_profile *p, uint32_t id);
EMBER_API uint32_t ember_profile_main_module(const struct ember_profile *p);

/*
 * What a profile says of itself beyond its stacks, as pprof's Profile does:
 * kept by the readers that know it (pprof, perf.data), carried through the
 * transforms, written back by pprof's writer. Strings are copied; NULL and
 * 0 say nothing.
 */
struct ember_profile_meta {
    const char *period_type, *period_unit; /* what one sample's period counts */
    int64_t period;                        /* the events between two samples */
    int64_t time_nanos;                    /* when it was taken, ns since the epoch */
    int64_t duration_nanos;                /* how long it was taken for */
    const char *drop_frames, *keep_frames; /* pprof's regexes of frames to drop, keep */
    const char *doc_url;                   /* where its sample types are documented */
};
/* Never NULL: all zero until set. */
EMBER_API const struct ember_profile_meta *ember_profile_meta(const struct ember_profile *p);
EMBER_API int ember_profile_set_meta(struct ember_profile *p, const struct ember_profile_meta *m);
/* Free-form comments (pprof's Profile.comment), in order. */
EMBER_API int ember_profile_add_comment(struct ember_profile *p, const char *s, size_t len);
EMBER_API size_t ember_profile_comment_count(const struct ember_profile *p);
EMBER_API const char *ember_profile_comment(const struct ember_profile *p, size_t i, size_t *len);
/*
 * Counters over time (the heap in use): named tracks of (time, value)
 * points in time order, times in ns from the recording's start (the
 * meta's time_nanos, when known, is that start). Readers of recordings
 * with times add them, bounded (at most a point per millisecond, and each
 * extreme kept); writers with a time axis draw them (Chrome, Perfetto);
 * summaries give their peaks. Carried with the meta through transforms.
 */
EMBER_API int ember_profile_counter_new(struct ember_profile *p, const char *name, const char *unit,
                                        unsigned *index);
/* -EINVAL for a point earlier than the counter's last one. */
EMBER_API int ember_profile_counter_add(struct ember_profile *p, unsigned counter, uint64_t time_ns,
                                        int64_t value);
EMBER_API unsigned ember_profile_counter_count(const struct ember_profile *p);
EMBER_API const char *ember_profile_counter_name(const struct ember_profile *p, unsigned counter);
EMBER_API const char *ember_profile_counter_unit(const struct ember_profile *p, unsigned counter);
/* The counter's points: how many, and their times and values. */
EMBER_API size_t ember_profile_counter_points(const struct ember_profile *p, unsigned counter,
                                              const uint64_t **times, const int64_t **values);

/*
 * Sample labels (pprof's Label: a key and a string, or a number with its
 * unit). Samples of one stack with different labels are told apart: a
 * node's weight may be given in parts, each with its label set, the rest
 * of its weight having none. Label sets are interned as given (order
 * kept). Differential profiles have no labelled parts.
 */
struct ember_label {
    const char *key;
    size_t key_len;
    const char *str; /* a string label; NULL: a number */
    size_t str_len;
    int64_t num;
    const char *unit; /* a number's unit; NULL: none */
    size_t unit_len;
};
EMBER_API int ember_profile_label_set(struct ember_profile *p, const struct ember_label *labels,
                                      size_t n, uint32_t *set);
/* The labels of a set (valid while p lives); their number. */
EMBER_API size_t ember_profile_labels(const struct ember_profile *p, uint32_t set,
                                      const struct ember_label **labels);
/* Adds weight (at the profile's decimals) to node's part labelled set in
 * value v: it is also added to node's weight (ember_profile_add) by the
 * caller, as for any sample. */
EMBER_API int ember_profile_add_labelled(struct ember_profile *p, uint32_t node, uint32_t set,
                                         unsigned v, int64_t weight);
/* The labelled parts: their number, and part i's node, label set and
 * weights by value (at the profile's decimals). */
EMBER_API size_t ember_profile_labelled_count(const struct ember_profile *p);
EMBER_API void ember_profile_labelled(const struct ember_profile *p, size_t i, uint32_t *node,
                                      uint32_t *set, int64_t w[EMBER_MAX_VALUES]);

EMBER_API const char *ember_profile_frame_name(const struct ember_profile *p, uint32_t frame,
                                               size_t *len);
EMBER_API uint32_t ember_profile_frame_count(const struct ember_profile *p);

/* The stack tree. */
EMBER_API int ember_profile_child(struct ember_profile *p, uint32_t parent, uint32_t frame,
                                  uint32_t *node);
EMBER_API uint32_t ember_profile_node_count(const struct ember_profile *p);
/* The child (parent, frame), 0 when there is none. */
EMBER_API uint32_t ember_profile_child_lookup(const struct ember_profile *p, uint32_t parent,
                                              uint32_t frame);
EMBER_API uint32_t ember_profile_node_frame(const struct ember_profile *p, uint32_t node);
EMBER_API uint32_t ember_profile_node_parent(const struct ember_profile *p, uint32_t node);
EMBER_API int64_t ember_profile_self(const struct ember_profile *p, uint32_t node, unsigned value);
/* The self weights of a value by node, ember_profile_node_count of them
 * (NULL when there is no such value), for passes over every node; valid
 * until the profile changes. */
EMBER_API const int64_t *ember_profile_self_values(const struct ember_profile *p, unsigned value);
/* Sum of all self weights of a value. */
EMBER_API int64_t ember_profile_total(const struct ember_profile *p, unsigned value);

/*
 * How every reader adds a sample: the stack's frames (ids from
 * ember_profile_intern*), leaf first or root first, and a weight per value
 * (scaled to the profile's decimals; NULL: none yet). *node, when not NULL,
 * is the stack's node, for adding decimals or more weights to it. A stack of
 * no frames is -EINVAL.
 */
enum ember_stack_order { EMBER_LEAF_FIRST, EMBER_ROOT_FIRST };
EMBER_API int ember_profile_add_stack(struct ember_profile *p, const uint32_t *frames, size_t n,
                                      enum ember_stack_order order, const int64_t *weights,
                                      uint32_t *node);

/*
 * Stacks given as text, frames root first separated by one byte sep
 * ("main;run;work" with ';'), for readers whose lines are whole stacks:
 * a stack seen before costs one hash of its text, a new one reuses the
 * previous one's nodes where their texts agree (sorted input repeats long
 * prefixes), and names are memoized. Frames are names alone.
 * ember_stack_text_key hashes a stack's text into key[2] (it reads nothing
 * else: any thread may call it); ember_stack_text_prefetch, called with a
 * stack's key before the one being added (a line ahead), starts fetching
 * what adding it will read; ember_stack_text_add then takes that key (NULL:
 * hashes the text itself) and gives the stack's node (the root's for n == 0).
 * ember_stack_text_split finds where the names of s end and hashes them,
 * into ends and hashes (room for n + 8 each), and returns their number:
 * work that reads nothing but s, for another thread to do ahead of
 * ember_stack_text_add_split, which takes them (names 0: none).
 */
struct ember_stack_text;
EMBER_API int ember_stack_text_new(struct ember_profile *p, char sep,
                                   struct ember_stack_text **out);
EMBER_API void ember_stack_text_free(struct ember_stack_text *t);
EMBER_API void ember_stack_text_key(const char *s, size_t n, uint64_t key[2]);
EMBER_API void ember_stack_text_prefetch(const struct ember_stack_text *t, const uint64_t key[2]);
EMBER_API int ember_stack_text_add(struct ember_stack_text *t, const char *s, size_t n,
                                   const uint64_t key[2], uint32_t *node);
EMBER_API size_t ember_stack_text_split(char sep, const char *s, size_t n, size_t *ends,
                                        uint64_t *hashes);
EMBER_API int ember_stack_text_add_split(struct ember_stack_text *t, const char *s, size_t n,
                                         const uint64_t key[2], const size_t *ends,
                                         const uint64_t *hashes, size_t names, uint32_t *node);

/* Adds a weight already scaled to the profile's current decimals. */
EMBER_API int ember_profile_add(struct ember_profile *p, uint32_t node, unsigned value,
                                int64_t weight);
/* Adds a decimal, rescaling the profile when it has more digits. */
EMBER_API int ember_profile_add_decimal(struct ember_profile *p, uint32_t node, unsigned value,
                                        struct ember_decimal v);

/* Adds every stack of src to dst (used to combine per-thread profiles). */
EMBER_API int ember_profile_merge(struct ember_profile *dst, const struct ember_profile *src);
/* The frame a frame of src takes in dst: *fr is src's record, to be
 * changed (its name, and where it comes from), or its name set to NULL to
 * leave the frame out (its callees take its place). */
typedef int (*ember_frame_rename_fn)(void *ctx, struct ember_frame *fr);
/* ember_profile_merge with each frame renamed by rename (called once per
 * stack node of src, in node order). */
EMBER_API int ember_profile_merge_renamed(struct ember_profile *dst,
                                          const struct ember_profile *src,
                                          ember_frame_rename_fn rename, void *ctx);

/*
 * Rebuilding a profile stack by stack: the mechanism under the transforms
 * that rewrite stacks (reverse, hide, focus, collapse...). fn is given each
 * stack of src that carries weight, as src frame ids from the root, once
 * (memoized, however long the arrival sequence), and appends dst frames to
 * out, or drops the stack and its weight. dst starts with src's values,
 * decimals and modules (under the same ids).
 */
struct ember_stack_out;
typedef int (*ember_stack_map_fn)(void *ctx, struct ember_profile *dst,
                                  const struct ember_profile *src, const uint32_t *in, size_t n,
                                  struct ember_stack_out *out);
/* Appends dst frame f. */
EMBER_API int ember_stack_out_push(struct ember_stack_out *out, uint32_t f);
/* Appends src frame f, with its record, interned in dst. */
EMBER_API int ember_stack_out_copy(struct ember_stack_out *out, struct ember_profile *dst,
                                   const struct ember_profile *src, uint32_t f);
/* Appends the name [s, s+len) interned in dst. */
EMBER_API int ember_stack_out_name(struct ember_stack_out *out, struct ember_profile *dst,
                                   const char *s, size_t len);
/* Leaves the stack and its weight out. */
EMBER_API void ember_stack_out_drop(struct ember_stack_out *out);
/* A new profile with every stack of src (weights, and the arrival sequence
 * if kept) passed through fn. */
EMBER_API int ember_profile_map(const struct ember_profile *src, ember_stack_map_fn fn, void *ctx,
                                struct ember_profile **out);
/* Each src frame's dst frame: called once per frame that some weighted
 * stack holds. */
typedef int (*ember_frame_map_fn)(void *ctx, struct ember_profile *dst,
                                  const struct ember_profile *src, uint32_t frame, uint32_t *out);
/* ember_profile_map for a rewrite frame by frame (the stack's shape kept):
 * one child lookup per node rather than a pass over each stack. */
EMBER_API int ember_profile_map_frames(const struct ember_profile *src, ember_frame_map_fn fn,
                                       void *ctx, struct ember_profile **out);
/* Src's frame in dst, with its record, under name [name, name+len) (NULL:
 * its own): dst has src's modules under the same ids (made by
 * ember_profile_map*). */
EMBER_API int ember_profile_frame_copy(struct ember_profile *dst, const struct ember_profile *src,
                                       uint32_t frame, const char *name, size_t len, uint32_t *out);
/* Exchanges the contents of two profiles (a transform's result replaces
 * its input in place). */
EMBER_API void ember_profile_swap(struct ember_profile *a, struct ember_profile *b);

/* Arrival order, for flame charts: when enabled before reading, every
 * ember_profile_add* also records (node, value); consecutive additions to
 * the same node are merged. */
EMBER_API void ember_profile_keep_sequence(struct ember_profile *p, bool keep);
EMBER_API bool ember_profile_has_sequence(const struct ember_profile *p);

/*
 * Walks every stack that has a non-zero self weight in some value, in the
 * byte order of the folded line "frame;frame;...;frame" (what `sort` gives
 * FlameGraph), calling fn with the path of nodes from the root's child to
 * the stack's last node and the node's self weights, by value. A non-zero
 * return from fn stops the walk and is returned.
 */
typedef int (*ember_walk_fn)(void *ctx, const uint32_t *path, size_t depth, const int64_t *self);
EMBER_API int ember_profile_walk(const struct ember_profile *p, ember_walk_fn fn, void *ctx);

/* ember_profile_walk, pruned: below a node whose bit is set in skip (a
 * bit per node, skip[n / 64] >> n % 64; NULL: none), the walk calls
 * below(ctx, path, depth), path[depth - 1] the node, instead of visiting
 * the lines below it (the line ending at it is still visited). */
typedef int (*ember_walk_below_fn)(void *ctx, const uint32_t *path, size_t depth);
EMBER_API int ember_profile_walk_pruned(const struct ember_profile *p, ember_walk_fn fn,
                                        const uint64_t *skip, ember_walk_below_fn below, void *ctx);

/* The same callback over the arrival sequence (flame charts). A transform
 * that leaves stacks out (--focus, --ignore) keeps their entries in the
 * sequence at the root, so that what pairs with it (a recording's sample
 * times) stays in step: ember_profile_walk_sequence skips them,
 * ember_profile_walk_sequence_all gives them too (depth 0). */
EMBER_API int ember_profile_walk_sequence(const struct ember_profile *p, ember_walk_fn fn,
                                          void *ctx);
EMBER_API int ember_profile_walk_sequence_all(const struct ember_profile *p, ember_walk_fn fn,
                                              void *ctx);

/* Formats a scaled weight as an exact decimal ("12", "2.5"); returns the
 * length written (buf needs 32 bytes). */
EMBER_API size_t ember_weight_format(char *buf, int64_t value, unsigned decimals);

/* ---- views of names
 *
 * What readers keep (addresses, lines, modules) seen as writers draw it. */

/* src with frames of their names alone (stacks that differ only in lines
 * or addresses merged), as views of names draw it: each named as
 * ember_frame_spell_folded spells it (a ';' in a name as ':', a control
 * character as "\xNN"), for folded stacks, flame graphs and reports; *out
 * is NULL when src's frames are those names already (use src). */
EMBER_API int ember_profile_names(const struct ember_profile *src, struct ember_profile **out);
/* The same view for exports that name functions as read (speedscope,
 * Chrome): frames spelled by ember_frame_spell, a ';' kept. */
EMBER_API int ember_profile_function_names(const struct ember_profile *src,
                                           struct ember_profile **out);
/* Whether src's frames are its view's names already (ember_profile_names
 * would give NULL). */
EMBER_API bool ember_profile_is_names(const struct ember_profile *src);
/* src by source line: each frame named "function file:line" as go tool
 * pprof -lines names it (frames without a file keep their name). */
EMBER_API int ember_profile_lines(const struct ember_profile *src, struct ember_profile **out);

/* ---- the folded diff
 *
 * The lines ember_write_folded would write of ember_profile_diff's result
 * (ember/transform.h), for two folded inputs, without building a profile:
 * new; read both (ember_stack_diff_read, ember/transform.h); prepare; then
 * write the "stack before after" lines. prepare fails with -ERANGE where
 * ember_profile_diff would; write prepares if needed. Memory follows the
 * distinct stacks, not the size of the inputs. */

/* Differential profiles (difffolded.pl): metric 0 is BEFORE's weight,
 * metric 1 AFTER's, for the union of their stacks. */
struct ember_diff_opts {
    bool normalize; /* scale BEFORE to AFTER's total (truncated, as difffolded -n) */
    bool strip_hex; /* "0x1f2e" in names compares as "0x..." */
};
struct ember_stack_diff;
EMBER_API int ember_stack_diff_new(struct ember_stack_diff **sd, const struct ember_diff_opts *o);
EMBER_API int ember_stack_diff_prepare(struct ember_stack_diff *sd);
/* The differential profile ember_profile_diff would make of the two
 * profiles read, built once from the merged stacks (-ERANGE where it
 * would fail). */
EMBER_API int ember_stack_diff_profile(struct ember_stack_diff *sd, struct ember_profile **out);
EMBER_API int ember_stack_diff_write(struct ember_stack_diff *sd, const struct ember_sink *out);
EMBER_API void ember_stack_diff_free(struct ember_stack_diff *sd);

#endif
