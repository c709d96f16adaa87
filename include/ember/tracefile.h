/*
 * ember/tracefile.h - reading traces: the ring files ember/trace.h writes
 * (live, or left by a process that ended or was killed), the packet logs
 * `ember trace record` writes, and OCaml 5 runtime_events files
 * (<pid>.events), all through one interface: a trace is a set of streams
 * (a thread's ring, an OCaml domain's ring), each a sequence of events of
 * known sites (name, kind, fields); it is read whole in time order
 * (ember_trace_each), stream by stream, or followed as it is written
 * (ember_trace_follow, then ember_trace_poll).
 *
 * The file is untrusted: every offset and length is checked, and a corrupt
 * file gives -EINVAL with a diagnostic naming the file, the stream and the
 * place, never a crash. An ember ring file cut short (copied while written,
 * a full disk) is read up to the cut: every intact packet, and the whole
 * events of a packet the cut goes through; what is missing is told per ring
 * (struct ember_trace_ring's cut counts), not an error: a flight recorder
 * gives back what survived. Only a file without its header, site table or
 * ring table is refused (and any cut runtime_events file: its layout puts
 * the user-event names after the rings). Data is copied before it is
 * decoded, and the writer's position is checked again after the copy, so a
 * live writer cannot tear an event under the reader; what it overwrote
 * meanwhile is counted as lost.
 */
#ifndef EMBER_TRACEFILE_H
#define EMBER_TRACEFILE_H

#include "ember/base.h"

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

/* Field types beyond ember/trace.h's EMBER_FT_I64, _F64 and _STR: bytes
 * (OCaml's custom user events), with a length. */
enum { EMBER_FT_BYTES = 16 };

enum { EMBER_TRACE_MAX_FIELDS = 8 };

/* Where a site comes from: an ember/trace.h call site, or an OCaml runtime
 * or user event (then raw_type and raw_id are the header's message type and
 * event id, as runtime_events.h numbers them). */
enum ember_site_origin {
    EMBER_ORIGIN_EMBER = 0,
    EMBER_ORIGIN_OCAML_RUNTIME = 1,
    EMBER_ORIGIN_OCAML_USER = 2,
};

/* OCaml runtime message types (runtime/caml/runtime_events.h). */
enum {
    EMBER_OCAML_LIFECYCLE = 1,
    EMBER_OCAML_BEGIN = 2,
    EMBER_OCAML_EXIT = 3,
    EMBER_OCAML_COUNTER = 4,
    EMBER_OCAML_ALLOC = 5,
};
/* OCaml user message types. */
enum {
    EMBER_OCAML_USER_UNIT = 0,
    EMBER_OCAML_USER_INT = 1,
    EMBER_OCAML_USER_SPAN_BEGIN = 2,
    EMBER_OCAML_USER_SPAN_END = 3,
    EMBER_OCAML_USER_CUSTOM = 4,
};

struct ember_trace_site {
    uint32_t id;
    int kind;
    const char *name; /* begins and ends of one span share the pointer */
    unsigned nfields;
    const char *field_names[EMBER_TRACE_MAX_FIELDS];
    int field_types[EMBER_TRACE_MAX_FIELDS]; /* EMBER_FT_I64, _F64, _STR, _BYTES */
    int origin;                              /* enum ember_site_origin */
    int raw_type, raw_id;
};

struct ember_trace_value {
    int64_t i;
    double f;
    const char *s; /* _STR: NUL-terminated; _BYTES: len bytes */
    size_t len;
};

struct ember_trace_event {
    unsigned ring;
    uint32_t tid;
    uint64_t ticks; /* the raw timestamp */
    int64_t ns;     /* nanoseconds since the trace started */
    uint64_t seq;   /* the event's number in its ring (0 = the first read) */
    const struct ember_trace_site *site;
    struct ember_trace_value v[EMBER_TRACE_MAX_FIELDS];
};

/* A stream: a thread's ring, or an OCaml domain's. The counts are those of
 * the last pass over the events (or, following, of every poll so far). */
struct ember_trace_ring {
    uint32_t tid; /* OCaml: the domain's index */
    char name[64];
    uint64_t events;     /* events read */
    uint64_t lost;       /* events written but gone: overwritten, or dropped when full */
    uint64_t lost_words; /* OCaml: 8-byte words overwritten before they were read (the
                            format numbers words, not events: lost is then 0) */
    uint64_t packets;
    /* the file is cut short: packets it ends before (whole or in part),
     * the first and last of them (by number), and how many events they
     * held as far as the packets read around them tell (cut packets before
     * the first packet read count in lost; events after the last packet
     * read are not counted anywhere) */
    uint64_t cut, cut_first, cut_last, cut_events;
};

enum ember_trace_format {
    EMBER_TRACE_RINGS = 1, /* an ember/trace.h ring file */
    EMBER_TRACE_LOG = 2,   /* a packet log (ember trace record) */
    EMBER_TRACE_OCAML = 3, /* an OCaml 5 runtime_events file */
};

/* Opens a trace file, whatever its format. */
EMBER_API int ember_trace_open(struct ember_trace **t, const char *path, struct ember_diag *d);
EMBER_API void ember_trace_close(struct ember_trace *t);

/* The names OCaml gives its runtime events changed in 5.3 (phases were
 * inserted); a file does not say which runtime wrote it. "5.0" (5.0 to
 * 5.2, the default) or "5.3" (5.3 and later), before the first pass or
 * poll: 0, or -EINVAL for another version. */
EMBER_API int ember_trace_set_ocaml_version(struct ember_trace *t, const char *version);

EMBER_API enum ember_trace_format ember_trace_format(const struct ember_trace *t);
EMBER_API uint32_t ember_trace_pid(const struct ember_trace *t);
EMBER_API const char *ember_trace_exe(const struct ember_trace *t);
EMBER_API uint64_t ember_trace_ticks_per_sec(const struct ember_trace *t);
/* The timestamp (in ticks) taken at ns == 0. */
EMBER_API uint64_t ember_trace_base_ticks(const struct ember_trace *t);
/* Wall-clock time of ns == 0, in ns since the Unix epoch; 0 when unknown
 * (an OCaml file read after its program ended). */
EMBER_API uint64_t ember_trace_start_realtime(const struct ember_trace *t);
EMBER_API const uint8_t *ember_trace_uuid(const struct ember_trace *t);

EMBER_API unsigned ember_trace_ring_count(const struct ember_trace *t);
EMBER_API const struct ember_trace_ring *ember_trace_ring(const struct ember_trace *t, unsigned i);
/* The sites known so far (an OCaml file's are made as its events are met). */
EMBER_API unsigned ember_trace_site_count(const struct ember_trace *t);
EMBER_API const struct ember_trace_site *ember_trace_site_at(const struct ember_trace *t,
                                                             unsigned i);

/* When the file is shorter than what it holds: true, with its size and
 * the size it should have (0 when the format cannot say: packet logs). */
EMBER_API bool ember_trace_cut_short(const struct ember_trace *t, uint64_t *size,
                                     uint64_t *expected);

/* What stopped the last pass or poll, when it returned -EINVAL or -EIO (a
 * corrupt file): file and message. */
EMBER_API const struct ember_diag *ember_trace_error(const struct ember_trace *t);

typedef int (*ember_trace_event_fn)(void *ctx, const struct ember_trace_event *e);
/* Data lost in ring just before its next event: events when the format
 * numbers them, words (OCaml) when it does not (then events is 0). */
typedef int (*ember_trace_lost_fn)(void *ctx, unsigned ring, uint64_t events, uint64_t words);

/* Every event, in time order across rings (ring order on ties). */
EMBER_API int ember_trace_each(struct ember_trace *t, ember_trace_event_fn fn, void *ctx);

/* The same with losses told where they happen; in_ring_order: ring 0's
 * events, then ring 1's... (the order OCaml's consumer reads them). */
struct ember_trace_visitor {
    ember_trace_event_fn event;
    ember_trace_lost_fn lost; /* may be NULL */
    void *ctx;
    bool in_ring_order;
};
EMBER_API int ember_trace_visit(struct ember_trace *t, const struct ember_trace_visitor *v);

/* Whether ember_trace_each_packet has packets to give (ember ring files
 * and logs: their packets are CTF packets). */
EMBER_API bool ember_trace_has_packets(const struct ember_trace *t);
/* The valid packets of ring i, in order: for exporting CTF. The packet's
 * context (content size, end time, discarded events) is already fixed up. */
typedef int (*ember_trace_packet_fn)(void *ctx, unsigned ring, const void *packet, size_t size);
EMBER_API int ember_trace_each_packet(struct ember_trace *t, ember_trace_packet_fn fn, void *ctx);

/* ---- following a trace as it is written ---- */

/* Waits up to timeout_ms for path to exist and hold a complete header
 * (polling; there is no fixed sleep), then opens it to be followed. */
EMBER_API int ember_trace_follow(struct ember_trace **t, const char *path, int timeout_ms,
                                 struct ember_diag *d);
/* Reads what was written since the last poll and hands events to fn in
 * time order across polls: an event later than the latest the previous
 * poll read waits for the next poll, where a writer's event stamped before
 * it but written after may still come. A poll that reads nothing new (the
 * writers are quiet) hands out all that waits, and so does final (the
 * writer has ended), with what the writer left unfinished. Returns the
 * number of events handed out, or a negative error. */
EMBER_API int ember_trace_poll(struct ember_trace *t, ember_trace_event_fn fn, void *ctx,
                               bool final);
EMBER_API bool ember_trace_writer_alive(const struct ember_trace *t);

/* The trace file a running process writes (an ember ring file it maps, or
 * its OCaml runtime_events file): 1 with its path, 0 if none (yet). */
EMBER_API int ember_trace_find_pid(int pid, char *path, size_t cap);

/* ---- recording: what `ember trace record` writes while it follows ---- */

struct ember_trace_recorder;
/* Records t (being followed) into fd (which must allow pwrite): an ember
 * ring file as a packet log of its packets, an OCaml runtime_events file
 * as a runtime_events file of every event read (rings as large as needed;
 * words lost are marked where they were), spooled meanwhile in scratch (a
 * file that allows pread and pwrite; unused for ember rings). */
EMBER_API int ember_trace_recorder_new(struct ember_trace_recorder **r, struct ember_trace *t,
                                       int fd, int scratch);
/* Copies what was written since the last call (final: everything left):
 * how much (packets, or chunks of events), or < 0. */
EMBER_API int ember_trace_record_poll(struct ember_trace_recorder *r, bool final);
/* Completes the recording: the tables of a packet log; an OCaml
 * recording, laid out whole into fd (-1: the one given at the start). */
EMBER_API int ember_trace_recorder_finish(struct ember_trace_recorder *r, int fd);
EMBER_API void ember_trace_recorder_free(struct ember_trace_recorder *r);

/* ---- OCaml runtime_events specifics (ember_trace_format() == EMBER_TRACE_OCAML) ---- */

struct ember_ocaml_layout {
    uint64_t file_size;
    uint64_t version, max_domains, ring_header_size_bytes, ring_size_bytes, ring_size_elements,
        headers_offset, data_offset, custom_events_offset;
};
EMBER_API int ember_trace_ocaml_layout(const struct ember_trace *t, struct ember_ocaml_layout *l);
/* Ring i's head and tail as the file held them when it was opened. */
EMBER_API void ember_trace_ocaml_ring(const struct ember_trace *t, unsigned i, uint64_t *head,
                                      uint64_t *tail);
/* User event slot id's name, "" if none. */
EMBER_API const char *ember_trace_ocaml_user_name(const struct ember_trace *t, unsigned id);

#endif
