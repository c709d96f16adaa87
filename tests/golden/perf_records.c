/*
 * perf_records.c - the perf.data reader's second client (the profile
 * builder is the first): counts the records its callbacks receive, by
 * type, for perf_records.py to compare with `perf report -D`'s counts.
 *
 * usage: perf_records FILE
 *        perf_records --order THREADS FILE
 * Prints "NAME COUNT" for each record type seen, in type order (NAME as
 * perf report -D prints it, "unknown-N" for a type perf does not name),
 * then "TOTAL COUNT"; exits 1 with the reader's error when it fails.
 * With --order, read with THREADS threads (pd_reader_threads: above 1,
 * the rounds sorted on threads, samples taken in runs, sample_records),
 * prints instead each record as delivered, "TYPE OFFSET SIZE MISC SUM"
 * (SUM: of its bytes, header included), in order: the
 * same lines with any THREADS, or the reader's threads deliver otherwise;
 * "changes" before each of perf's own records but FINISHED_ROUND, where
 * the reader says the file is about to change (file_changes).
 * Invariants: every record callback of the table is set and counts the record it
 * is handed, so a record the reader drops or delivers twice shows.
 */
#include "read/perf/perf_reader.h"
#include "ember/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TYPES = 128 };

struct counts {
    uint64_t n[TYPES];
    uint64_t other_types; /* types past the table: counted in TOTAL only */
};

static int count_user(void *ctx, const struct pd_record *r)
{
    struct counts *c = ctx;
    if (r->type < TYPES)
        c->n[r->type]++;
    else
        c->other_types++;
    return 0;
}

static int count(void *ctx, const struct pd_record *r, const struct pd_sample_id *id)
{
    (void)id;
    return count_user(ctx, r);
}

static int count_attr(void *ctx, const struct pd_record *r, size_t attr)
{
    (void)attr;
    return count_user(ctx, r);
}

static int count_sample(void *ctx, const struct pd_record *r, int attr, const struct pd_sample *s)
{
    (void)attr;
    (void)s;
    return count_user(ctx, r);
}

/* ---- --order: each record as delivered ----------------------------------- */

struct order {
    struct pd_reader *rd;
};

/* A record's bytes, summed (FNV-1a): what it holds, and not only where. */
static uint32_t bytes_sum(const struct pd_record *r)
{
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < r->size; i++)
        h = (h ^ r->data[i]) * 16777619u;
    return h;
}

static int print_user(void *ctx, const struct pd_record *r)
{
    (void)ctx;
    printf("%u %llu %u %u %08x\n", r->type, (unsigned long long)r->offset, r->size, r->misc,
           bytes_sum(r));
    return 0;
}

static int print_kernel(void *ctx, const struct pd_record *r, const struct pd_sample_id *id)
{
    (void)id;
    return print_user(ctx, r);
}

static int print_attr(void *ctx, const struct pd_record *r, size_t attr)
{
    (void)attr;
    return print_user(ctx, r);
}

static int print_sample(void *ctx, const struct pd_record *r, int attr, const struct pd_sample *s)
{
    (void)attr;
    (void)s;
    return print_user(ctx, r);
}

/* One of perf's own records is about to change the file: "changes",
 * which must come just before that record's line. */
static int print_changes(void *ctx)
{
    (void)ctx;
    printf("changes\n");
    return 0;
}

/* A run of samples, taken: printed, and let go of. */
static int print_run(void *ctx, const struct pd_held_record *recs, size_t n)
{
    struct order *o = ctx;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *h = recs[i].data;
        struct pd_record r = {h, pd_u32(h), pd_u16(h + 6), pd_u16(h + 4), recs[i].offset, 0};
        print_user(ctx, &r);
        pd_reader_let_go(o->rd, recs[i].hold, 1);
    }
    return 1;
}

static const struct pd_reader_tool printer = {
    .attr = print_attr,
    .sample = print_sample,
    .sample_records = print_run,
    .mmap = print_kernel,
    .comm = print_kernel,
    .fork = print_kernel,
    .exit = print_kernel,
    .context_switch = print_kernel,
    .lost = print_kernel,
    .throttle = print_kernel,
    .other = print_kernel,
    .user = print_user,
    .file_changes = print_changes,
};

static const struct pd_reader_tool counter = {
    .attr = count_attr,
    .sample = count_sample,
    .mmap = count,
    .comm = count,
    .fork = count,
    .exit = count,
    .context_switch = count,
    .lost = count,
    .throttle = count,
    .other = count,
    .user = count_user,
};

static void print_counts(const struct counts *c)
{
    uint64_t total = c->other_types;
    for (uint32_t t = 0; t < TYPES; t++) {
        if (!c->n[t])
            continue;
        const char *name = pd_record_name(t);
        if (strcmp(name, "unknown") == 0)
            printf("unknown-%u %llu\n", t, (unsigned long long)c->n[t]);
        else
            printf("%s %llu\n", name, (unsigned long long)c->n[t]);
        total += c->n[t];
    }
    printf("TOTAL %llu\n", (unsigned long long)total);
}

int main(int argc, char **argv)
{
    bool order = argc == 4 && strcmp(argv[1], "--order") == 0;
    if (argc != 2 && !order) {
        fprintf(stderr, "usage: perf_records [--order THREADS] FILE\n");
        return 2;
    }
    const char *file = argv[argc - 1];
    struct ember_diag d = {0};
    struct ember_input *in = NULL;
    struct pd_reader *rd = NULL;
    static struct counts c;
    struct order o = {0};
    int err = ember_input_open(&in, file, &d);
    if (!err)
        err = pd_reader_new(&rd, in);
    if (!err && order) {
        o.rd = rd;
        pd_reader_threads(rd, (unsigned)atoi(argv[2]));
        err = pd_reader_run(rd, &printer, &o, &d);
    } else if (!err) {
        err = pd_reader_run(rd, &counter, &c, &d);
    }
    pd_reader_free(rd);
    ember_input_close(in);
    if (err) {
        fprintf(stderr, "perf_records: %s: %s (%s)\n", file, d.msg, strerror(-err));
        return 1;
    }
    if (!order)
        print_counts(&c);
    return 0;
}
