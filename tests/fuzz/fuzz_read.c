/*
 * fuzz_read.c - libFuzzer target for one reader (FORMAT, set at build
 * time: perf, perf.data, folded, dtrace, or auto for detection), on one
 * thread or two, followed by what the commands do with a profile: folded
 * output and a flame graph; folded input is also diffed (its halves, as
 * `diff --folded` merges them), and read by threads in byte ranges of
 * a few bytes, which must give the folded output and the counts one
 * thread gives whenever they do not leave the input to it; a perf.data
 * is also read by one thread and by three, which must give the same
 * profile, counts and error. Any crash,
 * leak, undefined behaviour or hang is a bug.
 */
#include "fuzz_common.h"
#include "ember/write.h"
#include "ember/read.h"
#include "ember/transform.h"
#include "read/read_impl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Some of the transforms, chosen by the bits of b. */
static void transform(struct ember_profile *p, uint8_t b)
{
    struct ember_transform *t = ember_transform_new();
    struct ember_diag d;
    if (!t)
        return;
    if (b & 1)
        ember_transform_add(t, EMBER_STEP_DEMANGLE, NULL, &d);
    if (b & 2)
        ember_transform_add(t, EMBER_STEP_FLATTEN_RECURSION, NULL, &d);
    if (b & 4)
        ember_transform_add(t, EMBER_STEP_COLLAPSE, "^[a-f]=[x]", &d);
    if (b & 8)
        ember_transform_add(t, EMBER_STEP_HIDE, "[0-9]", &d);
    if (b & 16)
        ember_transform_add(t, EMBER_STEP_IGNORE, "q", &d);
    if (b & 32)
        ember_transform_add(t, EMBER_STEP_MERGE_THREADS, NULL, &d);
    if (b & 64)
        ember_transform_add(t, EMBER_STEP_SKIP_AFTER, "main", &d);
    if (b & 128)
        ember_transform_add(t, EMBER_STEP_PRUNE_FROM, "^_", &d);
    ember_transform_apply(t, p);
    ember_transform_free(t);
}

/* Folded input as the two sides of `diff --folded` (its halves), read
 * on one thread or two, merged and written. */
static void stack_diff(const uint8_t *data, size_t size)
{
    struct ember_diff_opts dopts = {.normalize = size & 1, .strip_hex = size & 2};
    struct ember_stack_diff *sd;
    struct ember_input *in[2] = {NULL, NULL};
    struct ember_diag d;
    if (ember_stack_diff_new(&sd, &dopts) < 0)
        return;
    if (ember_input_open_memory(&in[0], data, size / 2, "before", &d) == 0 &&
        ember_input_open_memory(&in[1], data + size / 2, size - size / 2, "after", &d) == 0) {
        struct ember_read_opts o = {.warn = fuzz_ignore_warning, .threads = size & 4 ? 2 : 1};
        struct ember_read_stats st[2] = {{0}, {0}};
        struct ember_sink sink = {fuzz_discard, NULL};
        if (ember_stack_diff_read(sd, in, &o, st, &d) == 0)
            ember_stack_diff_write(sd, &sink);
    }
    for (unsigned i = 0; i < 2; i++)
        if (in[i])
            ember_input_close(in[i]);
    ember_stack_diff_free(sd);
}

/* A growing copy of what a writer writes. */
struct text {
    char *s;
    size_t n;
};

static int keep(void *ctx, const char *buf, size_t len)
{
    struct text *t = ctx;
    char *s = realloc(t->s, t->n + len + 1);
    if (!s)
        return -1;
    memcpy(s + t->n, buf, len);
    t->s = s;
    t->n += len;
    return 0;
}

/* Folded input read by one thread, or by threads in ranges: its folded
 * output and counts, and the reader's result (1: left to one thread). */
static int read_folded(const uint8_t *data, size_t size, uint64_t range, struct text *out,
                       struct ember_read_stats *st)
{
    struct ember_input *in;
    struct ember_diag d;
    struct ember_profile *p = ember_profile_new();
    struct ember_read_opts o = {.warn = fuzz_ignore_warning, .threads = range ? 3 : 1};
    int err = p && ember_input_open_memory(&in, data, size, "fuzz", &d) == 0 ? 0 : -1;
    if (!err) {
        err = range ? ember_folded_read_ranges(p, in, &o, st, &d, range)
                    : ember_format_folded.read(p, in, &o, st, &d);
        ember_input_close(in);
    }
    struct ember_sink sink = {keep, out};
    if (!err)
        ember_write_folded(p, &sink);
    ember_profile_free(p);
    return err;
}

static void ranges_alike(const uint8_t *data, size_t size)
{
    struct text one = {0}, many = {0};
    struct ember_read_stats st1 = {0}, st2 = {0};
    int r = read_folded(data, size, 1 + (size ? data[0] % 61 : 0), &many, &st2);
    if (r == 0 && (read_folded(data, size, 0, &one, &st1) != 0 || one.n != many.n ||
                   (one.n && memcmp(one.s, many.s, one.n) != 0) || st1.samples != st2.samples ||
                   st1.skipped != st2.skipped))
        abort(); /* the threads read otherwise than one thread */
    free(one.s);
    free(many.s);
}

/* A perf.data read on threads threads: its folded and speedscope output,
 * counts and message. */
static int read_perf_data(const uint8_t *data, size_t size, unsigned threads, struct text *out,
                          struct ember_read_stats *st, struct ember_diag *d)
{
    struct ember_input *in;
    struct ember_profile *p = ember_profile_new();
    struct ember_read_opts o = {.warn = fuzz_ignore_warning, .threads = threads};
    int err = p && ember_input_open_memory(&in, data, size, "fuzz", d) == 0 ? 0 : -1;
    if (!err) {
        err = ember_format_read(ember_format_find("perf.data"), p, in, &o, st, d);
        ember_input_close(in);
    }
    struct ember_sink sink = {keep, out};
    if (!err) /* speedscope numbers frames as the profile does, folded sorts them */
        err = ember_write_folded(p, &sink) || ember_write_speedscope(p, NULL, &sink, d);
    ember_profile_free(p);
    return err;
}

/* The same perf.data read by one thread and by three: the same profile
 * and counts, or the same error, as the threads' batches promise. */
static void threads_alike(const uint8_t *data, size_t size)
{
    struct text one = {0}, many = {0};
    struct ember_read_stats st1 = {0}, st3 = {0};
    struct ember_diag d1 = {{0}, 0, {0}}, d3 = {{0}, 0, {0}};
    int r1 = read_perf_data(data, size, 1, &one, &st1, &d1);
    int r3 = read_perf_data(data, size, 3, &many, &st3, &d3);
    if (r1 != r3 || one.n != many.n || (one.n && memcmp(one.s, many.s, one.n) != 0) ||
        (r1 == 0 && (st1.samples != st3.samples || st1.skipped != st3.skipped)) ||
        (r1 && strcmp(d1.msg, d3.msg) != 0)) /* counts on an error: how far each got */
        abort();                             /* the threads read otherwise than one thread */
    free(one.s);
    free(many.s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (strcmp(FORMAT, "folded") == 0) {
        stack_diff(data, size);
        ranges_alike(data, size);
    }
    if (strcmp(FORMAT, "perf.data") == 0)
        threads_alike(data, size);
    struct ember_input *in;
    struct ember_diag d;
    if (ember_input_open_memory(&in, data, size, "fuzz", &d))
        return 0;
    const struct ember_format *fmt = ember_format_find(FORMAT);
    if (!fmt && ember_format_detect(in, &fmt, &d) < 0) {
        ember_input_close(in);
        return 0;
    }
    struct ember_profile *p = ember_profile_new();
    struct ember_read_opts o = {.warn = fuzz_ignore_warning, .threads = size & 512 ? 2 : 1};
    /* the formats' options, by name, as the command line sets them */
    ember_read_opts_set(&o, "addrs", size & 1 ? "1" : "0");
    ember_read_opts_set(&o, "all", size & 2 ? "1" : "0");
    ember_read_opts_set(&o, "srcline", (size & 12) == 12 ? "1" : "0");
    ember_read_opts_set(&o, "no-modules", size & 128 ? "1" : "0");
    ember_read_opts_set(&o, "include-offset", size & 32 ? "1" : "0"); /* dtrace */
    /* the value: callgrind's Dr, pprof's first type; or the default */
    o.value = size & 256 ? (strcmp(FORMAT, "callgrind") == 0 ? "Dr" : "0") : NULL;
    struct ember_read_stats st = {0};
    ember_profile_keep_sequence(p, size & 16);
    if (ember_format_read(fmt, p, in, &o, &st, &d) == 0) {
        struct ember_sink sink = {fuzz_discard, NULL};
        if (size & 128)
            transform(p, data[0]);
        ember_write_folded(p, &sink);
        struct ember_flame_opts fo;
        ember_flame_opts_default(&fo);
        fo.flamechart = size & 16;
        fo.inverted = size & 32;
        fo.warn = fuzz_ignore_warning;
        struct ember_profile *r = NULL;
        if ((size & 64) && ember_profile_reverse(p, &r) == 0) {
            ember_flame_render(r, &fo, &sink, &d);
            ember_profile_free(r);
        } else {
            ember_flame_render(p, &fo, &sink, &d);
        }
    }
    ember_profile_free(p);
    ember_input_close(in);
    return 0;
}
