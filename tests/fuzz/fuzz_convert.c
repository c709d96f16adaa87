/*
 * fuzz_convert.c - libFuzzer target for the writers of `ember convert`: the
 * input is read as folded stacks (any bytes: names with NULs, invalid
 * UTF-8, fractions, deep stacks), then written as pprof, speedscope,
 * Chrome trace JSON, CSV and TSV, with and without the arrival sequence.
 * The pprof output must read back (ember's pprof reader) to the same
 * folded stacks, byte for byte. Any crash, leak, undefined behaviour,
 * hang or difference is a bug.
 */
#include "fuzz_common.h"
#include "ember/write.h"
#include "ember/read.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct buffer {
    char *data;
    size_t len, cap;
};

static int grow(void *ctx, const char *buf, size_t len)
{
    struct buffer *b = ctx;
    if (b->len + len > b->cap) {
        size_t cap = (b->len + len) * 2;
        char *d = realloc(b->data, cap);
        if (!d)
            return -12;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, buf, len);
    b->len += len;
    return 0;
}

/* Reads data as fmt into a new profile (NULL when it is not one). */
static struct ember_profile *read_as(const char *fmt, const void *data, size_t size, bool seq)
{
    struct ember_input *in;
    struct ember_diag d;
    if (ember_input_open_memory(&in, data, size, "fuzz", &d))
        return NULL;
    struct ember_profile *p = ember_profile_new();
    struct ember_read_opts o = {.warn = fuzz_ignore_warning};
    struct ember_read_stats st = {0};
    ember_profile_keep_sequence(p, seq);
    if (ember_format_find(fmt)->read(p, in, &o, &st, &d) != 0) {
        ember_profile_free(p);
        p = NULL;
    }
    ember_input_close(in);
    return p;
}

static struct buffer folded(const struct ember_profile *p)
{
    struct buffer b = {0};
    struct ember_sink sink = {grow, &b};
    ember_write_folded(p, &sink);
    return b;
}

/* folded -> pprof -> folded must be the identity. */
static void check_pprof(const struct ember_profile *p, const struct ember_convert_opts *co)
{
    struct buffer pb = {0};
    struct ember_sink sink = {grow, &pb};
    struct ember_diag d;
    if (ember_write_pprof(p, co, &sink, &d) != 0)
        abort();
    struct ember_profile *back = read_as("pprof", pb.data, pb.len, false);
    if (!back)
        abort();
    struct buffer a = folded(p), b = folded(back);
    if (!ember_profile_is_differential(p) &&
        (a.len != b.len || (a.len && memcmp(a.data, b.data, a.len))))
        abort();
    free(a.data);
    free(b.data);
    free(pb.data);
    ember_profile_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ember_profile *p = read_as("folded", data, size, size & 1);
    if (!p)
        return 0;
    struct ember_convert_opts co;
    ember_convert_opts_default(&co);
    struct ember_sink sink = {fuzz_discard, NULL};
    struct ember_diag d;
    check_pprof(p, &co);
    ember_write_speedscope(p, &co, &sink, &d);
    ember_write_chrome(p, &co, &sink, &d);
    ember_write_csv(p, &co, &sink, &d);
    co.separator = '\t';
    ember_write_csv(p, &co, &sink, &d);
    ember_profile_free(p);
    return 0;
}
