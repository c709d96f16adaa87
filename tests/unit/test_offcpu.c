/*
 * test_offcpu.c - the off-CPU intervals of perf_data_offcpu.c on
 * sequences of records that real recordings make only by chance: a
 * switch-out without a sample before it (lost), a thread that ends while
 * away, one still away at the end, the idle task, a preempted switch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "read/perf/perf_data.h"

enum { OUT = PERF_RECORD_MISC_SWITCH_OUT, PREEMPT = PERF_RECORD_MISC_SWITCH_OUT_PREEMPT };

static struct pd_offcpu *fresh(void)
{
    struct pd_offcpu *o;
    assert_int_equal(pd_offcpu_new(&o), 0);
    return o;
}

/* A sample, out at 100, in at 350: 250 ns blocked under its stack. */
static void test_interval(void **state)
{
    (void)state;
    struct pd_offcpu *o = fresh();
    struct pd_offcpu_interval iv;
    assert_int_equal(pd_offcpu_stack(o, 10, 11, 7), 0);
    assert_int_equal(pd_offcpu_switch(o, 11, 100, OUT, &iv), 0);
    assert_int_equal(pd_offcpu_switch(o, 11, 350, 0, &iv), 1);
    assert_int_equal(iv.node, 7);
    assert_int_equal(iv.pid, 10);
    assert_int_equal(iv.tid, 11);
    assert_int_equal(iv.start, 100);
    assert_int_equal(iv.ns, 250);
    assert_false(iv.preempted);
    /* its stack is used: the next switch needs a sample of its own */
    assert_int_equal(pd_offcpu_switch(o, 11, 400, OUT, &iv), 0);
    assert_int_equal(pd_offcpu_switch(o, 11, 500, 0, &iv), 0);
    assert_int_equal(pd_offcpu_count(o), 1);
    pd_offcpu_free(o);
}

static void test_preempted(void **state)
{
    (void)state;
    struct pd_offcpu *o = fresh();
    struct pd_offcpu_interval iv;
    pd_offcpu_stack(o, 1, 2, 3);
    pd_offcpu_switch(o, 2, 10, OUT | PREEMPT, &iv);
    assert_int_equal(pd_offcpu_switch(o, 2, 15, 0, &iv), 1);
    assert_true(iv.preempted);
    assert_int_equal(iv.ns, 5);
    pd_offcpu_free(o);
}

/* No sample (lost), the idle task, a switch-in never switched out:
 * nothing measured rather than something wrong. */
static void test_nothing_to_measure(void **state)
{
    (void)state;
    struct pd_offcpu *o = fresh();
    struct pd_offcpu_interval iv;
    assert_int_equal(pd_offcpu_switch(o, 5, 10, OUT, &iv), 0);
    assert_int_equal(pd_offcpu_switch(o, 5, 20, 0, &iv), 0);
    pd_offcpu_stack(o, 0, 0, 1);
    pd_offcpu_switch(o, 0, 10, OUT, &iv);
    assert_int_equal(pd_offcpu_switch(o, 0, 20, 0, &iv), 0);
    pd_offcpu_stack(o, 6, 6, 1);
    assert_int_equal(pd_offcpu_switch(o, 6, 20, 0, &iv), 0);
    assert_int_equal(pd_offcpu_count(o), 0);
    pd_offcpu_free(o);
}

/* A thread that ended while away is away no more; one still away when
 * the recording ends is, until its end. */
static void test_exit_and_end(void **state)
{
    (void)state;
    struct pd_offcpu *o = fresh();
    struct pd_offcpu_interval iv;
    pd_offcpu_stack(o, 1, 1, 4);
    pd_offcpu_switch(o, 1, 100, OUT, &iv);
    pd_offcpu_exit(o, 1);
    pd_offcpu_stack(o, 1, 2, 9);
    pd_offcpu_switch(o, 2, 300, OUT, &iv);
    assert_int_equal(pd_offcpu_close_next(o, 1000, &iv), 1);
    assert_int_equal(iv.tid, 2);
    assert_int_equal(iv.node, 9);
    assert_int_equal(iv.ns, 700);
    assert_int_equal(pd_offcpu_close_next(o, 1000, &iv), 0);
    assert_int_equal(pd_offcpu_count(o), 1);
    pd_offcpu_free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interval),
        cmocka_unit_test(test_preempted),
        cmocka_unit_test(test_nothing_to_measure),
        cmocka_unit_test(test_exit_and_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
