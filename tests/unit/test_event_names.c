/*
 * test_event_names.c - which perf event names are one event (perf_names.h's
 * ember_perf_same_event, which both perf readers filter with): the same
 * name, the same modifiers where both have some, the same value of terms
 * both have, other terms only sampling settings. The cases perf cannot
 * record here (hardware PMU events) are here; tests/golden/perfdata.py's
 * event_names records task-clock/freq=1000/ and cpu-clock:u and reads them
 * both ways.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "read/perf/perf_names.h"

#include <string.h>

/* One event, whichever is the filter. */
static bool matches(const char *a, const char *b)
{
    bool same = ember_perf_same_event(a, strlen(a), b, strlen(b));
    assert_int_equal(same, ember_perf_same_event(b, strlen(b), a, strlen(a)));
    return same;
}

static void test_matches(void **state)
{
    (void)state;
    const char *yes[][2] = {
        {"task-clock", "task-clock"},
        {"task-clock", "task-clock/freq=1000/"},
        {"task-clock", "task-clock:u"},
        {"task-clock", "task-clock/period=100000/:u"},
        {"cpu-clock", "cpu-clock:pppH"},
        {"cycles:u", "cycles:u"},
        {"task-clock:u", "task-clock"},
        {"cycles", "cycles/period=1000,call-graph=dwarf/u"},
        {"cpu/event=0x3c/", "cpu/event=0x3c,period=100/"},
        {"cpu/event=0x3c/u", "cpu/event=0x3c/u"},
        {"sched:sched_switch", "sched:sched_switch"},
        {"context-switches/period=1/", "context-switches/period=1/"},
    };
    const char *no[][2] = {
        {"task-clock", "cpu-clock"},
        {"cycles:u", "cycles:k"},
        {"cycles/period=10/u", "cycles:k"},
        {"cpu", "cpu/event=0x3c/"},
        {"cpu/event=0x3c/", "cpu/event=0xc0/"},
        {"task-clock/freq=99/", "task-clock/freq=1000/"},
        {"sched:sched_switch", "sched:sched_wakeup"},
        {"sched", "sched:sched_switch"},
        {"task", "task-clock"},
    };
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (!matches(yes[i][0], yes[i][1]))
            fail_msg("%s should match %s", yes[i][0], yes[i][1]);
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        if (matches(no[i][0], no[i][1]))
            fail_msg("%s should not match %s", no[i][0], no[i][1]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
