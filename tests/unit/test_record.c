/*
 * test_record.c - the sampler's library contract (ember/record.h): options
 * that cannot work are -EINVAL with a message and no file written; a
 * command that cannot run is its errno, reaped; stop ends a command with
 * SIGTERM, or SIGKILL when it ignores that; a recording of `true` is
 * a complete perf.data (magic, sections where the header says, the
 * features ember writes, the data section as long as the stats say); the
 * caller a frame-pointer walk skips, found from the CFI and the top of the
 * stack (a program built here with cc; skipped without one).
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
#include "record/leaf.h"

#include <gelf.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
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

/* A frameless leaf and a caller with a frame, as GCC makes them at -O2
 * with frame pointers (no CET: the caller starts with push %rbp). */
static const char leaf_source[] =
    "__attribute__((noinline)) unsigned long leaf(unsigned long n) {\n"
    "  unsigned long s = 0;\n"
    "  for (unsigned long i = 0; i < n; i++) s += (i * i) ^ (s >> 3);\n"
    "  return s;\n"
    "}\n"
    "__attribute__((noinline)) unsigned long caller(unsigned long n) { return leaf(n) + 1; }\n"
    "int main(int c, char **v) { (void)v; return (int)caller((unsigned long)c); }\n";

static uint64_t symbol(const char *path, const char *name)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    uint64_t value = 0;
    for (Elf_Scn *scn = NULL; !value && (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr sh;
        Elf_Data *data = elf_getdata(scn, NULL);
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !data)
            continue;
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            const char *n =
                gelf_getsym(data, (int)i, &sym) ? elf_strptr(elf, sh.sh_link, sym.st_name) : NULL;
            if (n && strcmp(n, name) == 0)
                value = sym.st_value;
        }
    }
    elf_end(elf);
    close(fd);
    assert_true(value != 0);
    return value;
}

static void leaf_caller(void **state)
{
    (void)state;
#if !defined(__x86_64__)
    skip();
#endif
    char dir[] = "/tmp/test_leaf_XXXXXX", src[64], bin[64], cmd[256];
    assert_non_null(mkdtemp(dir));
    snprintf(src, sizeof(src), "%s/leaf.c", dir);
    snprintf(bin, sizeof(bin), "%s/leaf", dir);
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fputs(leaf_source, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "cc -O2 -fno-omit-frame-pointer -fcf-protection=none -o %s %s", bin,
             src);
    int built = system(cmd) == 0;
    if (!built) {
        unlink(src);
        rmdir(dir);
        skip();
    }
    uint64_t leaf = symbol(bin, "leaf"), caller = symbol(bin, "caller"), ret = 0;
    struct ember_leaf_cfi *c = NULL;
    assert_int_equal(ember_leaf_cfi_open(bin, &c), 0);
    const uint64_t stack[2] = {0x1111, 0x2222};
    const unsigned char *top = (const unsigned char *)stack;
    /* in the frameless leaf: the return address is the top word */
    assert_int_equal(ember_leaf_caller(c, leaf + 4, top, sizeof(stack), &ret), 1);
    assert_int_equal(ret, 0x1111);
    /* in the caller's prologue, after push %rbp: the word under it */
    assert_int_equal(ember_leaf_caller(c, caller + 1, top, sizeof(stack), &ret), 1);
    assert_int_equal(ret, 0x2222);
    /* once on %rbp, the walk has it */
    assert_int_equal(ember_leaf_caller(c, caller + 4, top, sizeof(stack), &ret), 0);
    /* a copy too short to hold it */
    assert_int_equal(ember_leaf_caller(c, caller + 1, top, 8, &ret), -ERANGE);
    ember_leaf_cfi_close(c);
    assert_int_equal(ember_leaf_cfi_open(src, &c), -EINVAL);
    unlink(src);
    unlink(bin);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_options),       cmocka_unit_test(cannot_run),
        cmocka_unit_test(stop_ends_command), cmocka_unit_test(whole_file),
        cmocka_unit_test(leaf_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
