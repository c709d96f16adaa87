/*
 * ocaml_events.h - what the files of the OCaml runtime_events backend share
 * (library-internal): the format's constants, the backend's state, the
 * cursor's, and the functions one part calls in another. The format and
 * the reader's invariants are described in ocaml_events.c; the cursor and
 * the sites are in ocaml_cursor.c, recording in ocaml_record.c.
 */
#ifndef EMBER_TRACEFILE_OCAML_EVENTS_H
#define EMBER_TRACEFILE_OCAML_EVENTS_H

#include "ember/trace.h"
#include "tracefile/source.h"
#include "base/arena.h"
#include "base/strmap.h"

#include <stdbool.h>
#include <stdint.h>

enum {
    HEADER_BYTES = 64,
    NAMES = 8192,     /* RUNTIME_EVENTS_MAX_CUSTOM_EVENTS */
    NAME_BYTES = 128, /* RUNTIME_EVENTS_CUSTOM_EVENT_ID_LENGTH */
    MAX_MSG = 1024,   /* RUNTIME_EVENTS_MAX_MSG_LENGTH: lengths are 10 bits */
    LOST_ID = 8191,   /* ember's recordings: padding that stands for lost words */
    CHUNK = 1 << 16,  /* words copied at a time */
    ALLOC_BUCKETS = 20,
    /* site rows: runtime types 0-7, user types 8-15, lifecycle without payload */
    ROWS = 17,
    ROW_LIFECYCLE_BARE = 16,
};

#define MSG_LEN(h)  ((unsigned)((h) >> 54) & 1023u)
#define MSG_USER(h) ((unsigned)((h) >> 53) & 1u)
#define MSG_TYPE(h) ((unsigned)((h) >> 49) & 15u)
#define MSG_ID(h)   ((unsigned)((h) >> 36) & 8191u)

/* What a message's header decides, remembered by its top 28 bits (length,
 * user, type, id: all but the payload): its site and how its payload
 * reads. Only messages that passed every check get here; padding never
 * does. A direct-mapped table: a collision only sends a header back to the
 * checks. */
enum { HCACHE = 256 };
enum { PAYLOAD_NONE, PAYLOAD_I64, PAYLOAD_ALLOC, PAYLOAD_CUSTOM };

struct hslot {
    uint32_t key; /* (header >> 36) | HKEY_VALID; 0: empty */
    uint8_t payload;
    const struct ember_trace_site *site;
};

#define HKEY_VALID (1u << 31)

struct ring {
    uint64_t head, tail;           /* as last read: tail is the cursors' end */
    uint64_t open_head, open_tail; /* as the file had them when opened */
};

struct backend {
    struct ember_ocaml_layout L;
    uint64_t mask;
    char *map; /* following: the header and ring headers */
    size_t map_size;
    struct ring *rings; /* max_domains of them */
    char *names;        /* the user-event name table, read when first needed */
    struct ember_trace_site **rows[ROWS];
    struct ember_arena arena; /* sites */
    struct ember_strmap interned;
    struct hslot hcache[HCACHE];
};

struct recorder;

struct cursor {
    uint64_t *buf;
    uint64_t cpos;        /* buf[0] is this word of the ring */
    size_t n, k;          /* words in buf, the next one to read */
    size_t from;          /* recording: buf[from..k) is read intact, not yet spooled */
    uint64_t seq;         /* the next event's number */
    struct recorder *rec; /* recording: where the words read go */
};

static inline struct backend *be(const struct ember_trace *t)
{
    return t->be;
}

/* ocaml_events.c: ring i's head (and tail, if asked) now; every ring's
 * head and tail read again (following). */
int ember_ocaml_load_ring(struct ember_trace *t, unsigned i, uint64_t *head, uint64_t *tail);
int ember_ocaml_refresh(struct ember_trace *t);

/* ocaml_cursor.c: the cursor (struct ember_source_ops's), and the
 * user-event name of id (NULL when out of memory). */
int ember_ocaml_cursor_init(struct ember_trace *t, struct ember_cursor *c);
int ember_ocaml_cursor_next(struct ember_trace *t, struct ember_cursor *c);
void ember_ocaml_cursor_free(struct ember_trace *t, struct ember_cursor *c);
const char *ember_ocaml_user_name(struct ember_trace *t, unsigned id);

/* ocaml_record.c: the words a recording cursor read intact, to the spool
 * (before its chunk is replaced); a recorder (struct ember_source_ops's). */
int ember_ocaml_spool(struct recorder *rec, struct ember_cursor *c);
int ember_ocaml_recorder_new(struct ember_trace_recorder **out, struct ember_trace *t, int fd,
                             int scratch);

#endif
