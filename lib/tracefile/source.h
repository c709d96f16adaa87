/*
 * source.h - the trace source interface (library-internal): what a backend
 * (ember's ring files and packet logs in ember_rings.c, OCaml's
 * runtime_events files in ocaml_events.c) gives the generic reader in
 * timeline.c, which opens files, merges streams in time order, follows
 * live files and records them, whatever their format.
 *
 * A backend reads its streams through one cursor each, the same for a
 * whole-file pass and for following a live file: a cursor copies the
 * stream's data, checks again that the writer has not overwritten what it
 * copied, decodes the events, and counts what was lost. A pass starts its
 * cursors at the beginning; a follower keeps them from poll to poll. Each
 * cursor reads up to its stream's end as the backend last saw it
 * (refresh): the end read at open for a pass, at each poll when following.
 *
 * Invariants: backends fill struct ember_trace_ring counts (events, lost,
 * cut...) as they read; they report corruption once, through
 * ember_source_corrupt (t->err: the file, the stream, the place), and
 * return -EINVAL; they never print.
 */
#ifndef EMBER_TRACEFILE_SOURCE_H
#define EMBER_TRACEFILE_SOURCE_H

#include "ember/tracefile.h"
#include "base/fileio.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ember_cursor {
    struct ember_trace_event e;       /* the event loaded */
    uint64_t key;                     /* merge order: ticks */
    uint64_t lost_events, lost_words; /* lost just before e, to be told */
    unsigned ring;
    void *state; /* the backend's */
};

struct ember_source_ops {
    const char *name;
    /* Whether the file's first n bytes (all of them when the file is
     * shorter than 4096) are this format's, given its name. */
    bool (*probe)(const unsigned char *head, size_t n, const char *path);
    /* Whether a live file's header is complete (it may be written after
     * the file is created): 1 yes, 0 not yet, < 0 never (wrong format). */
    int (*ready)(int fd, const char *path);
    int (*open)(struct ember_trace *t, struct ember_diag *d);
    void (*close)(struct ember_trace *t);
    /* The end of every stream as it is now (following: new streams and
     * sites too). A pass uses the ends read at open. */
    int (*refresh)(struct ember_trace *t);
    int (*cursor_init)(struct ember_trace *t, struct ember_cursor *c);
    /* Loads the cursor's next event up to its stream's end: 1, 0 at the
     * end (for now), < 0 on error. */
    int (*cursor_next)(struct ember_trace *t, struct ember_cursor *c);
    void (*cursor_free)(struct ember_trace *t, struct ember_cursor *c);
    /* Before and after a pass: counts reset, then what only the end can
     * tell (drops, packets a log lacks). */
    void (*pass_begin)(struct ember_trace *t);
    void (*pass_end)(struct ember_trace *t);
    bool (*writer_alive)(const struct ember_trace *t);
    /* Optional: native CTF packets. */
    int (*each_packet)(struct ember_trace *t, ember_trace_packet_fn fn, void *ctx);
    /* Optional: recording while following. */
    int (*recorder_new)(struct ember_trace_recorder **r, struct ember_trace *t, int fd,
                        int scratch);
};

/* What a backend's recorder does (struct ember_trace_recorder is one of
 * these first, then the backend's state). */
struct ember_trace_recorder {
    int (*poll)(struct ember_trace_recorder *r, bool final);
    int (*finish)(struct ember_trace_recorder *r, int fd);
    void (*free)(struct ember_trace_recorder *r);
};

extern const struct ember_source_ops ember_rings_ops;
extern const struct ember_source_ops ember_ocaml_ops;

struct ember_trace {
    const struct ember_source_ops *ops;
    void *be; /* the backend's state */
    char name[256];
    int fd;
    bool live;
    uint64_t size; /* the file's size at open */
    /* what the accessors tell */
    enum ember_trace_format format;
    uint32_t pid;
    char exe[256];
    uint64_t ticks_per_sec, base_ticks, start_realtime;
    uint8_t uuid[16];
    bool cut_short;
    uint64_t expected;
    /* streams */
    struct ember_trace_ring *rings;
    unsigned nrings, rings_cap;
    /* sites: what ember_trace_site_at lists */
    const struct ember_trace_site **sites;
    unsigned nsites, sites_cap;
    int ocaml_names; /* 0: 5.0-5.2, 1: 5.3 and later */
    bool started;    /* a pass or poll has begun: names are fixed */
    /* following: the cursors, kept from poll to poll, and per stream the
     * events read but not handed out yet (timeline.c) */
    struct ember_cursor *cursors;
    struct ember_follow_queue *queues;
    unsigned ncursors;
    uint64_t seen_max;     /* the largest key read by the polls so far */
    uint64_t limit;        /* this poll hands out the keys up to it */
    struct ember_diag err; /* what stopped the last pass or poll */
};

/* Grows t->rings to n streams (new ones zeroed). */
int ember_source_rings(struct ember_trace *t, unsigned n);
/* Lists a site (ember_trace_site_at). */
int ember_source_add_site(struct ember_trace *t, const struct ember_trace_site *s);
/* Fills t->err: "not a valid ember trace|OCaml runtime_events file: ..."
 * and returns -EINVAL. */
int ember_source_corrupt(struct ember_trace *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Grows cs (*n cursors) to one per stream of t, the new ones initialized
 * at their stream's start (recorders and followers, as streams appear). */
int ember_source_grow_cursors(struct ember_trace *t, struct ember_cursor **cs, unsigned *n);
void ember_source_free_cursors(struct ember_trace *t, struct ember_cursor *cs, unsigned n);
/* Frees a follower's queues of events read but not handed out yet. */
void ember_source_free_queues(struct ember_follow_queue *qs, unsigned n);

/* Whether process pid runs (a zombie, ended but not yet reaped, does not:
 * it writes nothing more). */
bool ember_source_pid_alive(uint32_t pid);

#endif
