/*
 * ocaml_events.c - the backend for OCaml 5 runtime_events files
 * (<pid>.events), version 1 of the format, written for ember from the
 * layout in OCaml's runtime/caml/runtime_events.h and runtime_events.c:
 *
 *   0                     header: 8 u64 (version, max_domains,
 *                         ring_header_size_bytes, ring_size_bytes,
 *                         ring_size_elements, headers_offset, data_offset,
 *                         custom_events_offset)
 *   headers_offset + i*h  ring i's header: u64 head, u64 tail (monotonic
 *                         word counters; a word's slot is counter & mask)
 *   data_offset + i*b     ring i: ring_size_elements u64 words
 *   custom_events_offset  8192 user-event names of 128 bytes
 *
 * A message is [header][timestamp][payload]: header bits 63..54 its length
 * in words, 53 user (1) or runtime (0), 52..49 its type, 48..36 its id.
 * Runtime type 0 is padding up to the ring's end (never an event).
 *
 * The cursor copies a chunk of a ring's words [pos, end), then reads the
 * ring's head again: the writer moves head past old messages before it
 * overwrites them, so every word from the new head on was copied intact,
 * and the words before it (from pos) are lost, counted in words (the format
 * does not number events). A read racing the writer thus never fails and
 * never decodes torn data; an invalid message in what was copied intact is
 * corruption, reported with its ring and word. A new cursor starts at word
 * 0 (what OCaml's consumer does): a wrapped ring first loses head words.
 *
 * Sites are made as their messages are first met, named from ocaml_names.c
 * (or the user-event name table); span begins and ends share a name.
 * Recordings (ember trace record) are runtime_events files too, with rings
 * large enough for all that was read, the words lost marked by padding
 * messages of id LOST_ID (OCaml's consumer skips them as padding).
 */
#include "ember/trace.h"
#include "tracefile/ocaml_names.h"
#include "tracefile/source.h"
#include "base/arena.h"
#include "base/diag.h"
#include "base/strmap.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

static int spool(struct recorder *rec, struct ember_cursor *c);

static struct backend *be(const struct ember_trace *t)
{
    return t->be;
}

static uint64_t word_at(const unsigned char *p, size_t i)
{
    uint64_t w;
    memcpy(&w, p + 8 * i, 8);
    return w;
}

static bool ends_with_events(const char *path)
{
    size_t n = strlen(path);
    return n >= 7 && strcmp(path + n - 7, ".events") == 0;
}

/* OCaml's: named <pid>.events, or a header whose fixed fields say so
 * (headers_offset is 64 in every version: the header is 8 words). */
static bool probe(const unsigned char *head, size_t n, const char *path)
{
    if (ends_with_events(path))
        return true;
    return n >= HEADER_BYTES && word_at(head, 5) == HEADER_BYTES &&
           (word_at(head, 0) == 1 || word_at(head, 2) == 80);
}

/* What is wrong with a header (NULL: nothing), given the file's size. */
static const char *check_layout(const struct ember_ocaml_layout *L, char *why, size_t cap)
{
    uint64_t h, d, c;
    if (L->version > 255) {
        snprintf(why, cap, "no runtime_events header (its first word, %llu, is no version)",
                 (unsigned long long)L->version);
        return why;
    }
    if (L->version != 1) {
        snprintf(why, cap, "unsupported version %llu (ember reads version 1)",
                 (unsigned long long)L->version);
        return why;
    }
    if (!L->max_domains || L->max_domains > 65536)
        return "max_domains out of range (1 to 65536)";
    if (L->ring_header_size_bytes < 16 || L->ring_header_size_bytes % 8 ||
        L->ring_header_size_bytes > 4096)
        return "ring_header_size_bytes out of range (16 to 4096, a multiple of 8)";
    if (L->ring_size_elements < 64 || L->ring_size_elements > (1ull << 32) ||
        (L->ring_size_elements & (L->ring_size_elements - 1)))
        return "ring_size_elements is not a power of two from 64 to 2^32";
    if (L->ring_size_bytes != 8 * L->ring_size_elements)
        return "ring_size_bytes is not 8 x ring_size_elements";
    if (L->headers_offset < HEADER_BYTES || L->headers_offset % 8)
        return "the ring headers are inside the 64-byte header";
    if (__builtin_mul_overflow(L->max_domains, L->ring_header_size_bytes, &h) ||
        __builtin_add_overflow(h, L->headers_offset, &h) || L->data_offset < h ||
        L->data_offset % 8)
        return "the ring data overlaps the ring headers";
    if (__builtin_mul_overflow(L->max_domains, L->ring_size_bytes, &d) ||
        __builtin_add_overflow(d, L->data_offset, &d) || L->custom_events_offset < d)
        return "the user-event names overlap the ring data";
    if (__builtin_add_overflow(L->custom_events_offset, (uint64_t)NAMES * NAME_BYTES, &c))
        return "offsets out of range";
    if (L->file_size >= c)
        return NULL;
    /* the writer lays the file out exactly: other offsets point outside it */
    if (L->headers_offset == HEADER_BYTES && L->data_offset == h && L->custom_events_offset == d)
        snprintf(why, cap, "cut short at byte %llu; its layout ends at byte %llu",
                 (unsigned long long)L->file_size, (unsigned long long)c);
    else
        snprintf(why, cap,
                 "its header puts data outside the file: the ring data at bytes %llu to %llu, "
                 "the user-event names at %llu to %llu, in a file of %llu bytes",
                 (unsigned long long)L->data_offset, (unsigned long long)d,
                 (unsigned long long)L->custom_events_offset, (unsigned long long)c,
                 (unsigned long long)L->file_size);
    return why;
}

static int read_layout(int fd, struct ember_ocaml_layout *L)
{
    struct stat st;
    uint64_t w[8];
    if (fstat(fd, &st) < 0 || st.st_size < HEADER_BYTES || ember_read_at(fd, w, sizeof(w), 0) < 0)
        return -EIO;
    L->file_size = (uint64_t)st.st_size;
    L->version = w[0], L->max_domains = w[1], L->ring_header_size_bytes = w[2];
    L->ring_size_bytes = w[3], L->ring_size_elements = w[4], L->headers_offset = w[5];
    L->data_offset = w[6], L->custom_events_offset = w[7];
    return 0;
}

static bool all_zero(const struct ember_ocaml_layout *L)
{
    return !(L->version | L->max_domains | L->ring_header_size_bytes | L->ring_size_bytes |
             L->ring_size_elements | L->headers_offset | L->data_offset | L->custom_events_offset);
}

/* A live file: complete once its header's last field is written and sane
 * (the producer creates the file at its full size, zero-filled, then
 * writes the header). A header that can never become valid is "ready"
 * too: opening it says why. */
static int ready(int fd, const char *path)
{
    (void)path;
    struct ember_ocaml_layout L;
    char why[256];
    if (read_layout(fd, &L) < 0 || all_zero(&L) || !L.custom_events_offset)
        return 0;
    return !check_layout(&L, why, sizeof(why)) || (L.version != 0 && L.version != 1);
}

/* ---- rings -------------------------------------------------------------- */

static uint64_t *live_ring_header(const struct backend *b, unsigned i)
{
    return (uint64_t *)(void *)(b->map + b->L.headers_offset + i * b->L.ring_header_size_bytes);
}

/* Ring i's head (and tail, if asked) now: tail first, so that the two
 * read apart still satisfy head <= tail + what was written between. */
static int load_ring(struct ember_trace *t, unsigned i, uint64_t *head, uint64_t *tail)
{
    struct backend *b = be(t);
    if (b->map) {
        uint64_t *h = live_ring_header(b, i);
        if (tail)
            *tail = __atomic_load_n(&h[1], __ATOMIC_ACQUIRE);
        *head = __atomic_load_n(&h[0], __ATOMIC_ACQUIRE);
        return 0;
    }
    uint64_t ht[2];
    int err =
        ember_read_at(t->fd, ht, sizeof(ht), b->L.headers_offset + i * b->L.ring_header_size_bytes);
    *head = ht[0];
    if (tail)
        *tail = ht[1];
    return err;
}

/* Reads every ring's head and tail; the streams run to the last ring
 * used. A quiet file's rings are checked: the writer keeps tail - head
 * below the ring's size and head <= tail. */
static int read_rings(struct ember_trace *t, bool check)
{
    struct backend *b = be(t);
    unsigned used = 0;
    for (unsigned i = 0; i < b->L.max_domains; i++) {
        struct ring *r = &b->rings[i];
        uint64_t head, tail, again;
        int err = load_ring(t, i, &head, &tail);
        if (!err && check)
            err = load_ring(t, i, &again, NULL);
        if (err)
            return ember_source_corrupt(t, "cannot read the header of ring %u", i);
        if (check && tail >> 62)
            return ember_source_corrupt(t, "ring %u: tail %llu out of range", i,
                                        (unsigned long long)tail);
        if (check && again == head && (head > tail || tail - head > b->L.ring_size_elements))
            return ember_source_corrupt(t,
                                        "ring %u: head %llu and tail %llu are not a ring's "
                                        "extent (%llu words)",
                                        i, (unsigned long long)head, (unsigned long long)tail,
                                        (unsigned long long)b->L.ring_size_elements);
        r->head = head;
        if (tail >= r->tail && !(tail >> 62))
            r->tail = tail;
        if (r->tail)
            used = i + 1;
    }
    int err = ember_source_rings(t, used);
    for (unsigned i = 0; i < used && !err; i++) {
        t->rings[i].tid = i;
        snprintf(t->rings[i].name, sizeof(t->rings[i].name), "domain-%u", i);
    }
    return err;
}

/* The earliest timestamp at a ring's head: where the trace starts; and
 * the pid that ring 0's ring_start carries, when it is there. */
static uint64_t first_time(struct ember_trace *t, uint32_t *pid)
{
    struct backend *b = be(t);
    uint64_t best = UINT64_MAX;
    for (unsigned i = 0; i < t->nrings; i++) {
        struct ring *r = &b->rings[i];
        uint64_t pos = r->head;
        for (int tries = 0; tries < 2 && pos < r->tail; tries++) {
            uint64_t w[3];
            uint64_t slot = pos & b->mask;
            if (slot + 3 > b->L.ring_size_elements ||
                ember_read_at(t->fd, w, sizeof(w),
                              b->L.data_offset + i * b->L.ring_size_bytes + slot * 8) < 0)
                break;
            if (!MSG_USER(w[0]) && MSG_TYPE(w[0]) == 0) { /* padding: the next one */
                pos += MSG_LEN(w[0]) ? MSG_LEN(w[0]) : 1;
                continue;
            }
            best = w[1] < best ? w[1] : best;
            if (i == 0 && !MSG_USER(w[0]) && MSG_TYPE(w[0]) == EMBER_OCAML_LIFECYCLE &&
                MSG_ID(w[0]) == 0 && MSG_LEN(w[0]) == 3 && w[2] > 0 && w[2] < UINT32_MAX)
                *pid = (uint32_t)w[2];
            break;
        }
    }
    return best;
}

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* pid from the file's name, <pid>.events (else ring_start's, set_clock);
 * the program's path when live. */
static void identify(struct ember_trace *t)
{
    const char *base = strrchr(t->name, '/');
    base = base ? base + 1 : t->name;
    char *end;
    unsigned long pid = strtoul(base, &end, 10);
    if (end != base && strcmp(end, ".events") == 0 && pid > 0 && pid < UINT32_MAX)
        t->pid = (uint32_t)pid;
    if (t->live && t->pid) {
        char link[64];
        snprintf(link, sizeof(link), "/proc/%u/exe", t->pid);
        ssize_t n = readlink(link, t->exe, sizeof(t->exe) - 1);
        t->exe[n > 0 ? n : 0] = '\0';
    }
}

/* The clock: CLOCK_MONOTONIC nanoseconds; ns 0 is the earliest event there
 * was at open (or the open, when there was none); wall-clock time only
 * when the program runs on this machine now. */
static void set_clock(struct ember_trace *t)
{
    uint32_t pid = 0;
    uint64_t first = first_time(t, &pid), mono = clock_ns(CLOCK_MONOTONIC);
    if (!t->pid)
        t->pid = pid;
    t->ticks_per_sec = 1000000000;
    t->base_ticks = first != UINT64_MAX ? first : t->live ? mono : 0;
    if (t->live && t->base_ticks <= mono)
        t->start_realtime = clock_ns(CLOCK_REALTIME) - (mono - t->base_ticks);
    uint64_t h = 1469598103934665603ULL ^ t->base_ticks ^ ((uint64_t)t->pid << 32);
    for (int i = 0; i < 16; i++, h *= 1099511628211ULL)
        t->uuid[i] = (uint8_t)(h >> 56);
}

static int open_ocaml(struct ember_trace *t, struct ember_diag *d)
{
    struct backend *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    t->be = b;
    t->format = EMBER_TRACE_OCAML;
    ember_arena_init(&b->arena);
    if (ember_strmap_init(&b->interned) < 0)
        return -ENOMEM;
    char why[256];
    const char *bad = NULL;
    if (read_layout(t->fd, &b->L) < 0)
        bad = "too short for its 64-byte header";
    else if (all_zero(&b->L))
        bad = "its header is all zeros (the program had not written it yet?)";
    else
        bad = check_layout(&b->L, why, sizeof(why));
    if (bad)
        return ember_diag_set(d, -EINVAL, t->name, 0, "not a valid OCaml runtime_events file: %s",
                              bad);
    b->mask = b->L.ring_size_elements - 1;
    t->size = b->L.file_size;
    if (!(b->rings = calloc(b->L.max_domains, sizeof(*b->rings))))
        return -ENOMEM;
    if (t->live) {
        b->map_size = (size_t)b->L.data_offset;
        b->map = mmap(NULL, b->map_size, PROT_READ, MAP_SHARED, t->fd, 0);
        if (b->map == MAP_FAILED) {
            b->map = NULL;
            return ember_diag_set(d, -EIO, t->name, 0, "cannot map: %s", strerror(errno));
        }
    }
    int err = read_rings(t, !t->live);
    if (err) {
        *d = t->err;
        return err;
    }
    for (unsigned i = 0; i < b->L.max_domains; i++) {
        b->rings[i].open_head = b->rings[i].head;
        b->rings[i].open_tail = b->rings[i].tail;
    }
    identify(t);
    set_clock(t);
    return 0;
}

static void close_ocaml(struct ember_trace *t)
{
    struct backend *b = be(t);
    if (!b)
        return;
    if (b->map)
        munmap(b->map, b->map_size);
    for (int r = 0; r < ROWS; r++)
        free(b->rows[r]);
    ember_arena_release(&b->arena);
    ember_strmap_release(&b->interned);
    free(b->rings);
    free(b->names);
    free(b);
}

static int refresh(struct ember_trace *t)
{
    return read_rings(t, false);
}

/* ---- sites -------------------------------------------------------------- */

static const char *intern(struct backend *b, const char *s)
{
    size_t n = strlen(s);
    char *p = ember_strmap_get(&b->interned, s, n);
    if (p)
        return p;
    p = ember_arena_strndup(&b->interned.arena, s, n);
    return p && ember_strmap_put(&b->interned, s, n, p) == 0 ? p : NULL;
}

/* The user-event name table, read once: names are written before the
 * events that use them (OCaml registers an event before writing it). */
static const char *user_name(struct ember_trace *t, unsigned id)
{
    struct backend *b = be(t);
    if (!b->names) {
        b->names = calloc(NAMES, NAME_BYTES);
        if (!b->names)
            return NULL;
        ember_read_at(t->fd, b->names, (size_t)NAMES * NAME_BYTES, b->L.custom_events_offset);
        for (unsigned i = 0; i < NAMES; i++)
            b->names[i * NAME_BYTES + NAME_BYTES - 1] = '\0';
    }
    return id < NAMES ? b->names + (size_t)id * NAME_BYTES : "";
}

static int row_of(unsigned user, unsigned type, unsigned len)
{
    if (!user && type == 1 && len == 2)
        return ROW_LIFECYCLE_BARE; /* ring_stop has no payload word */
    return (int)(user * 8 + (type & 7));
}

/* The site of a message: made when first met. */
static struct ember_trace_site *make_site(struct ember_trace *t, unsigned user, unsigned type,
                                          unsigned id, unsigned len)
{
    struct backend *b = be(t);
    struct ember_trace_site *s = ember_arena_alloc(&b->arena, sizeof(*s));
    if (!s)
        return NULL;
    memset(s, 0, sizeof(*s));
    s->origin = user ? EMBER_ORIGIN_OCAML_USER : EMBER_ORIGIN_OCAML_RUNTIME;
    s->raw_type = (int)type;
    s->raw_id = (int)id;
    /* numbered as made, from 1: views index their per-site tables by id */
    s->id = t->nsites + 1;
    char fallback[64];
    const char *name = NULL;
    if (user) {
        const char *u = user_name(t, id);
        snprintf(fallback, sizeof(fallback), "user_event_%u", id);
        name = u && u[0] ? u : fallback;
        static const int kinds[] = {EMBER_EV_INSTANT, EMBER_EV_COUNTER, EMBER_EV_BEGIN,
                                    EMBER_EV_END, EMBER_EV_EVENT};
        s->kind = kinds[type];
    } else if (type == EMBER_OCAML_BEGIN || type == EMBER_OCAML_EXIT) {
        snprintf(fallback, sizeof(fallback), "phase_%u", id);
        name = ember_ocaml_phase_name(t->ocaml_names, id);
        s->kind = type == EMBER_OCAML_BEGIN ? EMBER_EV_BEGIN : EMBER_EV_END;
    } else if (type == EMBER_OCAML_COUNTER) {
        snprintf(fallback, sizeof(fallback), "counter_%u", id);
        name = ember_ocaml_counter_name(t->ocaml_names, id);
        s->kind = EMBER_EV_COUNTER;
    } else if (type == EMBER_OCAML_LIFECYCLE) {
        snprintf(fallback, sizeof(fallback), "lifecycle_%u", id);
        name = ember_ocaml_lifecycle_name(id);
        s->kind = EMBER_EV_INSTANT;
    } else {
        name = "alloc";
        s->kind = EMBER_EV_EVENT;
    }
    if (!(s->name = intern(b, name ? name : fallback)))
        return NULL;
    static const char *const field[] = {"value", "data", "buckets"};
    int ft = EMBER_FT_I64, fi = 0;
    if ((user && type == EMBER_OCAML_USER_CUSTOM) || (!user && type == EMBER_OCAML_ALLOC))
        ft = EMBER_FT_BYTES, fi = user ? 1 : 2;
    else if (!user && type == EMBER_OCAML_LIFECYCLE)
        fi = 1;
    bool has_field = user ? type == EMBER_OCAML_USER_INT || type == EMBER_OCAML_USER_CUSTOM
                          : type == EMBER_OCAML_COUNTER || type == EMBER_OCAML_ALLOC ||
                                (type == EMBER_OCAML_LIFECYCLE && len > 2);
    if (has_field) {
        s->nfields = 1;
        s->field_names[0] = field[fi];
        s->field_types[0] = ft;
    }
    return ember_source_add_site(t, s) == 0 ? s : NULL;
}

static const struct ember_trace_site *site_of(struct ember_trace *t, unsigned user, unsigned type,
                                              unsigned id, unsigned len)
{
    struct backend *b = be(t);
    int row = row_of(user, type, len);
    if (!b->rows[row] && !(b->rows[row] = calloc(8192, sizeof(*b->rows[row]))))
        return NULL;
    struct ember_trace_site **slot = &b->rows[row][id];
    if (!*slot)
        *slot = make_site(t, user, type, id, len);
    return *slot;
}

/* ---- the cursor ---------------------------------------------------------- */

static int cursor_init(struct ember_trace *t, struct ember_cursor *c)
{
    struct backend *b = be(t);
    struct cursor *k = calloc(1, sizeof(*k));
    size_t words = b->L.ring_size_elements < CHUNK ? (size_t)b->L.ring_size_elements : CHUNK;
    if (!k || !(k->buf = malloc(words * 8))) {
        free(k);
        return -ENOMEM;
    }
    c->state = k;
    c->e.ring = c->e.tid = c->ring; /* a cursor reads one ring */
    return 0;
}

static void cursor_free(struct ember_trace *t, struct ember_cursor *c)
{
    (void)t;
    struct cursor *k = c->state;
    if (k)
        free(k->buf);
    free(k);
    c->state = NULL;
}

static int bad_message(struct ember_trace *t, unsigned ring, uint64_t pos, uint64_t hdr,
                       const char *what)
{
    return ember_source_corrupt(t, "ring %u, word %llu (header 0x%016llx): %s", ring,
                                (unsigned long long)pos, (unsigned long long)hdr, what);
}

/* Lost words: counted in the ring and told before the next event. */
static void lose(struct ember_trace *t, struct ember_cursor *c, uint64_t words)
{
    t->rings[c->ring].lost_words += words;
    c->lost_words += words;
}

/* Copies the ring's words from pos to its end (as last read), a chunk at
 * most, keeping those the writer cannot have overwritten meanwhile: 1, 0
 * when there is nothing to read, < 0 on error. */
static int fetch(struct ember_trace *t, struct ember_cursor *c, uint64_t pos)
{
    struct backend *b = be(t);
    struct cursor *k = c->state;
    uint64_t end = b->rings[c->ring].tail, head;
    size_t cap = b->L.ring_size_elements < CHUNK ? (size_t)b->L.ring_size_elements : CHUNK;
    int err = k->rec ? spool(k->rec, c) : 0; /* before the chunk is replaced */
    if (err)
        return err;
    for (;;) {
        k->n = k->k = k->from = 0;
        k->cpos = pos;
        if (load_ring(t, c->ring, &head, NULL) < 0)
            return ember_source_corrupt(t, "cannot read the header of ring %u", c->ring);
        if (head > pos) {
            lose(t, c, head - pos);
            k->cpos = pos = head;
        }
        if (pos >= end)
            return 0;
        /* a chunk stops at the ring's end: a message in it lies in the ring */
        uint64_t slot = pos & b->mask, ring = b->L.data_offset + c->ring * b->L.ring_size_bytes;
        size_t n = end - pos < cap ? (size_t)(end - pos) : cap;
        n = n < b->L.ring_size_elements - slot ? n : (size_t)(b->L.ring_size_elements - slot);
        if (ember_read_at(t->fd, k->buf, n * 8, ring + slot * 8) < 0)
            return ember_diag_set(&t->err, -EIO, t->name, 0, "cannot read ring %u", c->ring);
        /* as OCaml's consumer: the copy is done before head is read again */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (load_ring(t, c->ring, &head, NULL) < 0)
            return ember_source_corrupt(t, "cannot read the header of ring %u", c->ring);
        if (head >= pos + n) { /* all of it overwritten meanwhile: again */
            lose(t, c, head - pos);
            pos = head;
            continue;
        }
        k->n = n;
        if (head > pos) {
            lose(t, c, head - pos);
            k->k = k->from = (size_t)(head - pos);
        }
        return 1;
    }
}

/* The message's length checked against what its type carries. */
static const char *length_error(unsigned user, unsigned type, unsigned len)
{
    if (user) {
        if (type > EMBER_OCAML_USER_CUSTOM)
            return "an unknown user message type";
        if (type == EMBER_OCAML_USER_INT)
            return len == 3 ? NULL : "an int user event is 3 words long";
        if (type == EMBER_OCAML_USER_CUSTOM)
            return len >= 3 ? NULL : "a custom user event has a payload";
        return len == 2 ? NULL : "a unit or span user event is 2 words long";
    }
    switch (type) {
    case EMBER_OCAML_LIFECYCLE:
        return len == 2 || len == 3 ? NULL : "a lifecycle event is 2 or 3 words long";
    case EMBER_OCAML_BEGIN:
    case EMBER_OCAML_EXIT:
        return len == 2 ? NULL : "a phase begin or end is 2 words long";
    case EMBER_OCAML_COUNTER:
        return len == 3 ? NULL : "a counter is 3 words long";
    case EMBER_OCAML_ALLOC:
        return len == 2 + ALLOC_BUCKETS ? NULL : "an allocation event is 22 words long";
    default:
        return "an unknown runtime message type";
    }
}

static struct hslot *hslot_of(struct backend *b, uint64_t hdr)
{
    return &b->hcache[((uint32_t)(hdr >> 36) * 0x9e3779b1u) >> 24];
}

/* The header's site and payload kind, remembered (its checks passed). */
static int hslot_fill(struct ember_trace *t, uint64_t hdr, struct hslot *h)
{
    unsigned user = MSG_USER(hdr), type = MSG_TYPE(hdr), len = MSG_LEN(hdr);
    const struct ember_trace_site *s = site_of(t, user, type, MSG_ID(hdr), len);
    if (!s)
        return -ENOMEM;
    h->site = s;
    h->payload = s->nfields == 0                     ? PAYLOAD_NONE
                 : s->field_types[0] == EMBER_FT_I64 ? PAYLOAD_I64
                 : user                              ? PAYLOAD_CUSTOM
                                                     : PAYLOAD_ALLOC;
    h->key = (uint32_t)(hdr >> 36) | HKEY_VALID;
    return 0;
}

/* Fills c->e with the message m (its header's checks passed, h its
 * slot) but its payload. */
static inline void decode_head(struct ember_trace *t, struct ember_cursor *c, struct cursor *k,
                               const struct hslot *h, const uint64_t *m)
{
    struct ember_trace_event *e = &c->e;
    e->site = h->site;
    e->ticks = m[1];
    e->ns = (int64_t)(m[1] - t->base_ticks);
    e->seq = k->seq++;
    c->key = m[1];
}

/* Decodes the message m (len words, its header's checks passed, h its
 * slot) into c->e: -EINVAL when a custom payload's padding count is
 * wrong. */
static int decode(struct ember_trace *t, struct ember_cursor *c, const struct hslot *h,
                  const uint64_t *m, unsigned len)
{
    decode_head(t, c, c->state, h, m);
    if (h->payload == PAYLOAD_NONE)
        return 0;
    if (h->payload == PAYLOAD_I64) {
        c->e.v[0] = (struct ember_trace_value){.i = (int64_t)m[2]};
        return 0;
    }
    const char *bytes = (const char *)(m + 2);
    size_t n = (size_t)(len - 2) * 8;
    if (h->payload == PAYLOAD_CUSTOM) { /* the last byte counts the padding bytes before it */
        unsigned pad = (unsigned char)bytes[n - 1];
        if (pad > n - 1)
            return -EINVAL;
        n -= 1 + pad;
    }
    c->e.v[0] = (struct ember_trace_value){.s = bytes, .len = n};
    return 0;
}

/* The next message, whatever it is: a new chunk, padding, a header not
 * met yet (checked), a custom payload, a message across the chunk's end,
 * an error. */
static __attribute__((noinline)) int cursor_next_slow(struct ember_trace *t, struct ember_cursor *c)
{
    struct backend *b = be(t);
    struct cursor *k = c->state;
    for (;;) {
        if (k->k >= k->n) {
            int got = fetch(t, c, k->cpos + k->n);
            if (got <= 0)
                return got;
            continue;
        }
        uint64_t pos = k->cpos + k->k, hdr = k->buf[k->k];
        unsigned len = MSG_LEN(hdr), user = MSG_USER(hdr), type = MSG_TYPE(hdr);
        if (len == 0)
            return bad_message(t, c->ring, pos, hdr, "length 0");
        if ((pos & b->mask) + len > b->L.ring_size_elements)
            return bad_message(t, c->ring, pos, hdr, "runs past the end of the ring");
        if (k->k + len > k->n) {
            if (k->cpos + k->n >= b->rings[c->ring].tail)
                return bad_message(t, c->ring, pos, hdr, "runs past the ring's tail");
            int got = fetch(t, c, pos); /* the chunk ends inside it */
            if (got <= 0)
                return got;
            continue;
        }
        const uint64_t *m = k->buf + k->k;
        k->k += len;
        if (!user && type == 0) { /* padding to the ring's end, or words lost */
            if (MSG_ID(hdr) == LOST_ID)
                lose(t, c, len);
            continue;
        }
        const char *why = length_error(user, type, len);
        if (why)
            return bad_message(t, c->ring, pos, hdr, why);
        struct hslot *h = hslot_of(b, hdr);
        int err = h->key == ((uint32_t)(hdr >> 36) | HKEY_VALID) ? 0 : hslot_fill(t, hdr, h);
        if (!err)
            err = decode(t, c, h, m, len);
        if (err)
            return err == -EINVAL
                       ? bad_message(t, c->ring, pos, hdr, "its padding count exceeds its payload")
                       : err;
        t->rings[c->ring].events++;
        return 1;
    }
}

/* The common case inline: a message whose header was met (and checked)
 * before, wholly in the chunk (which lies in the ring), with a payload of
 * none or one word. */
static int cursor_next(struct ember_trace *t, struct ember_cursor *c)
{
    struct cursor *k = c->state;
    if (k->k < k->n) {
        uint64_t hdr = k->buf[k->k];
        const struct hslot *h = hslot_of(be(t), hdr);
        size_t len = MSG_LEN(hdr);
        if (h->key == ((uint32_t)(hdr >> 36) | HKEY_VALID) && k->k + len <= k->n &&
            h->payload <= PAYLOAD_I64) {
            const uint64_t *m = k->buf + k->k;
            decode_head(t, c, k, h, m);
            if (h->payload == PAYLOAD_I64)
                c->e.v[0] = (struct ember_trace_value){.i = (int64_t)m[2]};
            k->k += len;
            t->rings[c->ring].events++;
            return 1;
        }
    }
    return cursor_next_slow(t, c);
}

static void pass_begin(struct ember_trace *t)
{
    for (unsigned i = 0; i < t->nrings; i++)
        t->rings[i].events = t->rings[i].lost_words = t->rings[i].lost = 0;
}

static void pass_end(struct ember_trace *t)
{
    (void)t;
}

static bool writer_alive(const struct ember_trace *t)
{
    return ember_source_pid_alive(t->pid);
}

/* ---- the OCaml specifics (ember_trace_ocaml_*) ---------------------------- */

int ember_trace_ocaml_layout(const struct ember_trace *t, struct ember_ocaml_layout *l)
{
    if (t->format != EMBER_TRACE_OCAML)
        return -EINVAL;
    *l = be(t)->L;
    return 0;
}

void ember_trace_ocaml_ring(const struct ember_trace *t, unsigned i, uint64_t *head, uint64_t *tail)
{
    const struct backend *b = be(t);
    *head = *tail = 0;
    if (t->format == EMBER_TRACE_OCAML && i < b->L.max_domains)
        *head = b->rings[i].open_head, *tail = b->rings[i].open_tail;
}

const char *ember_trace_ocaml_user_name(const struct ember_trace *t, unsigned id)
{
    if (t->format != EMBER_TRACE_OCAML)
        return "";
    const char *n = user_name((struct ember_trace *)t, id);
    return n ? n : "";
}

/* ---- recording ------------------------------------------------------------ */

/* While following, the words read intact go to a spool, {u32 ring, u32
 * words, u64 position} + the words, in the order read; at the end they are
 * laid out as a runtime_events file whose rings hold them all (a power of
 * two of words at least the source's, so that no message straddles a ring's
 * end there either), each ring's head where its first word read was, the
 * gaps filled with LOST_ID padding. */
struct recorder {
    struct ember_trace_recorder r;
    struct ember_trace *t;
    int fd, scratch;
    uint64_t spooled; /* bytes in the spool */
    struct ember_cursor *cs;
    unsigned ncs;
};

static int spool(struct recorder *rec, struct ember_cursor *c)
{
    struct cursor *k = c->state;
    if (k->k <= k->from)
        return 0;
    uint64_t pos = k->cpos + k->from;
    uint32_t hdr[4] = {c->ring, (uint32_t)(k->k - k->from), (uint32_t)pos, (uint32_t)(pos >> 32)};
    int err = ember_write_at(rec->scratch, hdr, sizeof(hdr), rec->spooled);
    if (!err)
        err = ember_write_at(rec->scratch, k->buf + k->from, (k->k - k->from) * 8,
                             rec->spooled + sizeof(hdr));
    if (err)
        return err;
    rec->spooled += sizeof(hdr) + (k->k - k->from) * 8;
    k->from = k->k;
    return 0;
}

static int record_poll(struct ember_trace_recorder *r, bool final)
{
    (void) final; /* the writer commits each message whole */
    struct recorder *rec = (struct recorder *)r;
    struct ember_trace *t = rec->t;
    ember_diag_clear(&t->err);
    unsigned had = rec->ncs;
    int err = refresh(t);
    if (!err)
        err = ember_source_grow_cursors(t, &rec->cs, &rec->ncs);
    for (unsigned i = had; i < rec->ncs && !err; i++)
        ((struct cursor *)rec->cs[i].state)->rec = rec;
    int n = 0, got = 0;
    for (unsigned i = 0; i < rec->ncs && !err; i++) {
        while ((got = cursor_next(t, &rec->cs[i])) > 0)
            n += n < INT32_MAX;
        err = got < 0 ? got : spool(rec, &rec->cs[i]);
    }
    return err ? err : n;
}

/* Where each ring's words go in the file being laid out. */
struct layout {
    uint64_t R, data, names, size;
    unsigned rings;
    uint64_t *first, *end; /* per ring: the first word recorded, the next to come */
};

/* Padding that stands for the words of [from, to) of ring i: lost. */
static int mark_lost(struct recorder *rec, const struct layout *lay, unsigned i, uint64_t from,
                     uint64_t to)
{
    while (from < to) {
        uint64_t slot = from & (lay->R - 1), len = to - from;
        len = len < MAX_MSG - 1 ? len : MAX_MSG - 1;
        len = len < lay->R - slot ? len : lay->R - slot;
        uint64_t hdr = len << 54 | (uint64_t)LOST_ID << 36;
        int err = ember_write_at(rec->fd, &hdr, 8, lay->data + (i * lay->R + slot) * 8);
        if (err)
            return err;
        from += len;
    }
    return 0;
}

/* Copies the spool's words into the rings, marking the gaps between. */
static int lay_words(struct recorder *rec, const struct layout *lay)
{
    uint64_t *next = calloc(lay->rings, sizeof(*next)), off = 0;
    uint64_t *words = malloc((size_t)CHUNK * 8);
    int err = next && words ? 0 : -ENOMEM;
    for (unsigned i = 0; i < lay->rings && !err; i++)
        next[i] = lay->first[i];
    while (!err && off < rec->spooled) {
        uint32_t hdr[4];
        if ((err = ember_read_at(rec->scratch, hdr, sizeof(hdr), off)) != 0)
            break;
        uint64_t pos = hdr[2] | (uint64_t)hdr[3] << 32, n = hdr[1];
        if (hdr[0] >= lay->rings || n > CHUNK ||
            (err = ember_read_at(rec->scratch, words, (size_t)n * 8, off + sizeof(hdr))) != 0) {
            err = err ? err : -EIO;
            break;
        }
        off += sizeof(hdr) + n * 8;
        err = mark_lost(rec, lay, hdr[0], next[hdr[0]], pos);
        for (uint64_t w = 0; w < n && !err;) {
            uint64_t slot = (pos + w) & (lay->R - 1), m = n - w;
            m = m < lay->R - slot ? m : lay->R - slot;
            err = ember_write_at(rec->fd, words + w, (size_t)m * 8,
                                 lay->data + (hdr[0] * lay->R + slot) * 8);
            w += m;
        }
        next[hdr[0]] = pos + n;
    }
    for (unsigned i = 0; i < lay->rings && !err; i++)
        err = mark_lost(rec, lay, i, next[i], lay->end[i]);
    free(next);
    free(words);
    return err;
}

/* The rings' extents: from the spool's first record of each to where its
 * cursor stopped. */
static int plan(struct recorder *rec, struct layout *lay)
{
    struct backend *b = be(rec->t);
    lay->rings = rec->ncs ? rec->ncs : 1;
    lay->first = calloc(lay->rings, sizeof(*lay->first));
    lay->end = calloc(lay->rings, sizeof(*lay->end));
    bool *seen = calloc(lay->rings, sizeof(*seen));
    int err = lay->first && lay->end && seen ? 0 : -ENOMEM;
    for (unsigned i = 0; i < rec->ncs && !err; i++) {
        struct cursor *k = rec->cs[i].state;
        lay->first[i] = lay->end[i] = k->cpos + k->k;
    }
    for (uint64_t off = 0; !err && off < rec->spooled;) {
        uint32_t hdr[4];
        if ((err = ember_read_at(rec->scratch, hdr, sizeof(hdr), off)) != 0 || hdr[0] >= lay->rings)
            break;
        if (!seen[hdr[0]])
            lay->first[hdr[0]] = hdr[2] | (uint64_t)hdr[3] << 32, seen[hdr[0]] = true;
        off += sizeof(hdr) + (uint64_t)hdr[1] * 8;
    }
    free(seen);
    uint64_t most = 0;
    for (unsigned i = 0; i < lay->rings && !err; i++)
        most = lay->end[i] - lay->first[i] > most ? lay->end[i] - lay->first[i] : most;
    lay->R = b->L.ring_size_elements;
    while (lay->R < most && lay->R < (1ull << 32))
        lay->R <<= 1;
    if (!err && most > lay->R)
        err = -EFBIG;
    lay->data = HEADER_BYTES + (uint64_t)lay->rings * 80;
    lay->names = lay->data + (uint64_t)lay->rings * lay->R * 8;
    lay->size = lay->names + (uint64_t)NAMES * NAME_BYTES;
    return err;
}

static int write_tables(struct recorder *rec, const struct layout *lay)
{
    uint64_t h[8] = {1, lay->rings, 80, lay->R * 8, lay->R, HEADER_BYTES, lay->data, lay->names};
    int err = ember_write_at(rec->fd, h, sizeof(h), 0);
    for (unsigned i = 0; i < lay->rings && !err; i++) {
        uint64_t ring[10] = {lay->first[i], lay->end[i]};
        err = ember_write_at(rec->fd, ring, sizeof(ring), HEADER_BYTES + (uint64_t)i * 80);
    }
    for (unsigned id = 0; id < NAMES && !err; id++) {
        const char *name = user_name(rec->t, id);
        if (name && name[0])
            err = ember_write_at(rec->fd, name, strlen(name) + 1,
                                 lay->names + (uint64_t)id * NAME_BYTES);
    }
    return err;
}

static int record_finish(struct ember_trace_recorder *r, int fd)
{
    struct recorder *rec = (struct recorder *)r;
    if (fd >= 0)
        rec->fd = fd;
    struct layout lay = {0};
    int err = plan(rec, &lay);
    if (!err && ftruncate(rec->fd, (off_t)lay.size) < 0)
        err = -errno;
    if (!err)
        err = lay_words(rec, &lay);
    if (!err)
        err = write_tables(rec, &lay);
    free(lay.first);
    free(lay.end);
    return err;
}

static void record_free(struct ember_trace_recorder *r)
{
    struct recorder *rec = (struct recorder *)r;
    ember_source_free_cursors(rec->t, rec->cs, rec->ncs);
    free(rec);
}

static int recorder_new(struct ember_trace_recorder **out, struct ember_trace *t, int fd,
                        int scratch)
{
    if (scratch < 0)
        return -EINVAL;
    struct recorder *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    rec->r = (struct ember_trace_recorder){record_poll, record_finish, record_free};
    rec->t = t;
    rec->fd = fd;
    rec->scratch = scratch;
    *out = &rec->r;
    return 0;
}

const struct ember_source_ops ember_ocaml_ops = {
    .name = "ocaml",
    .probe = probe,
    .ready = ready,
    .open = open_ocaml,
    .close = close_ocaml,
    .refresh = refresh,
    .cursor_init = cursor_init,
    .cursor_next = cursor_next,
    .cursor_free = cursor_free,
    .pass_begin = pass_begin,
    .pass_end = pass_end,
    .writer_alive = writer_alive,
    .each_packet = NULL,
    .recorder_new = recorder_new,
};
