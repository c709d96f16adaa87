/*
 * test_record.c - the sampler's library contract (ember/record.h): options
 * that cannot work are -EINVAL with a message and no file written; a
 * command that cannot run is its errno, reaped; stop ends a command with
 * SIGTERM, or SIGKILL when it ignores that; its end wakes a poll at once;
 * a recording of `true` is a complete perf.data (magic, sections where the
 * header says, the features ember writes, the data section as long as the
 * stats say).
 * Tests that need perf_event_open skip (cmocka's skip) where it is not
 * permitted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ember/record.h"
#include "wire/perf_data_format.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int temp_file(void)
{
    char path[] = "/tmp/test_record_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    return fd;
}

static off_t file_size(int fd)
{
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    return st.st_size;
}

static void expect_invalid(const struct ember_record_opts *o, const char *words)
{
    int fd = temp_file();
    struct ember_recorder *r = (struct ember_recorder *)1;
    struct ember_diag d;
    ember_diag_clear(&d);
    assert_int_equal(ember_recorder_new(&r, o, fd, &d), -EINVAL);
    assert_null(r);
    assert_non_null(strstr(d.msg, words));
    assert_int_equal(file_size(fd), 0);
    close(fd);
}

static void bad_options(void **state)
{
    (void)state;
    char *argv[] = {"true", NULL};
    pid_t pid = getpid();
    struct ember_record_opts none = {0};
    expect_invalid(&none, "one of");
    struct ember_record_opts two = {.system_wide = true, .pids = &pid, .npids = 1};
    expect_invalid(&two, "one of");
    struct ember_record_opts stack = {.argv = argv, .dwarf = true, .stack_size = 9};
    expect_invalid(&stack, "multiple of 8");
    struct ember_record_opts fast = {.argv = argv, .freq = 100000000};
    expect_invalid(&fast, "perf_event_max_sample_rate");
}

/* A recorder of argv into fd (SIGKILL kill_after_ms after SIGTERM at stop;
 * 0: the default); skips when sampling is not permitted. */
static struct ember_recorder *recorder_killing(char **argv, int fd, unsigned kill_after_ms)
{
    struct ember_record_opts o = {.argv = argv, .freq = 1000, .kill_after_ms = kill_after_ms};
    struct ember_recorder *r = NULL;
    struct ember_diag d;
    ember_diag_clear(&d);
    int err = ember_recorder_new(&r, &o, fd, &d);
    if (err == -EACCES || err == -EPERM || err == -ENOSYS)
        skip();
    assert_int_equal(err, 0);
    return r;
}

static struct ember_recorder *recorder(char **argv, int fd)
{
    return recorder_killing(argv, fd, 0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Stops a recording of argv after 300 ms; the command's stats. */
static void stop_running(char **argv, struct ember_record_stats *st, double *stop_s)
{
    int fd = temp_file();
    struct ember_recorder *r = recorder_killing(argv, fd, 200);
    struct ember_diag d;
    ember_diag_clear(&d);
    assert_int_equal(ember_recorder_start(r, &d), 0);
    for (double t0 = now_s(); now_s() - t0 < 0.3;)
        assert_int_equal(ember_recorder_poll(r, 50, &d), 1);
    double t = now_s();
    assert_int_equal(ember_recorder_stop(r, &d), 0);
    *stop_s = now_s() - t;
    ember_recorder_stats(r, st);
    ember_recorder_free(r);
    close(fd);
}

/* stop ends a command with SIGTERM; one that ignores it with SIGKILL,
 * kill_after_ms later (it used to be waited for as long as it ran). */
static void stop_ends_command(void **state)
{
    (void)state;
    char *polite[] = {"sleep", "30", NULL};
    char *deaf[] = {"sh", "-c", "trap '' TERM; exec sleep 30", NULL};
    struct ember_record_stats st;
    double took;
    stop_running(polite, &st, &took);
    assert_true(st.cmd_ended && WIFSIGNALED(st.cmd_status));
    assert_int_equal(WTERMSIG(st.cmd_status), SIGTERM);
    assert_false(st.cmd_killed);
    assert_true(took < 0.2);
    stop_running(deaf, &st, &took);
    assert_true(st.cmd_ended && WIFSIGNALED(st.cmd_status));
    assert_int_equal(WTERMSIG(st.cmd_status), SIGKILL);
    assert_true(st.cmd_killed);
    assert_true(took >= 0.2 && took < 5);
}

/* The command's end wakes a poll at once, however long its timeout: a
 * caller need not wake up often to notice it (each wake-up is a context
 * switch on CPUs the recorded program may need). */
static void end_wakes_poll(void **state)
{
    (void)state;
    char *argv[] = {"sleep", "0.2", NULL};
    int fd = temp_file();
    struct ember_recorder *r = recorder(argv, fd);
    struct ember_diag d;
    ember_diag_clear(&d);
    double t0 = now_s();
    assert_int_equal(ember_recorder_start(r, &d), 0);
    int polls = 0, rc;
    while ((rc = ember_recorder_poll(r, 10000, &d)) > 0)
        polls++;
    assert_int_equal(rc, 0);
    assert_true(now_s() - t0 < 5);
    assert_true(polls < 10); /* woken by the end, not by an empty ring */
    assert_int_equal(ember_recorder_stop(r, &d), 0);
    ember_recorder_free(r);
    close(fd);
}

static void cannot_run(void **state)
{
    (void)state;
    char *argv[] = {"/nonexistent/command", NULL};
    int fd = temp_file();
    struct ember_recorder *r = recorder(argv, fd);
    struct ember_diag d;
    ember_diag_clear(&d);
    assert_int_equal(ember_recorder_start(r, &d), -ENOENT);
    assert_non_null(strstr(d.msg, "cannot run /nonexistent/command"));
    struct ember_record_stats st;
    ember_recorder_stats(r, &st);
    assert_int_equal(st.exec_errno, ENOENT);
    assert_true(st.cmd_ended); /* reaped */
    ember_recorder_free(r);
    close(fd);
}

static uint64_t u64_at(const unsigned char *b, size_t off)
{
    uint64_t v;
    memcpy(&v, b + off, sizeof(v));
    return v;
}

static void whole_file(void **state)
{
    (void)state;
    char *argv[] = {"true", NULL};
    int fd = temp_file();
    struct ember_recorder *r = recorder(argv, fd);
    struct ember_diag d;
    ember_diag_clear(&d);
    assert_int_equal(ember_recorder_start(r, &d), 0);
    while (ember_recorder_poll(r, 100, &d) > 0)
        ;
    assert_int_equal(ember_recorder_stop(r, &d), 0);
    struct ember_record_stats st;
    ember_recorder_stats(r, &st);
    assert_true(st.cmd_ended);
    assert_int_equal(st.cmd_status, 0);
    ember_recorder_free(r);

    size_t size = (size_t)file_size(fd);
    unsigned char *b = malloc(size);
    assert_int_equal(pread(fd, b, size, 0), (ssize_t)size);
    assert_memory_equal(b, PD_MAGIC, PD_MAGIC_LEN);
    assert_int_equal(u64_at(b, 8), PD_HEADER_SIZE);
    uint64_t attrs = u64_at(b, 24), data = u64_at(b, 40), data_size = u64_at(b, 48);
    assert_int_equal(u64_at(b, 16), u64_at(b, 32)); /* one attr */
    assert_int_equal(data_size, st.data_bytes);
    assert_true(data_size > 0); /* at least the command's comm and mmaps */
    assert_int_equal(attrs + u64_at(b, 32), data);
    uint64_t feat = u64_at(b, 72);
    const int want[] = {PD_FEAT_BUILD_ID, PD_FEAT_HOSTNAME,   PD_FEAT_OSRELEASE,
                        PD_FEAT_VERSION,  PD_FEAT_ARCH,       PD_FEAT_NRCPUS,
                        PD_FEAT_CMDLINE,  PD_FEAT_EVENT_DESC, PD_FEAT_SAMPLE_TIME};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_true(feat >> want[i] & 1);
    /* samples on CLOCK_MONOTONIC (where the kernel takes it) come with both
     * of perf's clock sections */
    assert_int_equal(feat >> PD_FEAT_CLOCKID & 1, feat >> PD_FEAT_CLOCK_DATA & 1);
    /* the feature table follows the data; the last section ends the file */
    size_t table = (size_t)(data + data_size);
    size_t n = (size_t)__builtin_popcountll(feat);
    assert_true(table + 16 * n <= size);
    assert_int_equal(u64_at(b, table + 16 * (n - 1)) + u64_at(b, table + 16 * (n - 1) + 8), size);
    free(b);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_options),       cmocka_unit_test(cannot_run),
        cmocka_unit_test(stop_ends_command), cmocka_unit_test(end_wakes_poll),
        cmocka_unit_test(whole_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
