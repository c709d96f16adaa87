/*
 * ember/trace.h - record what a program does, at about the cost of reading
 * the clock.
 *
 *     #include <ember/trace.h>
 *     void handle(struct request *r) {
 *         EMBER_SPAN("handle");                  // begin here, end at the closing brace
 *         EMBER_INSTANT("parsed", EMBER_I64("bytes", r->len));
 *         EMBER_COUNTER("queue_depth", depth);
 *     }
 *
 * Run the program with EMBER_TRACE=PATH (or call ember_trace_start()) and
 * its events go to PATH: a memory-mapped file of per-thread rings that
 * `ember trace` reads while the program runs or after it died. Without
 * EMBER_TRACE, an event costs one predictable branch; built with
 * -DEMBER_TRACE_DISABLE, every macro is an empty statement that still
 * type-checks its arguments.
 *
 * Names are string literals (or strings that live as long as the program):
 * each call site registers its name and field names once. Fields: EMBER_I64,
 * EMBER_F64 and EMBER_STR (up to 64 bytes kept), at most 8 per event.
 * Link with -lember-trace (pkg-config ember-trace).
 */
#ifndef EMBER_TRACE_H
#define EMBER_TRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EMBER_TRACE_API __attribute__((visibility("default")))

/* ---- running ---------------------------------------------------------- */

struct ember_trace_opts {
    size_t ring_bytes;    /* per thread (1 MiB); rounded to whole packets */
    size_t packet_bytes;  /* (64 KiB) */
    unsigned max_threads; /* rings in the file (256) */
    int drain;            /* 0: flight recorder, the oldest events are overwritten;
                             1: a consumer drains the rings, nothing is lost while it
                             keeps up, and what it misses is counted */
};

#ifndef EMBER_TRACE_DISABLE
/* Starts tracing into a new file at path (created 0600; an existing file is
 * never touched: PATH.1, PATH.2... are tried; "%p" in path becomes the
 * pid). EMBER_TRACE=PATH does this at program start, with EMBER_TRACE_RING,
 * EMBER_TRACE_THREADS and EMBER_TRACE_MODE=drain for the options.
 * Returns 0 or a negative errno. */
EMBER_TRACE_API int ember_trace_start(const char *path, const struct ember_trace_opts *opts);
/* Stops tracing: the file stays complete and readable. */
EMBER_TRACE_API void ember_trace_stop(void);
/* The file being written ("" when not tracing). */
EMBER_TRACE_API const char *ember_trace_path(void);
/* Names the calling thread in the trace. */
EMBER_TRACE_API void ember_thread_name(const char *name);
#else
/* Compiled out: the same calls, doing nothing (start says "not supported"). */
static inline int ember_trace_start(const char *path, const struct ember_trace_opts *opts)
{
    (void)path;
    (void)opts;
    return -38; /* -ENOSYS */
}
static inline void ember_trace_stop(void) {}
static inline const char *ember_trace_path(void)
{
    return "";
}
static inline void ember_thread_name(const char *name)
{
    (void)name;
}
#endif

/* ---- fields ----------------------------------------------------------- */

enum ember_field_type { EMBER_FT_I64 = 1, EMBER_FT_F64 = 2, EMBER_FT_STR = 3 };

struct ember_field {
    const char *name;
    int type;
    union {
        int64_t i;
        double f;
        const char *s;
    } v;
};

#define EMBER_I64(name, x) ((struct ember_field){(name), EMBER_FT_I64, {.i = (int64_t)(x)}})
#define EMBER_F64(name, x) ((struct ember_field){(name), EMBER_FT_F64, {.f = (double)(x)}})
#define EMBER_STR(name, x) ((struct ember_field){(name), EMBER_FT_STR, {.s = (x)}})

/* ---- user-defined event types ----------------------------------------- */

/* A library's own kind of event, with a fixed list of fields:
 *     static const struct ember_field io_schema[] = {
 *         EMBER_I64("fd", 0), EMBER_STR("op", 0)};
 *     EMBER_EVENT_TYPE(io_event, "loop.io", io_schema);
 *     ...
 *     EMBER_EMIT(io_event, EMBER_I64("fd", fd), EMBER_STR("op", "read"));
 * Emitted fields must follow the schema's order and types. */
#define EMBER_EVENT_TYPE(var, name, schema)                                                        \
    static struct ember__site var = {                                                              \
        (name), EMBER__EVENT, sizeof(schema) / sizeof((schema)[0]), 0, (schema), 0, {0}}

/* ---- internals the macros use ----------------------------------------- */

enum { EMBER__BEGIN = 1, EMBER__END = 2, EMBER__INSTANT = 3, EMBER__COUNTER = 4, EMBER__EVENT = 5 };

struct ember__site {
    const char *name;
    uint8_t kind;
    uint8_t nfields;
    uint16_t reserved;
    const struct ember_field *schema; /* field names and types (static), or NULL */
    uint32_t id;                      /* 0 until registered */
    uint8_t types[8];                 /* the fields' types, set when registered */
};

/* The calling thread's place in its ring. */
struct ember__writer {
    char *pos;      /* next event goes here */
    char *end;      /* end of the current packet (pos == end: take the slow path) */
    uint64_t *head; /* the ring's published position */
    uint64_t delta; /* position = (uint64_t)pos + delta */
    uint64_t count; /* events written */
    uint64_t last;  /* timestamp of the last event */
};

/* 0: not tracing; 1: tracing, timestamps from the TSC; 2: from clock_gettime */
extern EMBER_TRACE_API int ember__on;
extern EMBER_TRACE_API __thread struct ember__writer ember__w
    __attribute__((tls_model("initial-exec")));

EMBER_TRACE_API uint32_t ember__register(struct ember__site *site);
EMBER_TRACE_API void ember__emit_slow(struct ember__site *site, uint64_t value);
EMBER_TRACE_API void ember__emit_fields(struct ember__site *site, const struct ember_field *f,
                                        unsigned n);
EMBER_TRACE_API uint64_t ember__clock(void);

static inline __attribute__((always_inline)) uint64_t ember__now(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_expect(ember__on == 1, 1)) {
        uint32_t lo, hi;
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        return (uint64_t)hi << 32 | lo;
    }
#endif
    return ember__clock();
}

/* An event of 16 bytes (24 with a value): id and size, timestamp, value. */
static inline __attribute__((always_inline)) void ember__emit(struct ember__site *site,
                                                              int with_value, uint64_t value)
{
    if (__builtin_expect(!ember__on, 1))
        return;
    uint32_t id = __atomic_load_n(&site->id, __ATOMIC_RELAXED);
    struct ember__writer *w = &ember__w;
    char *p = w->pos;
    unsigned size = with_value ? 24 : 16;
    if (__builtin_expect(!id || (uintptr_t)p + size > (uintptr_t)w->end, 0)) {
        ember__emit_slow(site, value);
        return;
    }
    uint64_t t = ember__now();
    uint64_t *e = (uint64_t *)(void *)p;
    e[0] = (uint64_t)id | (uint64_t)size << 32;
    e[1] = t;
    if (with_value)
        e[2] = value;
    w->pos = p + size;
    w->count++;
    w->last = t;
    __atomic_store_n(w->head, (uint64_t)(uintptr_t)(p + size) + w->delta, __ATOMIC_RELEASE);
}

static inline void ember__span_cleanup(struct ember__site **site)
{
    ember__emit(*site, 0, 0);
}

static inline uint64_t ember__f64_bits(double d)
{
    union {
        double d;
        uint64_t u;
    } x = {d};
    return x.u;
}

#define EMBER__CAT2(a, b) a##b
#define EMBER__CAT(a, b)  EMBER__CAT2(a, b)
#define EMBER__SITE(var, name, kind)                                                               \
    static struct ember__site var = {(name), (kind), 0, 0, 0, 0, {0}}
#define EMBER__NARGS(...) (sizeof((struct ember_field[]){__VA_ARGS__}) / sizeof(struct ember_field))

/* An event of kind at this call site, with optional fields. */
#define EMBER__EVENT_AT(kind, name, ...)                                                           \
    do {                                                                                           \
        static struct ember__site ember__s = {(name), (kind), 0, 0, 0, 0, {0}};                    \
        __VA_OPT__(if (__builtin_expect(ember__on, 0)) ember__emit_fields(                         \
                       &ember__s, (struct ember_field[]){__VA_ARGS__}, EMBER__NARGS(__VA_ARGS__)); \
                   else)                                                                           \
        ember__emit(&ember__s, 0, 0);                                                              \
    } while (0)

#ifndef EMBER_TRACE_DISABLE

#define EMBER_SPAN_BEGIN(name, ...) EMBER__EVENT_AT(EMBER__BEGIN, name __VA_OPT__(, ) __VA_ARGS__)
#define EMBER_SPAN_END(name, ...)   EMBER__EVENT_AT(EMBER__END, name __VA_OPT__(, ) __VA_ARGS__)
#define EMBER_INSTANT(name, ...)    EMBER__EVENT_AT(EMBER__INSTANT, name __VA_OPT__(, ) __VA_ARGS__)

/* A span from here to the end of the enclosing block. */
#define EMBER_SPAN(name)                                                                           \
    EMBER__SITE(EMBER__CAT(ember__sb, __LINE__), name, EMBER__BEGIN);                              \
    EMBER__SITE(EMBER__CAT(ember__se, __LINE__), name, EMBER__END);                                \
    ember__emit(&EMBER__CAT(ember__sb, __LINE__), 0, 0);                                           \
    struct ember__site *EMBER__CAT(ember__sg, __LINE__)                                            \
        __attribute__((cleanup(ember__span_cleanup), unused)) = &EMBER__CAT(ember__se, __LINE__)

/* A counter sample: an integer, or a double when value is floating. */
#define EMBER_COUNTER(name, value)                                                                 \
    do {                                                                                           \
        static struct ember__site ember__s = {(name), EMBER__COUNTER,    1, 0, 0,                  \
                                              0,      {EMBER__CT(value)}};                         \
        ember__emit(&ember__s, 1, EMBER__CV(value));                                               \
    } while (0)
#define EMBER__CT(value)                                                                           \
    _Generic((value), float : EMBER_FT_F64, double : EMBER_FT_F64, default : EMBER_FT_I64)
#define EMBER__CV(value)                                                                           \
    _Generic((value), float                                                                        \
             : ember__f64_bits((double)(value)), double                                            \
             : ember__f64_bits((double)(value)), default                                           \
             : (uint64_t)(int64_t)(value))

#define EMBER_EMIT(var, ...)                                                                       \
    do {                                                                                           \
        if (__builtin_expect(ember__on, 0))                                                        \
            ember__emit_fields(&(var), (struct ember_field[]){__VA_ARGS__},                        \
                               EMBER__NARGS(__VA_ARGS__));                                         \
    } while (0)

#else /* EMBER_TRACE_DISABLE: nothing runs, everything still type-checks */

#define EMBER__CHECK(name, ...)                                                                    \
    do {                                                                                           \
        if (0) {                                                                                   \
            const char *ember__n = (name);                                                         \
            (void)ember__n;                                                                        \
            __VA_OPT__((void)(struct ember_field[]){__VA_ARGS__};)                                 \
        }                                                                                          \
    } while (0)
#define EMBER_SPAN_BEGIN(name, ...) EMBER__CHECK(name __VA_OPT__(, ) __VA_ARGS__)
#define EMBER_SPAN_END(name, ...)   EMBER__CHECK(name __VA_OPT__(, ) __VA_ARGS__)
#define EMBER_INSTANT(name, ...)    EMBER__CHECK(name __VA_OPT__(, ) __VA_ARGS__)
#define EMBER_SPAN(name)            EMBER__CHECK(name)
#define EMBER_COUNTER(name, value)                                                                 \
    do {                                                                                           \
        if (0) {                                                                                   \
            const char *ember__n = (name);                                                         \
            (void)ember__n;                                                                        \
            (void)(value);                                                                         \
        }                                                                                          \
    } while (0)
#define EMBER_EMIT(var, ...)                                                                       \
    do {                                                                                           \
        if (0) {                                                                                   \
            (void)(var);                                                                           \
            (void)(struct ember_field[]){__VA_ARGS__};                                             \
        }                                                                                          \
    } while (0)

#endif

#ifdef __cplusplus
}
#endif

#endif
