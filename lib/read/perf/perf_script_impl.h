/*
 * perf_script_impl.h - what the files of the `perf script` reader share
 * (library-internal): the parser's state, the line cache's layout, the
 * pieces of a line, and the functions each file lends the others.
 *
 * perf_script.c drives (lines to samples), perf_script_lines.c reads a
 * line's syntax, perf_script_frames.c names a frame line (through the line
 * cache), perf_script_samples.c starts and ends samples (and --srcline's
 * pending frames), perf_script_threads.c reads with several threads.
 *
 * Invariants: a parser is used by one thread; the stack holds the current
 * sample's frames leaf-first; a cached line's result depends only on its
 * key (see struct line_key).
 */
#ifndef EMBER_READ_PERF_SCRIPT_IMPL_H
#define EMBER_READ_PERF_SCRIPT_IMPL_H

#include "ember/read.h"
#include "ember/model.h"
#include "base/chunk.h"
#include "read/perf/perf_opts.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ember_symbolizer;

/* A frame line's result depends only on its symbol (without "+0x" offset),
 * its module, whether the process is Java, and for unresolved symbols with
 * --addrs, its address. The cache identifies a line by two independent
 * 64-bit hashes, of the symbol and of the module (and address): a false hit
 * would need both to collide, about 2^-100 for a million distinct lines,
 * far below the odds of a memory error. That keeps it at 24 bytes a line
 * and spares a comparison of strings that are rarely in cache. */
struct line_key {
    const char *sym, *mod, *pc;
    size_t sym_len, mod_len, pc_len;
    bool java;
};

/* A slot: the two hashes (the second cut to 32 bits: 96 bits in all) and the
 * result: a frame id + 1 for the common one-frame line, else LINE_LIST | an
 * index in lists. 16 bytes, so that large tables stay in cache. */
enum { LINE_LIST = 1u << 31 };

struct line_slot {
    uint64_t lo;
    uint32_t hi;
    uint32_t value; /* 0: empty slot */
};

struct line_list {
    uint32_t offset, count; /* in frames */
    bool unknown;           /* symbol and module both unknown: no srcline follows */
};

struct line_cache {
    struct line_slot *slots;
    uint32_t mask, count;
    struct line_list *lists; /* results other than one known frame */
    size_t nlists, lcap;
    uint32_t *frames;
    size_t nframes, fcap;
};

struct pending_frame { /* --srcline: frames waiting for their source line */
    bool active;
    uint32_t *ids;
    size_t n, cap;
    char *join; /* scratch for "name:location" */
    size_t jcap;
};

/* The periods' value while reading; named by ember_perf_set_unit at the end. */
#define PERIOD_VALUE "ember-perf-period"

struct perf_parser {
    const struct ember_read_opts *o;
    struct ember_perf_opts po; /* o's perf options */
    struct ember_profile *p;
    struct ember_read_stats *st;
    const char *file;
    /* The current line's number, counted from `origin` (the byte offset of
     * the line numbered 1 when lines_before is set, else 0): a thread
     * reading a range of a file counts its lines only, and the lines
     * before the range only when a message needs them. */
    uint64_t line;
    uint64_t origin;
    uint64_t (*lines_before)(void *ctx, uint64_t origin);
    void *lines_ctx;
    uint64_t other_origin, other_line; /* where st->other_event was first seen */

    /* the event filter: fixed up front, or the first event seen */
    char filter[128];
    size_t filter_len;
    bool have_filter;

    /* the sample being read */
    bool in_sample; /* an event line was seen and no blank line yet */
    bool keep;      /* ... and it passed the filter */
    bool java;
    uint32_t root;
    int64_t period;
    bool weighed;               /* some sample kept had a period: weights are the event's count */
    unsigned vsamples, vperiod; /* the values: samples, and the periods' sum */
    uint32_t *stack;            /* frames, leaf-first, each line's group reversed */
    size_t nstack, scap;

    struct line_cache cache;
    struct pending_frame pend;
    struct ember_symbolizer *sym;

    char placed_mod[256]; /* --addresses: the last module interned, and its id */
    size_t placed_mod_len;
    uint32_t placed_mod_id;
    char last_mod[256]; /* the last module hashed, and its hash */
    size_t last_mod_len;
    uint64_t last_mod_hash;

    char *buf; /* scratch for building names */
    size_t bcap;
    uint32_t *fr; /* scratch for one line's frames */
    size_t frcap;
    struct ember_diag *d;
};

static inline bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

static inline bool is_word(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static inline bool is_lower_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static inline bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* ---- event and frame lines (perf_script_lines.c) ---------------------- */

struct event_head {
    const char *comm, *pid, *tid, *rest;
    size_t comm_len, pid_len, tid_len, rest_len;
};

struct frame_line {
    const char *pc, *func, *mod;
    size_t pc_len, func_len, mod_len;
};

/* "comm pid[/tid] ..." where comm may hold spaces: the comm ends at the first
 * whitespace run followed by digits, an optional "/digits", and whitespace. */
bool ember_perf_event_head(const char *s, size_t n, struct event_head *ev);
/* Does what follows "comm pid" still make an event line without "EVENT:"? */
bool ember_perf_bare_event_rest(const char *s, size_t n);
/* The line's "EVENT:" and the period before it (0: none). */
bool ember_perf_event_name(const char *s, size_t n, const char **ev, size_t *evlen,
                           int64_t *period);
/* A frame line whose address is [i, j) into f. */
bool ember_perf_frame_at(const char *s, size_t n, size_t i, size_t j, struct frame_line *f);
/* The script's "^\s*(\w+)": the address is [*i, *j). */
void ember_perf_scan_address(const char *s, size_t n, size_t *i, size_t *j);
bool ember_perf_parse_frame(const char *s, size_t n, struct frame_line *f);
/* Where an event line's frame starts ("comm pid time: 1 cycles: ffff sym
 * (mod)"); NULL if it carries none. */
const char *ember_perf_combined_split(const struct event_head *ev);

/* ---- frames (perf_script_frames.c) ------------------------------------ */

int ember_perf_buf_reserve(struct perf_parser *ps, size_t n);
int ember_perf_cache_init(struct line_cache *c);
void ember_perf_cache_release(struct line_cache *c);
/* A frame line in a kept sample; [i, j) is its first word (the address). */
int ember_perf_on_frame_at(struct perf_parser *ps, const char *s, size_t n, size_t i, size_t j);

/* ---- samples (perf_script_samples.c) ---------------------------------- */

/* Pushes a line's frames (written root-most first) onto the stack. */
int ember_perf_push_frames(struct perf_parser *ps, const uint32_t *fr, size_t n);
/* Ends the current sample: its frames from the leaf, then the root frame. */
int ember_perf_end_sample(struct perf_parser *ps);
/* Copies [s, s + n) into dst as a string, cut to fit cap. */
void ember_perf_copy_name(char *dst, size_t cap, const char *s, size_t n);
/* An event line [line, line + len): ends the sample before, starts one. */
int ember_perf_start_sample(struct perf_parser *ps, const struct event_head *ev, const char *line,
                            size_t len);
/* --srcline: the line after a frame is its source location. */
int ember_perf_finish_pending(struct perf_parser *ps, const char *s, size_t n);
/* --srcline: holds a line's frames until its source location is read. */
int ember_perf_defer_srcline(struct perf_parser *ps, const uint32_t *fr, size_t n);

/* ---- the driver (perf_script.c) --------------------------------------- */

/* Does the line s (without its '\n') start a sample, whatever came before
 * it: an event line at column 0, where one thread reading it all ends the
 * sample before it (so a thread may start there with a fresh parser)? */
bool ember_perf_starts_sample(const char *s, size_t n);
/* The current line's number in the input, for a message. */
uint64_t ember_perf_line(const struct perf_parser *ps);
/* Counts a skipped line, and tells of it when o->warn is set. */
void ember_perf_warn_line(struct perf_parser *ps, const char *s, size_t n, const char *what);
int ember_perf_parser_init(struct perf_parser *ps, struct ember_profile *p,
                           const struct ember_read_opts *o, struct ember_read_stats *st,
                           const char *file, struct ember_diag *d);
void ember_perf_parser_release(struct perf_parser *ps);
/* Ends the input: a pending --srcline frame, then the last sample. */
int ember_perf_parser_finish(struct perf_parser *ps);
int ember_perf_parse_chunk(struct perf_parser *ps, const struct ember_chunk *c);
/* Names the values once the event is known. */
void ember_perf_set_unit(struct ember_profile *p, const char *event, bool weighed);

/* ---- a thread's byte ranges (perf_script_ranges.c) -------------------- */

struct perf_ranges {
    struct ember_input *in; /* seekable (ember_input_seekable) */
    uint64_t size;
    struct ember_chunk c; /* the lines being parsed */
    char *win;            /* scratch: where samples start, lines counted */
    size_t wcap;
    uint64_t known_off, known_lines; /* known_lines '\n' before known_off */
};

void ember_perf_ranges_init(struct perf_ranges *rr, struct ember_input *in);
void ember_perf_ranges_release(struct perf_ranges *rr);
/* Parses the samples that start in the input's bytes [r, e) (reading on
 * past e to the end of the last one), then ends the parser's input; *read:
 * the bytes parsed. */
int ember_perf_parse_range(struct perf_ranges *rr, struct perf_parser *ps, uint64_t r, uint64_t e,
                           uint64_t *read);

/* ---- threads (perf_script_threads.c) ---------------------------------- */

/* The first event named in the input's first bytes, into out. */
bool ember_perf_first_event(struct ember_input *in, char *out, size_t cap, struct ember_diag *d);
/* Reads with o->threads parsers, each keeping the one event filter; a
 * seekable input in byte ranges of `range` bytes (PERF_SCRIPT_RANGE, or
 * less in tests: every byte may start a range). */
int ember_perf_read_threaded(struct ember_profile *p, struct ember_input *in,
                             const struct ember_read_opts *o, struct ember_read_stats *st,
                             struct ember_diag *d, const char *filter, uint64_t range);

/* 1 MiB: 16 threads share a 100 MB input evenly, and what each range costs
 * besides its text (finding where its samples start: reads of 4 KiB) stays
 * well under 1%. */
#define PERF_SCRIPT_RANGE ((uint64_t)1 << 20)

#endif
