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
 *
 * This file opens a file and reads its header and ring headers; the
 * cursor and the sites are in ocaml_cursor.c, recording in ocaml_record.c.
 */
#include "ember/trace.h"
#include "tracefile/ocaml_events.h"
#include "base/diag.h"

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
int ember_ocaml_load_ring(struct ember_trace *t, unsigned i, uint64_t *head, uint64_t *tail)
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
        int err = ember_ocaml_load_ring(t, i, &head, &tail);
        if (!err && check)
            err = ember_ocaml_load_ring(t, i, &again, NULL);
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

int ember_ocaml_refresh(struct ember_trace *t)
{
    return read_rings(t, false);
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
    const char *n = ember_ocaml_user_name((struct ember_trace *)t, id);
    return n ? n : "";
}
const struct ember_source_ops ember_ocaml_ops = {
    .name = "ocaml",
    .probe = probe,
    .ready = ready,
    .open = open_ocaml,
    .close = close_ocaml,
    .refresh = ember_ocaml_refresh,
    .cursor_init = ember_ocaml_cursor_init,
    .cursor_next = ember_ocaml_cursor_next,
    .cursor_free = ember_ocaml_cursor_free,
    .pass_begin = pass_begin,
    .pass_end = pass_end,
    .writer_alive = writer_alive,
    .each_packet = NULL,
    .recorder_new = ember_ocaml_recorder_new,
};
