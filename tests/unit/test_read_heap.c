/*
 * test_read_heap.c - the heap recording's reader (lib/read/heap/) on
 * archives built here by a small encoder (unit_heap.h): every
 * value per stack, realloc's two sequence numbers across threads (read in
 * stream order they would pair the wrong blocks), the window, sampled
 * scaling, several processes, and corrupt or cut input.
 *
 * Return addresses are inside this program's own functions (site_a...),
 * with a MODULE record of this program, so that stacks get their names
 * through the symbolizer. With EMBER_HEAP_SEEDS=DIR set, the archives are
 * also written there (the fuzzer's seeds, tests/fuzz/seeds/heap), with
 * this program's path replaced by a missing file's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ember/read.h"
#include "unit_heap.h"
#include "read/heap/heap_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* functions of this program that stacks name */
#define SITE(f)                                                                                    \
    __attribute__((noinline)) void f(void);                                                        \
    void f(void)                                                                                   \
    {                                                                                              \
        __asm__ volatile("nop; nop; nop; nop");                                                    \
    }
SITE(site_a)
SITE(site_b)
SITE(site_main)
/* a return address whose call is in f */
#define RET(f) ((uint64_t)(uintptr_t)(f) + 2)

/* ---- reading ----------------------------------------------------------------- */

struct result {
    struct ember_profile *p;
    int err;
    struct ember_diag d;
    char warnings[2048];
};

static void on_warn(void *ctx, const struct ember_diag *d)
{
    struct result *r = ctx;
    size_t n = strlen(r->warnings);
    snprintf(r->warnings + n, sizeof(r->warnings) - n, "%s\n", d->msg);
}

static void seed(const struct enc *e, const char *name)
{
    const char *dir = getenv("EMBER_HEAP_SEEDS");
    if (!dir)
        return;
    char path[1024], self[512];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self));
    assert_true(n > 13);
    uint8_t *copy = malloc(e->len), *at = copy;
    memcpy(copy, e->buf, e->len);
    /* the fuzzer opens no ELF file per run: this program's path becomes
     * one of the same length that is none */
    while ((at = memmem(at, e->len - (size_t)(at - copy), self, (size_t)n)))
        memcpy(memset(at, 'x', (size_t)n), "/nonexistent/", 13);
    snprintf(path, sizeof(path), "%s/%s.heap", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(copy, 1, e->len, f);
    fclose(f);
    free(copy);
}

/* Whether read_window hands the reader the recording gzip-compressed: an
 * input it cannot read at an offset, so it holds each process's records
 * in memory (the other path of heap_file.c); main runs every test both
 * ways. */
static bool gzipped;

static uint8_t *gzip(const uint8_t *b, size_t n, size_t *len)
{
    z_stream z = {0};
    assert_int_equal(deflateInit2(&z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    uint8_t *out = malloc(cap);
    z.next_in = (Bytef *)b;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    *len = z.total_out;
    deflateEnd(&z);
    return out;
}

static struct result read_window(const struct enc *e, const char *name, uint64_t from, uint64_t to)
{
    struct result r = {.p = ember_profile_new()};
    struct ember_read_opts o = {.warn = on_warn, .warn_ctx = &r, .from_ns = from, .to_ns = to};
    struct ember_read_stats st = {0};
    struct ember_input *in;
    seed(e, name);
    size_t len = e->len;
    uint8_t *gz = gzipped ? gzip(e->buf, e->len, &len) : NULL;
    assert_int_equal(ember_input_open_memory(&in, gz ? gz : e->buf, len, name, &r.d), 0);
    r.err = ember_format_read(ember_format_find("heap"), r.p, in, &o, &st, &r.d);
    ember_input_close(in);
    free(gz);
    return r;
}

static unsigned value(struct ember_profile *p, const char *type)
{
    assert_int_equal(ember_profile_select(p, type), 0);
    return ember_profile_selected(p);
}

/* The self weight of value type over nodes whose frame is named leaf. */
static int64_t at(struct ember_profile *p, const char *leaf, const char *type)
{
    unsigned v = value(p, type);
    int64_t sum = 0;
    for (uint32_t n = 1; n < ember_profile_node_count(p); n++) {
        size_t len;
        const char *name = ember_profile_frame_name(p, ember_profile_node_frame(p, n), &len);
        if (len == strlen(leaf) && memcmp(name, leaf, len) == 0)
            sum += ember_profile_self(p, n, v);
    }
    return sum;
}

static void check(struct ember_profile *p, const char *leaf, const int64_t want[7])
{
    static const char *const names[] = {"alloc_objects", "alloc_space", "inuse_objects",
                                        "inuse_space",   "peak",        "leaked",
                                        "temporary"};
    for (int k = 0; k < 7; k++) {
        int64_t got = at(p, leaf, names[k]);
        if (got != want[k])
            fail_msg("%s %s: %lld, expected %lld", leaf, names[k], (long long)got,
                     (long long)want[k]);
    }
}

/* The largest value of counter c, its points in time order, how many. */
static int64_t counter_max(struct ember_profile *p, unsigned c, size_t *points)
{
    const uint64_t *t;
    const int64_t *v;
    size_t n = *points = ember_profile_counter_points(p, c, &t, &v);
    int64_t m = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        m = v[i] > m ? v[i] : m;
        assert_true(i == 0 || t[i] >= t[i - 1]);
    }
    return m;
}

/* ---- the values ---------------------------------------------------------------- */

/* The heap in use: 100, 150, 50, 80, 50, 250 (the peak), 200. */
static void basic(struct enc *e)
{
    proc_begin(e, 7, 0, 0, 1000);
    module_self(e, 0);
    stack(e, 0, 1, RET(site_a), RET(site_main));
    stack(e, 0, 2, RET(site_b), RET(site_main));
    alloc(e, 0, 1, 100, 1, 0x1000);
    alloc(e, 0, 2, 50, 2, 0x2000);
    release(e, 0, 3, 0x1000); /* after another allocation: not temporary */
    alloc(e, 0, 4, 30, 1, 0x3000);
    release(e, 0, 5, 0x3000); /* temporary */
    alloc(e, 0, 6, 200, 2, 0x4000);
    release(e, 0, 7, 0x2000);
    release(e, 0, 8, 0x9999); /* never allocated */
    end(e, 0, EMBER_HEAP_END_EXIT, 9);
    proc_end(e, 1);
}

static void test_values(void **state)
{
    (void)state;
    struct enc e = {0};
    basic(&e);
    struct result r = read_window(&e, "basic", 0, 0);
    size_t n;
    assert_int_equal(r.err, 0);
    assert_string_equal(ember_profile_sample_type(r.p), "peak");
    check(r.p, "site_a", (const int64_t[]){2, 130, 0, 0, 0, 0, 1});
    check(r.p, "site_b", (const int64_t[]){2, 250, 1, 200, 250, 200, 0});
    assert_int_equal(at(r.p, "site_main", "alloc_space"), 0); /* callers have no self */
    assert_int_equal(ember_profile_counter_count(r.p), 1);
    assert_string_equal(ember_profile_counter_name(r.p, 0), "heap");
    assert_int_equal(counter_max(r.p, 0, &n), 250);
    assert_non_null(strstr(r.warnings, "1 frees of addresses never allocated"));
    assert_null(strstr(r.warnings, "without its end record"));
    assert_int_equal(ember_profile_meta(r.p)->time_nanos, 1700000000000000000ll);
    ember_profile_free(r.p);
    free(e.buf);
}

/* realloc in another thread: thread 0 allocates, thread 1 reallocates in
 * place (a free, then an allocation, at one address), thread 0 frees the
 * new block. In stream order the free of seq 5 would meet the first block. */
static void test_realloc_across_threads(void **state)
{
    (void)state;
    struct enc e = {0};
    proc_begin(&e, 8, 0, 0, 0);
    grow(&e, CHUNK); /* chunk 0 claimed by a thread stopped before its magic */
    e.chunks++;
    module_self(&e, 1);
    stack(&e, 1, 2, RET(site_b), 0);
    alloc(&e, 0, 1, 64, 1, 0x5000); /* stack 1 is defined later, by thread 1 */
    release(&e, 0, 5, 0x5000);
    alloc(&e, 0, 6, 8, 2, 0x7000);
    release(&e, 1, 2, 0x5000);
    alloc(&e, 1, 3, 128, 2, 0x5000);
    stack(&e, 1, 1, RET(site_a), 0);
    alloc(&e, 1, 4, 16, 1, 0x6000);
    end(&e, 1, EMBER_HEAP_END_EXIT, 7);
    proc_end(&e, 2);
    struct result r = read_window(&e, "realloc", 0, 0);
    assert_int_equal(r.err, 0);
    assert_string_equal(r.warnings, "");
    check(r.p, "site_a", (const int64_t[]){2, 80, 1, 16, 16, 16, 1}); /* realloc at once */
    check(r.p, "site_b", (const int64_t[]){2, 136, 1, 8, 128, 8, 0});
    ember_profile_free(r.p);
    free(e.buf);
}

/* A at 0 ms (10 B, site_a), B at 2 ms (20 B, site_b), A freed at 5 ms,
 * C at 8 ms (40 B, site_a); times from the process's start. */
static void timed(struct enc *e)
{
    proc_begin(e, 9, 0, 0, 1000000000);
    module_self(e, 0);
    stack(e, 0, 1, RET(site_a), 0);
    stack(e, 0, 2, RET(site_b), 0);
    alloc(e, 0, 1, 10, 1, 0x10);
    at_time(e, 0, 2000000);
    alloc(e, 0, 2, 20, 2, 0x20);
    at_time(e, 0, 5000000);
    release(e, 0, 3, 0x10);
    at_time(e, 0, 8000000);
    alloc(e, 0, 4, 40, 1, 0x30);
    proc_end(e, 1); /* no END: killed */
}

static void test_window(void **state)
{
    (void)state;
    struct enc e = {0};
    timed(&e);
    struct result r = read_window(&e, "window", 1000000, 6000000);
    size_t n;
    assert_int_equal(r.err, 0);
    check(r.p, "site_a", (const int64_t[]){0, 0, 0, 0, 0, 0, 0});
    check(r.p, "site_b", (const int64_t[]){1, 20, 1, 20, 20, 20, 0});
    assert_non_null(strstr(r.warnings, "the recording of 9 ends without its end record"));
    assert_int_equal(counter_max(r.p, 0, &n), 30);
    ember_profile_free(r.p);
    r = read_window(&e, "window", 0, 6000000);
    check(r.p, "site_a", (const int64_t[]){1, 10, 0, 0, 10, 0, 0});
    check(r.p, "site_b", (const int64_t[]){1, 20, 1, 20, 20, 20, 0});
    ember_profile_free(r.p);
    r = read_window(&e, "window", 0, 0);
    check(r.p, "site_a", (const int64_t[]){2, 50, 1, 40, 40, 40, 0});
    check(r.p, "site_b", (const int64_t[]){1, 20, 1, 20, 20, 20, 0});
    assert_int_equal(counter_max(r.p, 0, &n), 60);
    assert_int_equal(ember_profile_meta(r.p)->duration_nanos, 8000000);
    ember_profile_free(r.p);
    free(e.buf);
}

static void test_sampled(void **state)
{
    (void)state;
    struct enc e = {0};
    proc_begin(&e, 10, EMBER_HEAP_SAMPLED, 1000, 0);
    module_self(&e, 0);
    stack(&e, 0, 1, RET(site_a), 0);
    stack(&e, 0, 2, RET(site_b), 0);
    alloc(&e, 0, 1, 100, 1, 0x10);
    alloc(&e, 0, 2, 100, 1, 0x20);
    alloc(&e, 0, 3, 5000, 2, 0x30);
    release(&e, 0, 4, 0x10);
    stack(&e, 0, 3, RET(site_main), 0);
    alloc(&e, 0, 5, 1, 3, 0x40); /* a byte weighs 1000.5 at N = 1000, 1 at N = 1 (not 1.58) */
    end(&e, 0, EMBER_HEAP_END_EXIT, 6);
    proc_end(&e, 1);
    struct result r = read_window(&e, "sampled", 0, 0);
    assert_int_equal(r.err, 0);
    double sa = 1 / (1 - exp(-100.0 / 1000)), sb = 1 / (1 - exp(-5000.0 / 1000));
    /* 2 x 10.508 objects: 21 rounded once per stack (21.017), not 2 x 11 */
    check(r.p, "site_a",
          (const int64_t[]){llround(2 * sa), llround(200 * sa), llround(sa), llround(100 * sa),
                            llround(200 * sa), llround(100 * sa), 0});
    check(r.p, "site_b",
          (const int64_t[]){llround(sb), llround(5000 * sb), llround(sb), llround(5000 * sb),
                            llround(5000 * sb), llround(5000 * sb), 0});
    int64_t s1 = llround(1 / (1 - exp(-1.0 / 1000)));
    check(r.p, "site_main", (const int64_t[]){s1, s1, s1, s1, 0, s1, 0});
    assert_int_equal(llround(2 * sa), 21);
    ember_profile_free(r.p);
    /* a mean of 1 byte samples every allocation: the exact numbers */
    header(&e)->sample_bytes = 1;
    r = read_window(&e, "sampled1", 0, 0);
    check(r.p, "site_a", (const int64_t[]){2, 200, 1, 100, 200, 100, 0});
    check(r.p, "site_b", (const int64_t[]){1, 5000, 1, 5000, 5000, 5000, 0});
    check(r.p, "site_main", (const int64_t[]){1, 1, 1, 1, 0, 1, 0});
    ember_profile_free(r.p);
    free(e.buf);
}

/* A parent and its forked child: a process frame each, a counter each; the
 * child frees a block of its parent's (never allocated in its recording)
 * and allocates twice at one address (a missed free). */
static void test_processes(void **state)
{
    (void)state;
    struct enc e = {0};
    basic(&e);
    proc_begin(&e, 11, 0, 0, 2000);
    module_self(&e, 0);
    stack(&e, 0, 1, RET(site_a), 0);
    release(&e, 0, 1, 0x4000);
    alloc(&e, 0, 2, 5, 1, 0x100);
    alloc(&e, 0, 3, 7, 1, 0x100);
    end(&e, 0, EMBER_HEAP_END_EXEC, 4);
    proc_end(&e, 1);
    struct result r = read_window(&e, "fork", 0, 0);
    assert_int_equal(r.err, 0);
    check(r.p, "site_b", (const int64_t[]){2, 250, 1, 200, 250, 200, 0});
    check(r.p, "site_a", (const int64_t[]){4, 142, 1, 7, 7, 7, 1});
    char spelled[64];
    struct ember_frame fr;
    uint32_t root = ember_profile_node_frame(r.p, 1);
    ember_profile_frame(r.p, root, &fr);
    ember_frame_spell(&fr, spelled, sizeof(spelled));
    assert_int_equal(fr.kind, EMBER_FRAME_PROCESS);
    assert_true(strcmp(spelled, "prog-7") == 0 || strcmp(spelled, "prog-11") == 0);
    assert_int_equal(ember_profile_counter_count(r.p), 2);
    assert_string_equal(ember_profile_counter_name(r.p, 1), "heap prog-11");
    /* said once for the recording: the parent's unknown free (basic) and the child's */
    assert_non_null(strstr(r.warnings, "2 frees of addresses never allocated in the recording "
                                       "(allocated before it began, or by the parent before "
                                       "fork) were ignored (in 2 of the 2 processes, the first "
                                       "7)\n"));
    assert_non_null(strstr(r.warnings, "1 allocations at an address still in use (a free the "
                                       "recorder missed) ended the older block there (in 1 of "
                                       "the 2 processes, the first 11)\n"));
    ember_profile_free(r.p);
    free(e.buf);
}

/* The heap counter: 3000 allocations a microsecond apart, then their frees
 * (17 chunks): at most 3 points a millisecond (its minimum, maximum and
 * last value), the peak exact. The first free follows an allocation of the
 * same size and stack: heaptrack counts it temporary. */
static void test_counter(void **state)
{
    (void)state;
    struct enc e = {0};
    proc_begin(&e, 12, 0, 0, 0);
    module_self(&e, 0);
    stack(&e, 0, 1, RET(site_a), 0);
    for (uint64_t i = 0; i < 6000; i++) {
        at_time(&e, 0, i * 1000);
        if (i < 3000)
            alloc(&e, 0, i + 1, 10, 1, 0x1000 + i * 16);
        else
            release(&e, 0, i + 1, 0x1000 + (i - 3000) * 16);
    }
    proc_end(&e, 1);
    struct result r = read_window(&e, "counter", 0, 0);
    size_t n;
    assert_int_equal(counter_max(r.p, 0, &n), 30000);
    assert_true(n >= 6 && n <= 3 * 6);
    check(r.p, "site_a", (const int64_t[]){3000, 30000, 0, 0, 30000, 0, 1});
    ember_profile_free(r.p);
    free(e.buf);
}

/* A module whose file is no longer the one recorded (its build-id differs):
 * said once, its frames named by the file, as perf names them. */
static void test_stale_module(void **state)
{
    (void)state;
    struct enc e = {0};
    proc_begin(&e, 13, 0, 0, 0);
    module_self_id(&e, 0, (const uint8_t *)"\x01\x02\x03\x04", 4);
    stack(&e, 0, 1, RET(site_a), RET(site_main));
    alloc(&e, 0, 1, 10, 1, 0x10);
    end(&e, 0, EMBER_HEAP_END_EXIT, 2);
    proc_end(&e, 1);
    struct result r = read_window(&e, "stale", 0, 0);
    assert_int_equal(r.err, 0);
    check(r.p, "[test_read_heap]", (const int64_t[]){1, 10, 1, 10, 10, 10, 0});
    const char *said = strstr(r.warnings, "build-id mismatch");
    assert_non_null(said); /* once, for two frames */
    assert_null(strstr(said + 1, "build-id mismatch"));
    ember_profile_free(r.p);
    free(e.buf);
}

/* ---- bad input ------------------------------------------------------------------ */

/* basic's process with one thing broken: an error naming where and what. */
static void broken(int how, struct enc *e)
{
    basic(e);
    struct ember_heap_chunk *c = (struct ember_heap_chunk *)(e->buf + EMBER_HEAP_HEADER_SIZE);
    static const uint8_t cut[] = {EMBER_HEAP_ALLOC, 0x80}, tag[] = {9};
    switch (how) {
    case 0:
        c->magic = 0x12345678;
        break;
    case 1:
        put(e, 0, cut, sizeof(cut));
        break;
    case 2:
        put(e, 0, tag, sizeof(tag));
        break;
    case 3:
        alloc(e, 0, 10, 1, 5, 0x10);
        break;
    case 4:
        new_chunk(e, 0);
        chunk_of(e, 0)->first_seq = 3; /* the stream was at 8 */
        release(e, 0, 9, 0x4000);
        break;
    case 5:
        header(e)->version = 2;
        break;
    case 6:
        c->used = CHUNK; /* more than the chunk holds */
        break;
    case 7:
        alloc(e, 0, 10, 1ull << 49, 1, 0x10);
        break;
    case 8:
        header(e)->flags = EMBER_HEAP_SAMPLED; /* of mean 0 */
        break;
    }
    proc_end(e, 1);
}

static void test_corrupt(void **state)
{
    (void)state;
    static const char *const want[][2] = {
        {"chunk 0, byte 4096", "chunk magic 0x12345678"},
        {"chunk 0, byte", "runs past the chunk's used bytes"},
        {"chunk 0, byte", "unknown record tag 9"},
        {"chunk 0, byte", "stack 5, which no STACK record of process 7 defines"},
        {"chunk 1, byte 8216", "goes back in sequence"},
        {"the header, byte 8", "version 2"},
        {"chunk 0, byte 4112", "used (expected at most 4032)"},
        {"chunk 0, byte", "an allocation of 562949953421312 bytes (expected at most 2^48)"},
        {"the header, byte 32", "a sampled recording of mean 0 bytes"},
    };
    for (int how = 0; how < 9; how++) {
        struct enc e = {0};
        broken(how, &e);
        char name[32];
        snprintf(name, sizeof(name), "corrupt%d", how);
        struct result r = read_window(&e, name, 0, 0);
        assert_int_equal(r.err, -EINVAL);
        if (!strstr(r.d.msg, want[how][0]) || !strstr(r.d.msg, want[how][1]) ||
            !strstr(r.d.msg, "process 7"))
            fail_msg("case %d: %s", how, r.d.msg);
        assert_string_equal(r.d.file, name);
        ember_profile_free(r.p);
        free(e.buf);
    }
}

/* Every cut of an archive of two processes is an error naming the cut,
 * never a crash, but the cut between the two files (a whole archive of
 * the first). */
static void test_truncated(void **state)
{
    (void)state;
    struct enc e = {0};
    basic(&e);
    size_t first = e.len; /* a whole process: read alone */
    timed(&e);
    size_t len = e.len;
    for (size_t cut = 1; cut < len; cut += cut < 5000 ? 1 : 97) {
        e.len = cut;
        struct result r = read_window(&e, "cut", 0, 0);
        assert_true(cut == first ? r.err == 0 : r.err < 0);
        if ((cut > 8 && cut < 4096) || (cut > first + 8 && cut != first))
            assert_non_null(strstr(r.d.msg, "truncated input"));
        ember_profile_free(r.p);
    }
    e.len = len;
    free(e.buf);
}

/* Reading a file that can be read at any place holds its headers and one
 * window per stream, never its records: a recording of 400000 events in
 * two streams (over 400 chunks) is indexed with only the process header
 * in data, and merged with windows of at most one chunk each (the
 * encoder's chunks are smaller than a window). */
static void test_memory_bound(void **state)
{
    (void)state;
    struct enc e = {0};
    proc_begin(&e, 9, 0, 0, 0);
    stack(&e, 0, 1, 0x10, 0);
    for (uint64_t i = 0; i < 100000; i++)
        for (int s = 0; s < 2; s++) {
            alloc(&e, s, 4 * i + 2 * (uint64_t)s + 1, 16, 1, 0x1000 + 64 * (uint64_t)s);
            release(&e, s, 4 * i + 2 * (uint64_t)s + 2, 0x1000 + 64 * (uint64_t)s);
        }
    proc_end(&e, 2);
    assert_true(e.chunks > 390); /* 4 KiB each: a stream is many chunks */
    struct ember_diag d = {0};
    struct ember_input *in;
    struct heap_src *src;
    struct heap_proc p = {.input = "bound"};
    struct heap_merge *m;
    struct heap_event ev;
    assert_int_equal(ember_input_open_memory(&in, e.buf, e.len, "bound", &d), 0);
    assert_int_equal(heap_src_new(&src, in), 0);
    assert_int_equal(heap_proc_read(&p, src, &d), 1);
    assert_true(p.cap <= EMBER_HEAP_HEADER_SIZE);
    assert_int_equal(heap_merge_new(&m, &p, &d), 0);
    size_t events = 0, most = 0, held;
    while (heap_merge_next(m, &ev, &d) == 1) {
        events++;
        most = (held = heap_merge_held(m)) > most ? held : most;
    }
    assert_int_equal(events, 400000);
    assert_true(most > 0 && most <= 2 * (CHUNK - EMBER_HEAP_CHUNK_HEADER));
    heap_merge_free(m);
    heap_proc_release(&p);
    heap_src_free(src);
    ember_input_close(in);
    free(e.buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),       cmocka_unit_test(test_realloc_across_threads),
        cmocka_unit_test(test_window),       cmocka_unit_test(test_sampled),
        cmocka_unit_test(test_processes),    cmocka_unit_test(test_corrupt),
        cmocka_unit_test(test_truncated),    cmocka_unit_test(test_counter),
        cmocka_unit_test(test_stale_module), cmocka_unit_test(test_memory_bound),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    gzipped = true;
    return failed + cmocka_run_group_tests(tests, NULL, NULL);
}
