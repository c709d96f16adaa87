/*
 * perf_data_kernel.c - the kernel's symbols read on a thread of their own
 * (-j 2 and more): reading /proc/kallsyms is the kernel's slow work of
 * printing some 120 thousand lines (45-55 ms of system time here, and
 * 10-15 ms more to parse them, which a second thread does as they come:
 * kallsyms_read.c), longer than a short DWARF recording's naming, so it
 * goes on beside the records' reading.
 *
 * Early, from the data's start: only /proc/kallsyms is read, as which
 * kernel was recorded is known from the feature sections after the data;
 * naming takes the table where the running kernel is the recorded one
 * (the file ember_kallsyms_load would read), and otherwise lets it go and
 * reads the recorded one's as before. Late, once the features are read:
 * the table of src, read as ember_kallsyms_load reads it.
 * Invariants: the thread touches only its own table (and, late, its
 * src); what is said of the table (why it is unusable) is said where it
 * is joined, as one thread says it.
 */
#include "read/perf/perf_data.h"
#include "symbol/kallsyms.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char kallsyms_path[] = "/proc/kallsyms";

struct pd_kernel_ahead {
    pthread_t thread;
    struct ember_kallsyms k;
    struct ember_kallsyms_source src; /* late: the thread's; early: set when taken */
    char cached[4096];
    int err;
    bool early;
};

static void *kernel_main(void *arg)
{
    struct pd_kernel_ahead *a = arg;
    a->err =
        a->early ? ember_kallsyms_read(&a->k, kallsyms_path) : ember_kallsyms_load(&a->k, &a->src);
    return NULL;
}

/* The thread started (early: reading /proc/kallsyms alone); NULL where no
 * thread could be: the table is then read where it is needed. */
static int kernel_start(struct pd_kernel_ahead *a, struct pd_kernel_ahead **out)
{
    ember_kallsyms_init(&a->k);
    a->k.read_beside = true; /* parsed as it is printed: ready when the printing ends */
    if (pthread_create(&a->thread, NULL, kernel_main, a) != 0) {
        free(a);
        a = NULL;
    }
    *out = a;
    return 0;
}

int pd_kernel_read_early(struct pd_kernel_ahead **out)
{
    struct pd_kernel_ahead *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->early = true;
    return kernel_start(a, out);
}

int pd_kernel_read_late(struct pd_kernel_ahead **early, struct pd_kernel_ahead **out,
                        void (*source)(const void *ctx, struct ember_kallsyms_source *src,
                                       char *cached),
                        const void *ctx)
{
    struct pd_kernel_ahead *a = *early;
    *early = NULL;
    if (a) {
        source(ctx, &a->src, a->cached);
        struct ember_kallsyms probe;
        ember_kallsyms_init(&probe);
        const char *path = ember_kallsyms_path(&probe, &a->src);
        bool running = path == a->src.kallsyms && strcmp(path, kallsyms_path) == 0;
        ember_kallsyms_release(&probe);
        if (running) {
            *out = a; /* what it reads is what the recorded kernel's table is read from */
            return 0;
        }
        pd_kernel_ahead_free(a);
    }
    if (!(a = calloc(1, sizeof(*a))))
        return -ENOMEM;
    source(ctx, &a->src, a->cached);
    return kernel_start(a, out);
}

int pd_kernel_join(struct pd_kernel_ahead *a, struct ember_kallsyms *into)
{
    pthread_join(a->thread, NULL);
    ember_kallsyms_release(into);
    *into = a->k; /* the table's memory moves with it */
    int err = a->early ? ember_kallsyms_finish(into, &a->src, a->src.kallsyms, a->err) : a->err;
    free(a);
    return err;
}

void pd_kernel_ahead_free(struct pd_kernel_ahead *a)
{
    if (!a)
        return;
    pthread_join(a->thread, NULL);
    ember_kallsyms_release(&a->k);
    free(a);
}
