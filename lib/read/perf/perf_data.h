/*
 * perf_data.h - the pieces of the perf.data reader and what they share
 * (library-internal).
 *
 * perf_data_stream.c the input as bytes at offsets, each record whole
 * perf_data_ahead.c  the input's chunks read ahead on threads (-j 2 and more),
 *                    their records framed there (perf_data_rounds.c's framer)
 * perf_data_file.c   the file: header, attributes, records
 * perf_data_sample.c the layout of a sample
 * perf_reader.c      the records, in time order, to a table of callbacks
 * perf_data_features.c the feature sections after the data (build-ids, names)
 * perf_data_order.c  records delivered in time order, as perf sorts them, with
 *                    perf_data_rounds.c, rounds sorted on threads (perf_order.h)
 * perf_data_tasks.c  threads, their names and memory maps, as perf tracks them
 * perf_data_names.c  an address in a map -> the frames perf script would print
 *                    (symbols from lib/symbol: dso.h, kallsyms.h), the kernel's
 *                    read on a thread of their own by perf_data_kernel.c
 * perf_data_unwind.c DWARF call graphs: the reader's glue to symbol/unwind.h
 * perf_data_values.c the event kept and the values its samples weigh
 * perf_data.c        the format's row: the reader's records -> the profile,
 *                    with perf_data_stacks.c and perf_data_place.c (perf_data_build.h),
 *                    and perf_data_jobs.c, DWARF samples unwound on threads (-j 2+)
 *
 * The file is read as a stream (ember_input: a file, standard input, gzip),
 * once, front to back; memory grows with distinct stacks, never with samples.
 * Everything read from the file is untrusted: every length is checked
 * against the bytes that hold it before anything is read through it.
 */
#ifndef EMBER_READ_PERF_DATA_H
#define EMBER_READ_PERF_DATA_H

#include "ember/read.h"
#include "wire/perf_data_format.h"
#include "read/perf/perf_opts.h"
#include "base/chunk.h"
#include "base/u64map.h"
#include "base/arena.h"

#include <limits.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t pd_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint32_t pd_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint16_t pd_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* ---- the stream (perf_data_stream.c) ------------------------------------ */

/* The input's chunks: a fuzzing build's are small, so that its small
 * inputs cross chunks, read ahead on threads and framed there. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
enum { PD_CHUNK = 4 << 10 };
#else
enum { PD_CHUNK = 1 << 20 };
#endif

/* A kernel record framed where it lies (perf_data_rounds.c): its header
 * and time read by the thread that read its chunk, or by the reading
 * thread. */
struct pd_frame {
    const uint8_t *p; /* where it is pinned, or NULL: the round's next copy */
    uint64_t time;
    uint32_t type;
    uint16_t size, misc;
};
/* A chunk's records framed ahead, in file order: each one wholly in it,
 * perf's own among them (time 0, their places in own), up to where the
 * chain stops. */
struct pd_frames {
    struct pd_frame *at;
    size_t n, cap;
    size_t *own; /* at[own[i]] is one of perf's own records, in order */
    size_t nown, ocap;
};
void pd_frames_free(struct pd_frames *fr);
/* A chunk's buffer with its frames: rounds point into both while its
 * records are pinned (the stream's spare buffers). */
struct pd_buffer {
    struct ember_chunk c;
    struct pd_frames fr;
};
/* Where the records stand at a chunk's start, as they are framed ahead:
 * the next one starts at file offset next, its header's first ntail bytes
 * in tail where the last chunk cut it; stop: none is framed from here on
 * (the data's end, a record the reading thread must read first, a broken
 * size). */
struct pd_chain {
    uint64_t next;
    uint8_t tail[8];
    uint8_t ntail;
    bool stop;
};
/* Frames the records of len bytes at p, the input's from file offset at
 * (out NULL: only follows the chain), on the thread that read them; ctx
 * is read, never written, while the chunks are framed. */
struct pd_framer {
    void (*frame)(const void *ctx, const uint8_t *p, size_t len, uint64_t at, struct pd_chain *c,
                  struct pd_frames *out);
    const void *ctx;
};

/* The input as bytes at offsets: a record is handed out whole and
 * contiguous (copied only when it straddles two chunks). */
struct pd_stream {
    struct ember_input *in;
    const char *name;
    struct ember_chunk chunk; /* the current chunk, read from pos */
    size_t pos;
    uint8_t *join; /* bytes that straddle chunks, gathered: they come first */
    size_t jlen, jcap;
    size_t jdrop;    /* bytes at join's front handed out, dropped at the next call */
    uint64_t offset; /* file offset of the next byte */
    bool eof;
    struct pd_ahead *ahead;  /* chunks read on a thread of their own, or NULL */
    struct pd_frames framed; /* the current chunk's records framed ahead, from fcur */
    size_t fcur, ocur;       /* and framed.own's first from fcur on */
    /* chunks that queued records point into (pd_stream_pin) */
    uint64_t chunk_id;    /* the current chunk's number */
    size_t chunk_pins;    /* records in it still queued */
    struct pd_held *held; /* earlier chunks still pinned, by number */
    size_t nheld, hcap;
    struct pd_buffer *spare; /* buffers to read into again */
    size_t nspare, spcap;
};

/* ---- what the file says (perf_data_file.c) ------------------------------ */

/* One event (perf's evsel): its attributes and the ids of its samples. */
struct pd_attr {
    uint32_t type;
    uint64_t config, sample_type, read_format, sample_regs_user, branch_sample_type;
    uint64_t sample_period;
    uint32_t sample_stack_user;
    bool sample_id_all, freq, exclude_kernel;
    char name[128]; /* as perf script prints it ("cpu-clock:ppp") */
};

struct pd_build_id {
    const char *path; /* in the file's arena */
    uint8_t bits[PD_BUILD_ID_MAX];
    uint8_t size;
    bool kernel; /* recorded for the kernel or a kernel module */
};

struct pd_file {
    const char *name;
    bool pipe;
    uint64_t data_offset, data_size;
    uint8_t features[PD_FEAT_BITS / 8];
    struct pd_attr *attrs;
    size_t nattrs, acap;
    struct ember_u64map ids; /* sample id -> attr index */
    int id_pos, is_pos;      /* perf's positions of the id in samples / other records */
    struct pd_build_id *bids;
    size_t nbids, bcap;
    char arch[32];     /* HEADER_ARCH: uname -m where it was recorded; "" unknown */
    uint64_t time_end; /* HEADER_SAMPLE_TIME's last time; 0: none */
    struct ember_arena arena;
};

/* A record of the data section, whole. */
struct pd_record {
    const uint8_t *data; /* header included */
    uint32_t type, size;
    uint16_t misc;
    uint64_t offset; /* in the file */
    uint64_t chunk1; /* the stream's chunk it is pinned in + 1; 0: none (pd_reader_hold) */
};

/* A sample, decoded (pointers into its record). Its period is perf's
 * (evsel__parse_sample): the field, else the event's fixed period (perf
 * record -c, a period= term); none in frequency mode without the field. */
struct pd_sample {
    uint64_t ip, time, id, period;
    uint32_t pid, tid;
    uint8_t cpumode;
    bool has_time, has_period;
    const uint8_t *chain; /* nchain u64s, or NULL */
    uint64_t nchain;
    const uint8_t *regs; /* nregs u64s in the mask's bit order, or NULL */
    uint64_t regs_mask;
    unsigned nregs;
    const uint8_t *stack; /* the copied user stack (its dynamic size), or NULL */
    uint64_t stack_size;
};

void pd_stream_init(struct pd_stream *s, struct ember_input *in);
void pd_stream_release(struct pd_stream *s);
/* The next n bytes, contiguous, without consuming them: 0, or the
 * truncation error (d names what was being read: inside). */
int pd_stream_peek(struct pd_stream *s, size_t n, const uint8_t **p, const char *inside,
                   struct ember_diag *d);
int pd_stream_read(struct pd_stream *s, size_t n, const uint8_t **p, const char *inside,
                   struct ember_diag *d);
int pd_stream_skip(struct pd_stream *s, uint64_t n, const char *inside, struct ember_diag *d);
/* From here on, the input's chunks read ahead on up to readers threads of
 * their own (4 at most), the stream's thread calling progress(ctx) after
 * taking each: for a regular file or memory, read at any offset; with no
 * reader, elsewhere, or without a thread, nothing changes. With a framer,
 * each chunk's records are framed too, in order, on the thread that read
 * it, from the record at the stream's offset on. 0 or -ENOMEM. */
int pd_stream_read_ahead(struct pd_stream *s, unsigned readers, const struct pd_framer *framer,
                         void (*progress)(void *ctx), void *ctx);
/* The reading threads joined (also done by pd_stream_release): no thread
 * touches the input any more, the stream reads on as before; the current
 * chunk's frames let go (no round may point into them any more). */
void pd_stream_stop_ahead(struct pd_stream *s);
/* The threads' side (perf_data_ahead.c): started at the input's offset
 * base (*a NULL without a thread), its records framed from chain on where
 * there is a framer (NULL: none); the next chunk into c and its records
 * framed into fr (whose buffers are given back: 1, 0 at the input's end,
 * or its error), the threads joined (chunks read on the caller's thread
 * from then on, none framed), freed. */
struct pd_ahead;
int pd_ahead_start(struct pd_ahead **a, struct ember_input *in, uint64_t base, unsigned readers,
                   const struct pd_framer *framer, const struct pd_chain *chain,
                   void (*progress)(void *ctx), void *ctx);
int pd_ahead_next(struct pd_ahead *a, struct ember_chunk *c, struct pd_frames *fr,
                  struct ember_diag *d);
void pd_ahead_stop(struct pd_ahead *a);
void pd_ahead_free(struct pd_ahead *a);
/* Whether the next n bytes are at hand, contiguous, without reading. */
static inline bool pd_stream_has(const struct pd_stream *s, size_t n)
{
    return s->jlen == 0 && s->chunk.len - s->pos >= n;
}
/* Keeps the n bytes at p, just read, where they are until released
 * (*chunk names them): true when they lie in one chunk, false when the
 * stream gathered them (the caller copies them). Saves copying each queued
 * record: a DWARF sample is 8 KiB. */
bool pd_stream_pin(struct pd_stream *s, const uint8_t *p, size_t n, uint64_t *chunk);
/* The bytes at hand, contiguous in the current chunk (*chunk), without
 * reading: *n of them, or NULL where there are none or bytes are gathered.
 * Taking n of them moves the stream past them, pins of them pinned. */
const uint8_t *pd_stream_at_hand(struct pd_stream *s, size_t *n, uint64_t *chunk);
void pd_stream_take(struct pd_stream *s, size_t n, size_t pins);
/* The records from p (at hand) on as framed ahead, up to the first of
 * perf's own (not included): *n of them, in file order, or NULL where p's
 * was not. They stay where they are while any of them is pinned. */
const struct pd_frame *pd_stream_framed(struct pd_stream *s, const uint8_t *p, size_t *n);
/* pd_stream_take of the first k of those, each pinned: n bytes. */
void pd_stream_take_framed(struct pd_stream *s, size_t n, size_t k);
/* n pins on chunk let go. */
void pd_stream_unpin(struct pd_stream *s, uint64_t chunk, size_t n);
/* One more pin on a chunk pinned now. */
void pd_stream_repin(struct pd_stream *s, uint64_t chunk);
/* Frees the buffers no record points into any more (at the data's end). */
void pd_stream_drop_spare(struct pd_stream *s);
/* 1 when no byte is left, 0 when one is, or an error. */
int pd_stream_at_end(struct pd_stream *s, struct ember_diag *d);

void pd_file_init(struct pd_file *f, const char *name);
void pd_file_release(struct pd_file *f);
/* The header and everything before the data section (attributes and their
 * ids); leaves s at the first record. */
int pd_file_read_header(struct pd_file *f, struct pd_stream *s, struct ember_diag *d);
/* The feature sections after the data section, s just past the data
 * (perf_data_features.c). */
int pd_file_read_features(struct pd_file *f, struct pd_stream *s, struct ember_diag *d);
/* Feature section bit, whole (len bytes): those ember uses are kept. */
int pd_file_feature(struct pd_file *f, unsigned bit, const uint8_t *p, size_t len,
                    struct ember_diag *d);
/* 0, or -ENOTSUP when the file was recorded on an architecture whose
 * registers the unwinder does not know: for a file with DWARF call graphs
 * (samples whose user frames only unwinding gives). */
int pd_file_check_arch(const struct pd_file *f, struct ember_diag *d);
/* One build-id entry (HEADER_BUILD_ID) of len bytes at most: *used of them. */
int pd_file_build_id_entry(struct pd_file *f, const uint8_t *p, size_t len, size_t *used);
/* The next record, or 1 at the end of the data (0: *r filled). */
int pd_file_next_record(struct pd_file *f, struct pd_stream *s, struct pd_record *r,
                        struct ember_diag *d);
/* perf's own records (types from 64), which describe the file: attributes,
 * build-ids and names in pipe mode. */
int pd_file_user_record(struct pd_file *f, const struct pd_record *r, struct ember_diag *d);
/* The event a record belongs to, or -1 (unknown id). */
int pd_file_attr_of(const struct pd_file *f, const struct pd_record *r);
/* The timestamp of a kernel record: 0 when it has none. */
uint64_t pd_file_time_of(const struct pd_file *f, const struct pd_record *r);
/* The thread of a record other than a sample, from its sample_id
 * trailer: false when it has none. */
bool pd_file_tid_of(const struct pd_file *f, const struct pd_record *r, uint32_t *pid,
                    uint32_t *tid);
int pd_file_parse_sample(const struct pd_file *f, const struct pd_attr *a,
                         const struct pd_record *r, struct pd_sample *out, struct ember_diag *d);
/* The pid/tid a non-sample record carries in its sample_id trailer. */
const struct pd_build_id *pd_file_build_id(const struct pd_file *f, const char *path, bool kernel);
/* perf's name of a record type, as perf report -D prints it ("MMAP2",
 * "FINISHED_ROUND"), or "unknown". */
const char *pd_record_name(uint32_t type);
/* "corrupt perf.data: ..." of the file as a whole. */
int pd_bad_file(struct ember_diag *d, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "corrupt perf.data: ..." at a record. */
int pd_corrupt(struct ember_diag *d, const char *file, const struct pd_record *r, const char *fmt,
               ...) __attribute__((format(printf, 4, 5)));

/* ---- what a map's name says (perf_data_mapname.c) ----------------------- */

/* The kernel's text ("[kernel.kallsyms]..."). */
bool pd_mapname_is_kernel(const char *s, size_t n);
/* A kernel module's name as perf prints it ("[xfs]" for .../xfs.ko.xz),
 * into out (cap > 2): its length. */
size_t pd_mapname_module(const char *path, size_t n, char *out, size_t cap);
/* perf's is_anon_memory: //anon, /dev/zero, /anon_hugepage. */
bool pd_mapname_is_anon(const char *s, size_t n);
/* perf's is_no_dso_memory: [stack..., /SYSV..., [heap]. */
bool pd_mapname_is_no_dso(const char *s, size_t n);
/* Memory no file backs, which has no symbols to read nor warn about. */
bool pd_mapname_is_memory(const char *s, size_t n);

/* ---- threads and maps (perf_data_tasks.c) ------------------------------- */

/* A file mapped somewhere, as perf names it (its dso). */
enum pd_dso_kind {
    PD_DSO_FILE,   /* an ELF file at path */
    PD_DSO_KERNEL, /* [kernel.kallsyms] */
    PD_DSO_MODULE, /* a kernel module, "[name]" */
    PD_DSO_VDSO,   /* [vdso] */
    PD_DSO_JIT,    /* /tmp/perf-PID.map for anonymous executable memory */
    PD_DSO_BPF,    /* a BPF program (KSYMBOL): one symbol, its name */
    PD_DSO_MEMORY, /* no file (//anon, [stack], [heap], [anon:x], /memfd:x...): no symbols */
};

struct pd_dso {
    const char *name; /* as perf script prints it */
    size_t name_len;
    enum pd_dso_kind kind;
    uint32_t pid; /* JIT: whose map file */
};

/* A mapping: addresses [start, end) of a dso; pgoff is perf's (map_ip =
 * address - start + pgoff; identity maps have start == pgoff). */
struct pd_map {
    uint64_t start, end, pgoff;
    uint32_t dso;
    uint32_t ref; /* the reader's number for it; 0 until given (a cut map gets 0) */
};

struct pd_tasks;
/* The process of a thread whose pid is not known yet. */
#define PD_NO_PROCESS UINT32_MAX

int pd_tasks_new(struct pd_tasks **t);
void pd_tasks_free(struct pd_tasks *t);
/* The records that change threads and maps. */
int pd_tasks_record(struct pd_tasks *t, const struct pd_file *f, const struct pd_record *r,
                    struct ember_diag *d);
/* The thread of a sample (created as perf does when unseen): its process
 * and current name; the sample counts for its process. */
int pd_tasks_thread(struct pd_tasks *t, uint32_t pid, uint32_t tid, uint32_t *process,
                    const char **comm, size_t *comm_len);
/* pd_tasks_thread without a change: 1 where the thread is known and
 * nothing the sample says is new of it (the tasks read only, so several
 * threads may ask at once), else 0; the sample is not counted. */
int pd_tasks_thread_known(const struct pd_tasks *t, uint32_t pid, uint32_t tid, uint32_t *process,
                          const char **comm, size_t *comm_len);
/* n samples of process counted, as pd_tasks_thread counts each. */
void pd_tasks_count_samples(struct pd_tasks *t, uint32_t process, uint64_t n);
/* The map holding addr for a cpumode (PERF_RECORD_MISC_KERNEL or _USER),
 * or NULL. *generation changes whenever the process's maps do. */
struct pd_map *pd_tasks_find_map(struct pd_tasks *t, uint32_t process, uint8_t cpumode,
                                 uint64_t addr);
uint64_t pd_tasks_generation(const struct pd_tasks *t, uint32_t process);
const struct pd_dso *pd_tasks_dso(const struct pd_tasks *t, uint32_t dso);
uint32_t pd_tasks_dso_count(const struct pd_tasks *t);
uint32_t pd_tasks_pid(const struct pd_tasks *t, uint32_t process);
/* The map of the executable of the process with the most samples (among
 * those whose executable is known: the first file mapped executable after
 * its exec, or ever for a process already running): false when none. */
bool pd_tasks_main_exe(const struct pd_tasks *t, struct pd_map *exe);
/* Whether the kernel's map was recorded, and where the kernel's _text was. */
bool pd_tasks_kernel_text(const struct pd_tasks *t, uint64_t *text);

/* ---- DWARF call graphs (perf_data_unwind.c) ----------------------------- */

struct pd_unwind;

int pd_unwind_new(struct pd_unwind **u, struct pd_tasks *t);
void pd_unwind_free(struct pd_unwind *u);
/* The user frames of a sample with user registers and stack, unwound in
 * its process's maps: ips[0, *n), leaf first, *n <= max; none without
 * registers. 0 or -ENOMEM. */
int pd_unwind_sample(struct pd_unwind *u, uint32_t process, const struct pd_sample *s,
                     uint64_t *ips, size_t max, size_t *n);
/* The same by the compiled CFI rows alone (ember_unwind_frames_fast):
 * 1 (and *n 0) where libdwfl must unwind it, through pd_unwind_sample.
 * Unwinders on several threads share the tasks, which must not change
 * while they run. */
int pd_unwind_sample_fast(struct pd_unwind *u, uint32_t process, const struct pd_sample *s,
                          uint64_t *ips, size_t max, size_t *n);
/* The unwinder itself (symbol/unwind.h: the tests compare its two ways). */
struct ember_unwind *pd_unwind_engine(struct pd_unwind *u);

/* ---- the caller fp walks skip (perf_data_leaf.c) -------------------------- */

struct pd_leaf;
int pd_leaf_new(struct pd_leaf **out);
void pd_leaf_free(struct pd_leaf *l);
/* For a user pc ip in map m and the stack copied from SP: 1 with *ret the
 * return address of a frame not set up on the frame pointer, 0 when there
 * is none (or the file cannot tell), -ENOMEM. */
int pd_leaf_caller(struct pd_leaf *l, const struct pd_tasks *t, const struct pd_map *m, uint64_t ip,
                   const uint8_t *stack, size_t len, uint64_t *ret);

/* ---- off-CPU time (perf_data_offcpu.c) ---------------------------------- */

/* A thread's time away: from its switch-out to its switch-in, under the
 * stack of its last context-switch sample (a raw node of the reader). */
struct pd_offcpu_interval {
    uint32_t node, pid, tid;
    bool preempted; /* switched out still runnable, not blocked */
    uint64_t start, ns;
};

struct pd_offcpu;
int pd_offcpu_new(struct pd_offcpu **out);
void pd_offcpu_free(struct pd_offcpu *o);
/* Is attribute a the kernel's context-switches event? */
bool pd_offcpu_is_switches(const struct pd_attr *a);
/* A context-switch sample of tid: where it is about to block. */
int pd_offcpu_stack(struct pd_offcpu *o, uint32_t pid, uint32_t tid, uint32_t node);
/* A PERF_RECORD_SWITCH(_CPU_WIDE) of tid at time: 1 with *iv when it ends
 * an interval, else 0. */
int pd_offcpu_switch(struct pd_offcpu *o, uint32_t tid, uint64_t time, uint16_t misc,
                     struct pd_offcpu_interval *iv);
/* tid ended: it is away no more. */
void pd_offcpu_exit(struct pd_offcpu *o, uint32_t tid);
/* The intervals still open at the end of the recording (end: its last
 * time), each closed there: 1 with *iv while there is one, then 0. */
int pd_offcpu_close_next(struct pd_offcpu *o, uint64_t end, struct pd_offcpu_interval *iv);
/* Intervals measured so far, closed at the end included. */
uint64_t pd_offcpu_count(const struct pd_offcpu *o);

/* ---- the event kept, and the values (perf_data_values.c) ---------------- */

/* What the samples of one event were. */
struct pd_seen {
    uint64_t samples;
    uint64_t first; /* order of its first sample, from 1; 0: none */
    bool weighed;   /* a sample had a period (not 0) */
};

/* The profile's values: samples and their periods (the same index
 * without periods), and with off-CPU time shown that time and, when the
 * periods are nanoseconds too, both together (wall). */
struct pd_values {
    unsigned samples, period;
    unsigned off, wall; /* PD_NO_VALUE: none */
    bool offcpu;        /* off-CPU intervals shown, the context switches' samples not */
    /* the period value's type and unit, and the kept event's first
     * attributes (NULL: its samples weigh no period) */
    char period_type[EMBER_UNIT_MAX];
    const char *period_unit;
    const struct pd_attr *period_attr;
};
#define PD_NO_VALUE UINT_MAX

/* The event kept (filter's, else the first sampled), keep[a] for each
 * event whose samples are placed, st's counts of the others, and the
 * values added to p, the one views show selected. intervals: off-CPU
 * intervals were measured. */
int pd_values_set(struct ember_profile *p, const struct pd_file *f, const struct pd_seen *seen,
                  const char *filter, bool intervals, struct ember_read_stats *st, bool *keep,
                  struct pd_values *v);

/* ---- names (perf_data_names.c) ----------------------------------------- */

enum { PD_NO_DSO = UINT32_MAX };

/* A frame as the file has it: an address, and the map that holds it. */
struct pd_frame_src {
    uint32_t dso;               /* PD_NO_DSO: no map holds the address */
    uint64_t start, end, pgoff; /* the map */
    uint64_t ip;                /* the address sampled, or unwound */
    uint64_t pc;                /* as perf script prints it (its map_ip) */
};

struct pd_names;
struct pd_kernel_ahead;

int pd_names_new(struct pd_names **n, struct ember_profile *p, const struct pd_file *f,
                 const struct pd_tasks *t, const struct ember_read_opts *o);
void pd_names_free(struct pd_names *n);
/* A names object for another thread, naming into p: it shares n's files'
 * symbols and the kernel's, which it only reads, and loads none (its
 * calls return -EAGAIN where naming needs one n has not loaded). n must
 * outlive it and not change meanwhile. */
int pd_names_fork(const struct pd_names *n, struct ember_profile *p, struct pd_names **out);
/* The kernel's symbols read on a thread of their own from now on (the
 * recording has kernel frames, and threads to spare), *early's taken
 * where it reads the right file (and set NULL): 0 or -ENOMEM. */
int pd_names_read_kernel_ahead(struct pd_names *n, struct pd_kernel_ahead **early);

/* The kernel's symbols on a thread of their own (perf_data_kernel.c):
 * /proc/kallsyms read from now on, before the recorded kernel is known
 * (*a NULL without a thread); a thread for src's table, *early's where
 * it reads src's file (source fills src from ctx: the recorded kernel's),
 * else a new one (*out NULL without a thread), *early taken and set NULL;
 * the table joined into `into` (0 or its error); a thread joined and
 * freed, its table let go. */
struct ember_kallsyms;
struct ember_kallsyms_source;
int pd_kernel_read_early(struct pd_kernel_ahead **a);
int pd_kernel_read_late(struct pd_kernel_ahead **early, struct pd_kernel_ahead **out,
                        void (*source)(const void *ctx, struct ember_kallsyms_source *src,
                                       char *cached),
                        const void *ctx);
int pd_kernel_join(struct pd_kernel_ahead *a, struct ember_kallsyms *into);
void pd_kernel_ahead_free(struct pd_kernel_ahead *a);
/* The symbol tables of the k dsos (ids) naming will open read ahead on up
 * to threads threads, saying nothing (naming says what it says as it
 * opens them): 0 or -ENOMEM. */
int pd_names_read_ahead(struct pd_names *n, const uint32_t *dsos, size_t k, unsigned threads);
/* What naming src's frame would open, opened (its file, or the kernel's
 * symbols), saying what naming would say: called on every frame in the
 * order they are named, before pd_names_prepare. */
int pd_names_open(struct pd_names *n, const struct pd_frame_src *src);
/* The DWARF of the files opened so far read on up to threads threads,
 * for --inline's chains: 0 or -ENOMEM. */
int pd_names_prepare(struct pd_names *n, unsigned threads);
/* The profile's module for the map of a frame (PD_NO_DSO: none, then
 * EMBER_NO_MODULE): its path, build-id and range; what it knows. */
int pd_names_module(struct pd_names *n, const struct pd_frame_src *src, uint32_t *module);
/* The frames of one address, outermost first, interned in the profile
 * (java: the process is a JVM, whose names FlameGraph tidies): valid until
 * the next call. */
int pd_names_resolve(struct pd_names *n, const struct pd_frame_src *src, bool java,
                     const uint32_t **frames, size_t *count);

/* ---- what the file says of itself (perf_data_meta.c) ------------------- */

/* The profile's meta: the period of the event kept (its type and unit as
 * its value's), and its main module: the executable of the process with
 * the most samples. */
int pd_profile_meta(struct ember_profile *p, struct pd_names *n, const struct pd_tasks *t,
                    const struct pd_values *v);

#endif
