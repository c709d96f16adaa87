/*
 * unwind_compare.c - the DWARF unwinder's two ways compared sample by
 * sample: every --call-graph dwarf sample of a perf.data is unwound by the
 * compiled CFI rows (symbol/unwind.c, what ember uses) and by libdwfl
 * alone (unwind_dwfl.c, what ember used before, as perf's own libdw
 * unwinder, unwind-libdw.c, does), and the frames must be the same.
 *
 * usage: unwind_compare FILE.data
 *
 * Prints "N samples: F by the rows, S by libdwfl, D differ" and, for the
 * first differences, both frame lists; exits 1 when any sample differs.
 * Records are handed over by the perf.data reader in time order, and
 * threads and maps tracked by pd_tasks, as the profile's reader does.
 */
#include "read/perf/perf_reader.h"
#include "symbol/unwind.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_FRAMES = 127, SHOWN = 5 };

struct compare {
    struct pd_tasks *t;
    const struct pd_file *f;
    struct ember_diag *d;
    struct pd_unwind *rows, *dwfl;
    uint64_t samples, differ;
};

static void show(const char *what, const uint64_t *ips, size_t n)
{
    printf("  %s (%zu):", what, n);
    for (size_t i = 0; i < n; i++)
        printf(" %" PRIx64, ips[i]);
    printf("\n");
}

static int on_sample(void *ctx, const struct pd_record *rec, int attr, const struct pd_sample *s)
{
    struct compare *c = ctx;
    uint64_t a[MAX_FRAMES], b[MAX_FRAMES];
    size_t na, nb;
    uint32_t process;
    const char *comm;
    size_t comm_len;
    if (attr < 0 || !s->regs || !s->stack)
        return 0;
    int err = pd_tasks_thread(c->t, s->pid, s->tid, &process, &comm, &comm_len);
    if (!err)
        err = pd_unwind_sample(c->rows, process, s, a, MAX_FRAMES, &na);
    if (!err)
        err = pd_unwind_sample(c->dwfl, process, s, b, MAX_FRAMES, &nb);
    if (err)
        return err;
    c->samples++;
    if (na == nb && memcmp(a, b, na * sizeof(*a)) == 0)
        return 0;
    if (c->differ++ < SHOWN) {
        printf("sample at offset %" PRIu64 " (%.*s %u/%u):\n", rec->offset, (int)comm_len, comm,
               s->pid, s->tid);
        show("rows  ", a, na);
        show("libdwfl", b, nb);
    }
    return 0;
}

static int on_task(void *ctx, const struct pd_record *rec, const struct pd_sample_id *id)
{
    struct compare *c = ctx;
    (void)id;
    return pd_tasks_record(c->t, c->f, rec, c->d);
}

static int on_header(void *ctx, const struct pd_file *f)
{
    ((struct compare *)ctx)->f = f;
    return 0;
}

static const struct pd_reader_tool tool = {
    .header = on_header,
    .sample = on_sample,
    .mmap = on_task,
    .comm = on_task,
    .fork = on_task,
    .exit = on_task,
    .throttle = on_task,
    .other = on_task,
};

int main(int argc, char **argv)
{
    struct ember_diag d = {0};
    struct ember_input *in = NULL;
    struct pd_reader *rd = NULL;
    struct compare c = {.d = &d};
    if (argc != 2) {
        fprintf(stderr, "usage: unwind_compare FILE.data\n");
        return 2;
    }
    int err = ember_input_open(&in, argv[1], &d);
    if (!err)
        err = pd_reader_new(&rd, in);
    if (!err)
        err = pd_tasks_new(&c.t);
    if (!err)
        err = pd_unwind_new(&c.rows, c.t);
    if (!err)
        err = pd_unwind_new(&c.dwfl, c.t);
    if (!err) {
        ember_unwind_set_dwfl_only(pd_unwind_engine(c.dwfl), true);
        err = pd_reader_run(rd, &tool, &c, &d);
    }
    if (err) {
        fprintf(stderr, "unwind_compare: %s: %s\n", argv[1], d.msg[0] ? d.msg : "error");
        return 2;
    }
    uint64_t fast, slow;
    ember_unwind_counts(pd_unwind_engine(c.rows), &fast, &slow);
    printf("%" PRIu64 " samples: %" PRIu64 " by the rows, %" PRIu64 " by libdwfl, %" PRIu64
           " differ\n",
           c.samples, fast, slow, c.differ);
    pd_unwind_free(c.rows);
    pd_unwind_free(c.dwfl);
    pd_tasks_free(c.t);
    pd_reader_free(rd);
    ember_input_close(in);
    return c.differ ? 1 : 0;
}
