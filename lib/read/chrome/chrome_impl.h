/*
 * chrome_impl.h - what the three files of the Chrome reader share
 * (library-internal): chrome.c parses the JSON, says which value goes where
 * and makes the result; trace_events.c nests trace events into stacks per
 * thread; cpuprofile.c builds the stacks of V8's CPU profiles.
 *
 * Invariants: one struct chrome_reader per input, zeroed when it starts;
 * the state of spans and of CPU profiles is kept by their own file, which
 * alone writes it (chrome.c only reads what the comments below say); the
 * parse (j: its errors), the read statistics and the label are shared; the
 * values of the event (or .cpuprofile part) being read wait in the capture
 * until it ends, and are then handed to trace_events.c or cpuprofile.c
 * (which may rewrite its values in place); stacks are
 * built in two scratch profiles (spans, CPU samples), each thread or CPU
 * profile under a placeholder frame (ember_chrome_add_placeholder) that
 * becomes its root frame, or goes, when the result is grafted.
 */
#ifndef EMBER_READ_CHROME_IMPL_H
#define EMBER_READ_CHROME_IMPL_H

#include "read/json.h"
#include "base/diag.h"
#include "base/strmap.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum {
    MAX_DEPTH = 32,
    MAX_TEXT = 4096,  /* longest name or id kept (longer ones are cut) */
    MAX_ID_TEXT = 64, /* pid, tid, profile id */
};

/* ---- where a value is (chrome.c's JSON paths) ------------------------------------- */

enum ctx {
    C_NONE,
    C_TOP,       /* {"traceEvents": ...} or a .cpuprofile */
    C_EVENTS,    /* the array of events */
    C_EVENT,     /* one event */
    C_ARGS,      /* its args */
    C_DATA,      /* args.data */
    C_CPU,       /* args.data.cpuProfile */
    C_NODES,     /* nodes: [...] */
    C_NODE,      /* one node */
    C_CALLFRAME, /* node.callFrame */
    C_CHILDREN,  /* node.children */
    C_SAMPLES,   /* samples: [...] */
    C_DELTAS,    /* timeDeltas: [...] */
    C_SKIP
};

enum key {
    K_OTHER,
    K_TRACE_EVENTS,
    K_NODES,
    K_SAMPLES,
    K_DELTAS,
    K_PH,
    K_NAME,
    K_TS,
    K_DUR,
    K_TDUR,
    K_PID,
    K_TID,
    K_ID,
    K_ARGS,
    K_DATA,
    K_CPU,
    K_PARENT,
    K_CHILDREN,
    K_CALLFRAME,
    K_FUNCTION,
    K_URL,
    K_LINE
};

/* ---- what the reader collects ----------------------------------------------------- */

/* A growing byte buffer for one value: NUL-terminated, at most MAX_TEXT
 * bytes; set says whether the current event has it. */
struct text {
    char *s;
    size_t len, cap;
    bool set;
};

/* The value, or "" if this event has none (the buffer is reused). */
static inline const char *text_or(const struct text *t)
{
    return t->set ? t->s : "";
}

#define text_is(t, word) text_equals((t), word, sizeof(word) - 1)
static inline bool text_equals(const struct text *t, const char *word, size_t len)
{
    return t->set && t->len == len && memcmp(t->s, word, len) == 0;
}

/* A CPU profile node as read: its name is names[name_off, + name_len) of
 * the capture; flags are cpuprofile.c's. */
struct cap_node {
    int64_t id, parent;
    bool has_id, has_parent;
    uint32_t name_off, name_len;
    uint32_t url_off, url_len; /* its callFrame's url (in names too), 0 long: none */
    uint32_t line;             /* its lineNumber + 1 (V8 counts from 0); 0: none */
    uint8_t flags;
};

/* The parts of the current event (or of a .cpuprofile) read so far.
 * chrome.c resets it (at each event's start) and fills the event's
 * fields; cpuprofile.c fills the CPU profile parts (node to deltas), which
 * hold what has not yet gone to a profile and are emptied when it goes. */
struct capture {
    char ph;
    struct text name, pid, tid, id, meta, fn, url;
    ember_fixed ts, dur, tdur;
    bool has_ts, has_dur, has_tdur, line_set;
    int64_t line;
    /* CPU profile parts */
    struct cap_node node;
    struct cap_node *nodes;
    size_t nnodes, ncap;
    char *names; /* node names, back to back */
    size_t names_len, names_cap;
    int64_t (*children)[2];                /* (parent id, child id) */
    size_t nchildren, ccap, node_children; /* the current node's start there */
    int64_t *samples, *deltas;
    size_t nsamples, scap, ndeltas, dcap;
};

struct trace_thread; /* trace_events.c's */
struct cpu_profile;  /* cpuprofile.c's */

struct chrome_reader {
    /* chrome.c's: the parse (shared: any file may fail it), the result and
     * its statistics, and the event being read */
    struct ember_json j;
    struct ember_profile *p;
    struct ember_read_stats *st;
    enum ctx ctx[MAX_DEPTH];
    enum key key[MAX_DEPTH];
    struct capture cap;
    bool top_object, saw_events;
    char label[600]; /* a root frame's name while grafting (by the other files) */
    /* trace_events.c's: each thread's spans under a placeholder frame
     * (chrome.c reads nthreads), and the names of threads */
    struct ember_profile *spans;
    struct ember_strmap thread_ids; /* "pid\x1ftid" -> thread index + 1 */
    struct trace_thread *threads;
    size_t nthreads, tcap, last_thread;
    struct ember_strmap process_names, thread_names; /* -> arena strings */
    bool warned_order;
    /* warnings about spans, given only if the spans are read (a trace with a
     * CPU profile is read as that profile) */
    struct ember_diag held[8];
    size_t nheld;
    uint64_t held_total;
    /* cpuprofile.c's: each CPU profile's samples under a placeholder frame
     * (chrome.c reads top_profile) */
    struct ember_profile *cpu;
    struct ember_strmap profile_ids; /* "pid\x1fid" -> profile index + 1 */
    struct cpu_profile *profiles;
    size_t nprofiles, pcap;
    int top_profile; /* the .cpuprofile's, -1 if none */
};

/* ---- chrome.c: helpers of both kinds of stacks -------------------------------------- */

/* Adds ns nanoseconds, as µs, to node of t (counted as a sample of the
 * input); nothing if ns <= 0 or node is the root. 0 or an error code. */
int ember_chrome_add_weight(struct chrome_reader *r, struct ember_profile *t, uint32_t node,
                            int64_t ns);
/* "a\x1fb" in buf (cut to size): the key of a thread (pid, tid) or of a
 * profile (pid, id). Returns its length. */
size_t ember_chrome_pair_key(char *buf, size_t size, const char *a, const char *b);
/* The node under which thread or profile number k builds its stacks in t:
 * a placeholder frame under the root. */
int ember_chrome_add_placeholder(struct ember_profile *t, size_t k, uint32_t *node);
/* Placeholder k: its number, or -1 if name is not a placeholder. */
long ember_chrome_read_placeholder(const char *name, size_t len);

/* ---- trace_events.c: spans per thread, and thread names ------------------------------ */

/* All return 0 or a negative error code, except label. */

int ember_trace_events_init(struct chrome_reader *r);
/* An event that is not a CPU profile's: "X", "B" and "E" spans, "M" thread
 * names (other phases are ignored). 0 or an error code. */
int ember_trace_events_add(struct chrome_reader *r, struct capture *c);
/* Closes what every thread still has open (the input has ended). */
int ember_trace_events_finish(struct chrome_reader *r);
/* Makes the spans the result: their warnings, then their stacks under a
 * root frame per thread. */
int ember_trace_events_graft(struct chrome_reader *r);
/* What speedscope calls thread (pid, tid), as a frame name in buf (cut to
 * size). Returns its length. */
int ember_trace_events_label(struct chrome_reader *r, const char *pid, const char *tid, char *buf,
                             size_t size);
void ember_trace_events_release(struct chrome_reader *r);

/* ---- cpuprofile.c: V8's CPU profiles ---------------------------------------------------
 * What the JSON callbacks call (number, end_node, add_event, add_part)
 * returns as they do: 1 to go on, 0 to stop (r->j has the error); the
 * others return 0 or a negative error code (weighed: a count). */

int ember_cpuprofile_init(struct chrome_reader *r);
/* A number at key k in context c, if it is a CPU profile's (node ids,
 * samples...): kept in the capture. -1 if it is not a CPU profile's. */
int ember_cpuprofile_number(struct chrome_reader *r, enum ctx c, enum key k, const char *s,
                            size_t n);
/* The node being captured has ended: named, and kept in the capture. */
int ember_cpuprofile_end_node(struct chrome_reader *r);
/* A Profile, ProfileChunk or CpuProfile event: what it holds goes to its
 * profile. */
int ember_cpuprofile_add_event(struct chrome_reader *r, struct capture *c);
/* The nodes (nodes: true), samples or timeDeltas of a .cpuprofile have
 * ended: they go to its profile. */
int ember_cpuprofile_add_part(struct chrome_reader *r, bool nodes);
/* Ends each profile's last run (the input has ended). 0 or an error code. */
int ember_cpuprofile_finish(struct chrome_reader *r);
/* How many CPU profiles have weights (none: the result is the spans). */
size_t ember_cpuprofile_weighed(const struct chrome_reader *r);
/* Makes the CPU profiles the result: a root frame each, named after its
 * thread, when several have weights; none otherwise. */
int ember_cpuprofile_graft(struct chrome_reader *r);
void ember_cpuprofile_release(struct chrome_reader *r);

#endif
