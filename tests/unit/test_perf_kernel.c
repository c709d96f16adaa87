/*
 * test_perf_kernel.c - the kernel's symbols read on a thread of their own
 * (perf_data_kernel.c): /proc/kallsyms read early, before the recorded
 * kernel is known, is taken where it is the file the recorded kernel's
 * table is read from, and gives the table one thread reading it then
 * gives; where the recorded kernel is another (and perf's cache has no
 * copy of it), it is let go, and the table is the other kernel's answer:
 * unusable, saying why. The steps of symbol/kallsyms.h give load's table,
 * the table's sorting done by the read (on the thread), not by finish.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "read/perf/perf_data.h"
#include "symbol/kallsyms.h"

#include <string.h>

static void running(const void *ctx, struct ember_kallsyms_source *src, char *cached)
{
    (void)ctx;
    (void)cached;
    *src = (struct ember_kallsyms_source){.kallsyms = "/proc/kallsyms", .notes = "/nonexistent"};
}

static void other_kernel(const void *ctx, struct ember_kallsyms_source *src, char *cached)
{
    static const uint8_t recorded[20] = {1, 2, 3};
    running(ctx, src, cached);
    src->build_id = recorded;
    src->build_id_len = sizeof(recorded);
}

/* The table of src as ember_kallsyms_load reads it. */
static void load(struct ember_kallsyms *k,
                 void (*source)(const void *, struct ember_kallsyms_source *, char *))
{
    struct ember_kallsyms_source src;
    source(NULL, &src, NULL);
    ember_kallsyms_init(k);
    assert_int_equal(ember_kallsyms_load(k, &src), 0);
}

static void same_table(const struct ember_kallsyms *a, const struct ember_kallsyms *b)
{
    assert_true(a->loaded && b->loaded);
    assert_int_equal(a->usable, b->usable);
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->nkernel, b->nkernel);
    assert_int_equal(a->delta, b->delta);
    assert_string_equal(a->why, b->why);
}

/* The table a thread reads, joined into k: load's for source. */
static void join_as_loaded(struct pd_kernel_ahead *a,
                           void (*source)(const void *, struct ember_kallsyms_source *, char *),
                           struct ember_kallsyms *k)
{
    struct ember_kallsyms want;
    ember_kallsyms_init(k);
    assert_int_equal(pd_kernel_join(a, k), 0);
    load(&want, source);
    same_table(k, &want);
    ember_kallsyms_release(&want);
}

static void test_early_taken(void **state)
{
    (void)state;
    struct pd_kernel_ahead *early, *taken, *out;
    assert_int_equal(pd_kernel_read_early(&early), 0);
    assert_non_null(early);
    taken = early;
    assert_int_equal(pd_kernel_read_late(&early, &out, running, NULL), 0);
    assert_null(early);
    assert_ptr_equal(out, taken);
    struct ember_kallsyms k;
    join_as_loaded(out, running, &k);
    ember_kallsyms_release(&k);
}

static void test_early_let_go(void **state)
{
    (void)state;
    struct pd_kernel_ahead *early, *out;
    assert_int_equal(pd_kernel_read_early(&early), 0);
    assert_int_equal(pd_kernel_read_late(&early, &out, other_kernel, NULL), 0);
    assert_null(early);
    assert_non_null(out);
    struct ember_kallsyms k;
    join_as_loaded(out, other_kernel, &k);
    assert_false(k.usable);
    assert_non_null(strstr(k.why, "not the recorded one"));
    ember_kallsyms_release(&k);
}

/* Read first, then finished for a source: load's table. */
static void test_steps(void **state)
{
    (void)state;
    struct ember_kallsyms_source src;
    running(NULL, &src, NULL);
    struct ember_kallsyms k, want;
    ember_kallsyms_init(&k);
    int err = ember_kallsyms_read(&k, "/proc/kallsyms");
    const struct ksym *settled =
        k.syms; /* read settles it: finish (the joining thread's) keeps it */
    assert_ptr_equal(ember_kallsyms_path(&k, &src), src.kallsyms);
    assert_int_equal(ember_kallsyms_finish(&k, &src, src.kallsyms, err), 0);
    if (k.usable)
        assert_ptr_equal(k.syms, settled);
    load(&want, running);
    same_table(&k, &want);
    ember_kallsyms_release(&k);
    ember_kallsyms_release(&want);
    other_kernel(NULL, &src, NULL);
    ember_kallsyms_init(&k);
    assert_null(ember_kallsyms_path(&k, &src)); /* and perf's cache has no copy */
    assert_non_null(strstr(k.why, "not the recorded one"));
    ember_kallsyms_release(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_early_taken),
        cmocka_unit_test(test_early_let_go),
        cmocka_unit_test(test_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
