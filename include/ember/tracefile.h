/*
 * ember/tracefile.h - reading what ember/trace.h wrote: ring files (live,
 * or left by a process that ended or was killed) and the packet logs that
 * `ember record` writes.
 *
 * The file is untrusted: every offset and length is checked, and a corrupt
 * file gives -EINVAL with a diagnostic, never a crash. A file cut short
 * (copied while written, a full disk) is read up to the cut: every intact
 * packet, and the whole events of a packet the cut goes through; what is
 * missing is told per ring (struct ember_trace_ring's cut counts), not an
 * error: a flight recorder gives back what survived. Only a file without
 * its header, site table or ring table is refused. Rings are copied before
 * they are read, so a live writer cannot tear an event under the reader;
 * what it overwrote meanwhile is counted as lost.
 */
#ifndef EMBER_TRACEFILE_H
#define EMBER_TRACEFILE_H

#include "ember/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ember_trace;

enum ember_event_kind {
    EMBER_EV_BEGIN = 1,
    EMBER_EV_END = 2,
    EMBER_EV_INSTANT = 3,
    EMBER_EV_COUNTER = 4,
    EMBER_EV_EVENT = 5, /* a user-defined type */
};

enum { EMBER_TRACE_MAX_FIELDS = 8 };

struct ember_trace_site {
    uint32_t id;
    int kind;
    const char *name;
    unsigned nfields;
    const char *field_names[EMBER_TRACE_MAX_FIELDS];
    int field_types[EMBER_TRACE_MAX_FIELDS]; /* EMBER_FT_I64, _F64, _STR */
};

struct ember_trace_value {
    int64_t i;
    double f;
    const char *s;
};

struct ember_trace_event {
    unsigned ring;
    uint32_t tid;
    uint64_t ticks; /* the raw timestamp */
    int64_t ns;     /* nanoseconds since the trace started */
    uint64_t seq;   /* the event's number in its ring (0 = the thread's first) */
    const struct ember_trace_site *site;
    struct ember_trace_value v[EMBER_TRACE_MAX_FIELDS];
};

/* A thread's ring. The counts are those of the last pass over the events
 * (ember_trace_each or ember_trace_each_packet): the reader reads one
 * packet at a time, checking each as it goes. */
struct ember_trace_ring {
    uint32_t tid;
    char name[64];
    uint64_t events; /* events read */
    uint64_t lost;   /* events written but gone: overwritten, or dropped when full */
    uint64_t packets;
    /* the file is cut short: packets it ends before (whole or in part),
     * the first and last of them (by number), and how many events they
     * held as far as the packets read around them tell (cut packets before
     * the first packet read count in lost; events after the last packet
     * read are not counted anywhere) */
    uint64_t cut, cut_first, cut_last, cut_events;
};

EMBER_API int ember_trace_open(struct ember_trace **t, const char *path, struct ember_diag *d);
EMBER_API void ember_trace_close(struct ember_trace *t);

EMBER_API uint32_t ember_trace_pid(const struct ember_trace *t);
EMBER_API const char *ember_trace_exe(const struct ember_trace *t);
EMBER_API uint64_t ember_trace_ticks_per_sec(const struct ember_trace *t);
/* The timestamp (in ticks) taken at ns == 0. */
EMBER_API uint64_t ember_trace_base_ticks(const struct ember_trace *t);
/* Wall-clock time of ns == 0, in ns since the Unix epoch. */
EMBER_API uint64_t ember_trace_start_realtime(const struct ember_trace *t);
EMBER_API const uint8_t *ember_trace_uuid(const struct ember_trace *t);

EMBER_API unsigned ember_trace_ring_count(const struct ember_trace *t);
EMBER_API const struct ember_trace_ring *ember_trace_ring(const struct ember_trace *t, unsigned i);
EMBER_API unsigned ember_trace_site_count(const struct ember_trace *t);
EMBER_API const struct ember_trace_site *ember_trace_site_at(const struct ember_trace *t,
                                                             unsigned i);

/* When the file is shorter than what it holds: true, with its size and
 * the size it should have (0 when the format cannot say: packet logs). */
EMBER_API bool ember_trace_cut_short(const struct ember_trace *t, uint64_t *size,
                                     uint64_t *expected);

/* What stopped the last pass, when it returned -EINVAL or -EIO (a
 * corrupt file): file and message. */
EMBER_API const struct ember_diag *ember_trace_error(const struct ember_trace *t);

/* Every event, in time order across threads (in ring order on ties). */
typedef int (*ember_trace_event_fn)(void *ctx, const struct ember_trace_event *e);
EMBER_API int ember_trace_each(struct ember_trace *t, ember_trace_event_fn fn, void *ctx);

/* The valid packets of ring i, in order: for exporting CTF. The packet's
 * context (content size, end time, discarded events) is already fixed up. */
typedef int (*ember_trace_packet_fn)(void *ctx, unsigned ring, const void *packet, size_t size);
EMBER_API int ember_trace_each_packet(struct ember_trace *t, ember_trace_packet_fn fn, void *ctx);

/* ---- following a trace as it is written ---- */

struct ember_follow;

/* Waits up to timeout_ms for path to exist and hold a complete header. */
EMBER_API int ember_follow_open(struct ember_follow **f, const char *path, int timeout_ms,
                                struct ember_diag *d);
EMBER_API void ember_follow_close(struct ember_follow *f);
/* Reads what was written since the last poll: events to fn (time order
 * within the batch), and the packets read to pfn (for copying them). With
 * pfn and !final, only packets their writer has closed are taken. Returns
 * the number of events, or a negative error. */
EMBER_API int ember_follow_poll(struct ember_follow *f, ember_trace_event_fn fn, void *ctx,
                                ember_trace_packet_fn pfn, void *pctx, bool final);
EMBER_API bool ember_follow_writer_alive(const struct ember_follow *f);
/* As ember_trace_cut_short: a file cut short is followed up to the cut. */
EMBER_API bool ember_follow_cut_short(const struct ember_follow *f, uint64_t *size,
                                      uint64_t *expected);
EMBER_API unsigned ember_follow_ring_count(const struct ember_follow *f);
EMBER_API const struct ember_trace_ring *ember_follow_ring(const struct ember_follow *f,
                                                           unsigned i);
/* The file's first bytes (header, site table...), for copying them. */
EMBER_API const void *ember_follow_header(const struct ember_follow *f, size_t *strings_used);

/* ---- packet logs: what `ember record` writes from a follower ---- */

struct ember_trace_log;
/* Writes to fd (which must allow pwrite) the packets of f. */
EMBER_API int ember_trace_log_new(struct ember_trace_log **l, struct ember_follow *f, int fd);
/* An ember_trace_packet_fn: pass the log as ctx to ember_follow_poll. */
EMBER_API int ember_trace_log_packet(void *log, unsigned ring, const void *packet, size_t size);
/* Writes the header and tables: the log is complete. */
EMBER_API int ember_trace_log_finish(struct ember_trace_log *l);
EMBER_API uint64_t ember_trace_log_packets(const struct ember_trace_log *l);
EMBER_API void ember_trace_log_free(struct ember_trace_log *l);

#endif
