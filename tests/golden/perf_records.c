/*
 * perf_records.c - the perf.data reader's second client (the profile
 * builder is the first): counts the records its callbacks receive, by
 * type, for perf_records.py to compare with `perf report -D`'s counts.
 *
 * usage: perf_records FILE
 * Prints "NAME COUNT" for each record type seen, in type order (NAME as
 * perf report -D prints it, "unknown-N" for a type perf does not name),
 * then "TOTAL COUNT"; exits 1 with the reader's error when it fails.
 * Invariants: every record callback of the table is set and counts the record it
 * is handed, so a record the reader drops or delivers twice shows.
 */
#include "read/perf/perf_reader.h"
#include "ember/base.h"

#include <stdio.h>
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
    if (argc != 2) {
        fprintf(stderr, "usage: perf_records FILE\n");
        return 2;
    }
    struct ember_diag d = {0};
    struct ember_input *in = NULL;
    struct pd_reader *rd = NULL;
    static struct counts c;
    int err = ember_input_open(&in, argv[1], &d);
    if (!err)
        err = pd_reader_new(&rd, in);
    if (!err)
        err = pd_reader_run(rd, &counter, &c, &d);
    pd_reader_free(rd);
    ember_input_close(in);
    if (err) {
        fprintf(stderr, "perf_records: %s: %s (%s)\n", argv[1], d.msg, strerror(-err));
        return 1;
    }
    print_counts(&c);
    return 0;
}
