/*
 * heap_impl.h - the heap recording's reader, between its files
 * (library-internal to read/heap/): the input's bytes, records and the
 * windows they are read through (heap_file.c), one process file's index
 * (heap_index.c), the events merged in sequence order (heap_merge.c), the
 * values computed from them (heap_views.c), return addresses as frames
 * (heap_symbols.c), the format row (heap.c). A file is streamed: memory
 * grows with its streams, stacks, modules and live blocks; a pipe or gzip
 * has each process's records held in memory while it is read.
 *
 * Invariants: a record is decoded only from bytes below its chunk's
 * `used`, held by the view it is decoded from; errors name the input,
 * the process, the chunk and the byte offset in the input.
 */
#ifndef EMBER_READ_HEAP_HEAP_IMPL_H
#define EMBER_READ_HEAP_HEAP_IMPL_H

#include "ember/read.h"
#include "wire/heap_format.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A decoded record. */
struct heap_rec {
    enum ember_heap_tag tag;
    /* ALLOC, FREE; STACK: id in stack, frames in size, the first
     * address's offset in addr; MODULE: the body's offset in addr */
    uint64_t seq_delta, size, stack, addr;
    uint64_t time_ns;          /* TIME */
    uint64_t end_how, end_seq; /* END (its counter is decoded, not used) */
    size_t at;                 /* the record's offset in the process file */
};

/* A module as its MODULE record says: absolute ranges of its executable
 * segments, the bias subtracted from an address to get a file address. */
struct heap_module {
    uint64_t bias;
    uint8_t build_id[255];
    uint8_t build_id_len;
    uint64_t start, end; /* the lowest and highest segment bounds */
    uint64_t *segs;      /* start, end pairs */
    size_t nsegs;
    char *path; /* the module's own copy */
};

/* A thread's stream: its chunks in stream order. */
struct heap_stream {
    uint32_t *chunks;
    size_t n, cap;
};

/* One process file, indexed, with what the first pass collected. Records
 * are decoded at offsets into view, a window of the file's bytes that
 * begins at offset view_off. Read from a pipe or gzip, the file is held
 * in data (view = data, view_off 0): the header, then each chunk's header
 * and used bytes, at chunk_at[k]. Read from a file that can be read at any
 * place (src set), data holds nothing, chunk_at[k] is chunk k's offset in
 * the file, and a window (struct heap_win) holds the bytes being decoded. */
struct heap_proc {
    const char *input; /* the input's name, for messages */
    uint64_t base;     /* where the file starts in the input */
    struct ember_heap_header h;
    struct heap_src *src; /* set: the records are read in windows from src */
    uint8_t *data;
    size_t len, cap; /* len: the offsets' bound (data's, or the file's) */
    const uint8_t *view;
    size_t view_off, view_len;
    uint64_t *chunk_at;
    struct ember_heap_chunk *hdrs; /* the chunks' headers */
    size_t chunk_cap, hdr_cap;
    uint32_t nchunks; /* read so far, then all */
    struct heap_stream *streams;
    uint32_t nstreams;
    /* stacks by id (below nstacks): addrs[stack_at[id], + stack_n[id]);
     * stack_n UINT32_MAX for an id no STACK record defines */
    uint64_t *stack_at;
    uint32_t *stack_n;
    uint64_t nstacks, stack_cap;
    uint64_t *addrs;
    size_t naddrs, addr_cap;
    struct heap_module *mods;
    size_t nmods, mod_cap;
    bool ended; /* an END record was seen */
    uint64_t end_how;
};

/* The byte at offset pos of p's file, which p's view holds. */
static inline const uint8_t *heap_byte(const struct heap_proc *p, size_t pos)
{
    return p->view + (pos - p->view_off);
}

/* The bytes of the input, read in pieces. */
struct heap_src;
int heap_src_new(struct heap_src **s, struct ember_input *in);
void heap_src_free(struct heap_src *s);
/* Up to n bytes into dst: *got of them (fewer at the input's end). */
int heap_src_read(struct heap_src *s, uint8_t *dst, size_t n, size_t *got, struct ember_diag *d);
/* Bytes of the input consumed so far. */
uint64_t heap_src_offset(const struct heap_src *s);
/* Whether the input has a byte left (a process file follows). */
int heap_src_more(struct heap_src *s, bool *more, struct ember_diag *d);
/* Whether the input can be read at any place (a regular file, memory):
 * then heap_src_read reads past (dst NULL) without reading, and
 * heap_src_pread reads at an offset. */
bool heap_src_seekable(const struct heap_src *s);
int heap_src_pread(struct heap_src *s, uint8_t *dst, size_t n, uint64_t off, size_t *got,
                   struct ember_diag *d);

/* Reads the next process file of s into p (cleared first) and indexes it:
 * 1, 0 at the end of the input, or an error. */
int heap_proc_read(struct heap_proc *p, struct heap_src *s, struct ember_diag *d);
void heap_proc_release(struct heap_proc *p);

/* The error (-EINVAL) about the byte at offset at of p's file: "process
 * PID, chunk K (or: the header), byte OFF of the input: WHAT", at the
 * input's name. */
int heap_corrupt(const struct heap_proc *p, struct ember_diag *d, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The record at *pos, before end (a chunk's used bytes): 1 with *r and
 * *pos moved past it, 0 at the end of the chunk's records (its end, or
 * PAD), or an error. */
int heap_record_next(const struct heap_proc *p, size_t *pos, size_t end, struct heap_rec *r,
                     struct ember_diag *d);
/* A MODULE record's body at *pos (before end) into m (NULL: checked and
 * skipped); m->segs is the caller's to free. */
int heap_module_read(const struct heap_proc *p, size_t *pos, size_t end, struct heap_module *m,
                     struct ember_diag *d);
/* A window onto p's records: v is p with its view on the bytes read, at
 * most WINDOW (64 KiB) of them unless one record is larger (a MODULE);
 * for a file held in memory, v's view is p's data. Memory grows with the
 * largest record, never with the file. */
struct heap_win {
    struct heap_proc v;
    uint8_t *buf;
    size_t cap;
};
void heap_win_init(struct heap_win *w, const struct heap_proc *p);
void heap_win_release(struct heap_win *w);
/* heap_record_next over the window, which it moves as needed; a record's
 * body (a STACK's addresses, a MODULE) is in w->v's view until the next
 * call. */
int heap_win_next(struct heap_win *w, size_t *pos, size_t end, struct heap_rec *r,
                  struct ember_diag *d);
/* Where chunk k's records begin and end in the file. */
void heap_chunk_span(const struct heap_proc *p, uint32_t k, size_t *begin, size_t *end);
const struct ember_heap_chunk *heap_chunk(const struct heap_proc *p, uint32_t k);

/* ---- merging the streams (heap_merge.c) */

struct heap_event {
    bool alloc;
    uint64_t seq, size, stack, addr;
    uint64_t time_ns; /* since the process's start_mono_ns */
    uint32_t stream;
};
struct heap_merge;
int heap_merge_new(struct heap_merge **m, const struct heap_proc *p, struct ember_diag *d);
/* The next event in sequence order: 1, 0 when none is left, or an error. */
int heap_merge_next(struct heap_merge *m, struct heap_event *e, struct ember_diag *d);
void heap_merge_free(struct heap_merge *m);
/* The bytes the cursors' windows hold: at most 64 KiB (or a record) per
 * stream, whatever the number of events (test_read_heap.c checks it). */
size_t heap_merge_held(const struct heap_merge *m);

/* ---- the values (heap_views.c) */

enum heap_value {
    HEAP_ALLOC_OBJECTS,
    HEAP_ALLOC_SPACE,
    HEAP_INUSE_OBJECTS,
    HEAP_INUSE_SPACE,
    HEAP_PEAK,
    HEAP_LEAKED,
    HEAP_TEMPORARY,
    HEAP_VALUES
};
extern const char *const heap_value_names[HEAP_VALUES][2]; /* type, unit */

/* What reading one process found beside the values. */
struct heap_counts {
    uint64_t unknown_frees; /* frees of addresses never allocated */
    uint64_t missed_frees;  /* allocations at a live address */
    uint64_t last_ns;       /* the last event's time, from the process's start */
};

/* The window and the counter, in the recording's time: ns from the first
 * process's start; shift: this process's start in that time. */
struct heap_window {
    uint64_t from_ns, to_ns; /* to_ns 0: the end */
    uint64_t shift;
    struct ember_profile *prof;
    unsigned counter;
};

struct heap_views;
int heap_views_new(struct heap_views **v, const struct heap_proc *p, const struct heap_window *w);
int heap_views_event(struct heap_views *v, const struct heap_event *e);
/* After the last event: the values per stack id, rounded, into
 * out[id * HEAP_VALUES + value] (nstacks + 1 rows), and the counts. */
int heap_views_finish(struct heap_views *v, int64_t **out, struct heap_counts *c);
void heap_views_free(struct heap_views *v);

/* ---- frames (heap_symbols.c) */

struct heap_symbols;
int heap_symbols_new(struct heap_symbols **s, struct ember_profile *prof,
                     const struct ember_read_opts *o, const char *input);
void heap_symbols_free(struct heap_symbols *s);
/* The frames of stack id of p, outermost first, appended to *out (grown
 * as needed); the memo of addresses is p's until heap_symbols_reset. */
int heap_symbols_stack(struct heap_symbols *s, const struct heap_proc *p, uint64_t id,
                       uint32_t **out, size_t *n, size_t *cap);
void heap_symbols_reset(struct heap_symbols *s);

#endif
