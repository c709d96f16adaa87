/*
 * speedscope_impl.h - what speedscope.c (the JSON's structure: where a
 * value is, what it means) and speedscope_profiles.c (the frames and the
 * stacks of evented and sampled profiles) share (library-internal).
 *
 * Invariants: ctx[d] and key[d] describe the container at depth d + 1, up
 * to MAX_DEPTH (deeper: skipped); a frame index is below MAX_FRAMES; the
 * current profile is profiles[nprofiles - 1].
 */
#ifndef EMBER_READ_SPEEDSCOPE_IMPL_H
#define EMBER_READ_SPEEDSCOPE_IMPL_H

#include "read/json.h"
#include "base/u64map.h"
#include "base/arena.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum { MAX_DEPTH = 16, MAX_FRAMES = INT32_MAX };

/* Where a value is: the container it belongs to. */
enum ctx {
    C_NONE, /* the top-level value */
    C_TOP,
    C_SHARED,
    C_FRAMES,
    C_FRAME,
    C_PROFILES,
    C_PROFILE,
    C_EVENTS,
    C_EVENT,
    C_SAMPLES,
    C_SAMPLE,
    C_WEIGHTS,
    C_SKIP
};

enum key {
    K_OTHER,
    K_SHARED,
    K_FRAMES,
    K_PROFILES,
    K_NAME,
    K_TYPE,
    K_EVENTS,
    K_SAMPLES,
    K_WEIGHTS,
    K_AT,
    K_FRAME,
    K_FILE,
    K_LINE,
    K_COL,
    K_UNIT
};

enum ptype { T_UNKNOWN, T_EVENTED, T_SAMPLED };

struct frame_name {
    const char *s;
    size_t len;
    const char *file; /* NULL: none */
    size_t file_len;
    uint32_t line, col; /* 0: none */
};

struct ss_profile {
    uint32_t root; /* its placeholder node in the reader's scratch profile */
    char *name;    /* in the reader's arena */
    size_t namelen;
    char unit[16]; /* "none", "nanoseconds", ..., "bytes" */
    bool weighed;
};

/* The profile being read. */
struct current {
    enum ptype type;
    bool events, samples, weights;

    /* evented */
    uint32_t *open, *open_node;
    size_t nopen, ocap, ncap;
    ember_fixed last_at;
    bool have_at;
    int ev_type; /* 'O', 'C', 0 */
    ember_fixed ev_at;
    int64_t ev_frame;
    bool ev_has_at;
    /* sampled: the unpaired leading part of samples or weights */
    uint32_t node; /* the sample being read */
    uint32_t *leaves;
    ember_fixed *wbuf;
    size_t lhead, nleaves, lcap, whead, nweights, wcap;
    uint64_t nsamples, nweights_total;
};

struct ss_reader {
    struct ember_json j;
    struct ember_profile *p;
    /* the stacks as they are read, frames named by their index, each
     * profile under a placeholder frame (see ember_profile_merge_renamed) */
    struct ember_profile *t;
    struct ember_u64map frame_of; /* frame index -> frame of t */
    char label[64];
    struct ember_read_stats *st;
    struct ember_arena arena;
    enum ctx ctx[MAX_DEPTH];
    enum key key[MAX_DEPTH];
    bool top_seen, frames_done;
    struct frame_name *frames;
    size_t nframes, fcap;
    char *fname; /* the frame being read */
    size_t fnamelen;
    char *ffile; /* its "file", "line" and "col" */
    size_t ffilelen;
    uint32_t fline, fcol;
    bool fname_set;
    int64_t max_index; /* the largest frame index used before frames were known */
    uint64_t max_index_line;
    struct ss_profile *profiles;
    size_t nprofiles, pcap;
    struct current cur;
};

static inline struct ss_profile *current_profile(struct ss_reader *r)
{
    return &r->profiles[r->nprofiles - 1];
}

static inline bool is(const unsigned char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* ---- the profiles (speedscope_profiles.c): each returns 1 to go on, as
 * yajl's callbacks do, or what ember_json_fail or ember_json_error made */

/* The end of an object of shared.frames: its frame into the table. */
int ember_speedscope_frame_end(struct ss_reader *r);
/* A frame's "name". */
int ember_speedscope_frame_name(struct ss_reader *r, const unsigned char *s, size_t n);
/* The end of an object of an evented profile's events, and of them all. */
int ember_speedscope_event_end(struct ss_reader *r);
int ember_speedscope_events_end(struct ss_reader *r);
/* A frame index in a sample, the end of the sample, a weight. */
int ember_speedscope_sample_frame(struct ss_reader *r, int64_t idx);
int ember_speedscope_sample_end(struct ss_reader *r);
int ember_speedscope_weight(struct ss_reader *r, ember_fixed w);
/* A profile's start and end, and its strings ("type", "name", "unit"). */
int ember_speedscope_profile_start(struct ss_reader *r);
int ember_speedscope_profile_end(struct ss_reader *r);
int ember_speedscope_profile_string(struct ss_reader *r, enum key k, const unsigned char *s,
                                    size_t n);

#endif
