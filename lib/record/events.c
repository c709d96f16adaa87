/*
 * events.c - the sampling events and their rings: one event per (thread,
 * CPU) - per CPU alone for a command (inherited by its threads and
 * children) or the whole system - and one ring per CPU.
 *
 * The attributes are perf record's: frequency mode, IP|TID|TIME|CPU|PERIOD|
 * CALLCHAIN (+ REGS_USER|STACK_USER with the kernel-only callchain in dwarf
 * mode), mmap2 with build-ids, comm, task, sample_id_all. When the first
 * event cannot be opened, perf's fallbacks are tried in turn: cpu-clock for
 * cycles, user space only when the kernel is not permitted, no build-ids in
 * mmap records on kernels without them, the default clock on kernels that
 * refuse to stamp samples with CLOCK_MONOTONIC (use_clockid: the clock of
 * OCaml's runtime events, so that samples and GC phases share one time
 * axis). Every later event uses the attributes that worked, so the file has
 * one attr per kind of event.
 *
 * Off-CPU adds, beside each sampling event, a context-switches event with
 * the same samples (period 1: every switch, with its stack) and the
 * switch-out/in records (context_switch), in the same ring. The two are
 * told apart by PERF_SAMPLE_IDENTIFIER, first in every sample and last in
 * every other record, as perf does with several events.
 */
#include "record/record_impl.h"
#include "base/diag.h"
#include "base/vec.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* perf's user registers for DWARF unwinding (arch__user_reg_mask), and
 * those a frameless leaf's caller needs beside the stack: none on x86-64
 * (its return address is on the stack, SP is where the copy starts), the
 * link register and its friends on arm64. Without registers, perf's tools
 * keep reading the callchain as frame pointers (with them they would
 * unwind the copy as DWARF and append what they find). */
#if defined(__x86_64__)
#define REC_REGS_USER 0xff0fffULL /* AX..R15 and IP, SP; not DS, ES, FS, GS */
#define REC_REGS_FP   0ULL
#elif defined(__aarch64__)
#define REC_REGS_USER ((1ULL << 33) - 1)                           /* x0..x30, sp, pc */
#define REC_REGS_FP   ((1ULL << 29) | (1ULL << 30) | (3ULL << 31)) /* fp, lr, sp, pc */
#else
#define REC_REGS_USER 0ULL
#define REC_REGS_FP   0ULL
#endif

/* A ring per CPU: 512 KiB for frame pointers, as perf's; 4 MiB for DWARF's
 * 8 KiB samples (at 4 kHz on a loaded 2-CPU machine, 1 MiB and perf's
 * 512 KiB lost samples; 4 MiB none, the program's CPU time the same). The
 * recorder wakes when a ring is half full in fp mode (perf's watermark) and
 * a quarter full in DWARF mode: 1 MiB, a quarter of perf's wake-ups, each
 * one a context switch on CPUs the program may need. */
enum { RING_PAGES_FP = 128, RING_PAGES_DWARF = 1024, RING_PAGES_MIN = 8 };

/* "0-3,6" as in /sys/devices/system/cpu/online. */
static int parse_cpu_list(struct ember_recorder *r, const char *s)
{
    size_t cap = 0;
    while (*s && *s != '\n') {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s || a < 0)
            return -EINVAL;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long c = a; c <= b; c++) {
            if (EMBER_VEC_RESERVE(r->cpus, cap, r->ncpus + 1) < 0)
                return -ENOMEM;
            r->cpus[r->ncpus++] = (int)c;
        }
        s = *end == ',' ? end + 1 : end;
    }
    return r->ncpus ? 0 : -EINVAL;
}

int rec_online_cpus(struct ember_recorder *r, struct ember_diag *d)
{
    static const char path[] = "/sys/devices/system/cpu/online";
    char line[4096];
    FILE *f = fopen(path, "re");
    int err = f && fgets(line, sizeof(line), f) ? parse_cpu_list(r, line) : -EIO;
    if (f)
        fclose(f);
    if (err < 0)
        return ember_diag_set(d, err, path, 0, "cannot read the online CPUs (expected \"0-N\")");
    return 0;
}

static bool has_command(const struct ember_recorder *r)
{
    return r->o.argv != NULL;
}

/* The command alone is sampled: its events enable at its exec. With -p or
 * -a, the command only says how long: those events are enabled before it
 * runs. */
bool rec_command_only(const struct ember_recorder *r)
{
    return has_command(r) && !r->o.system_wide && !r->o.npids;
}

static void attr_init(struct ember_recorder *r, bool cycles, bool user_only, bool build_id,
                      bool mono)
{
    struct perf_event_attr *a = &r->attr;
    const struct ember_record_opts *o = &r->o;
    memset(a, 0, sizeof(*a));
    a->size = PERF_ATTR_SIZE_VER7; /* what perf 6.1 reads; nothing later is used */
    a->type = cycles ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
    a->config = cycles ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_CPU_CLOCK;
    a->freq = 1;
    a->sample_freq = o->freq;
    a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                     PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
    if (o->dwarf) {
        a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a->sample_regs_user = REC_REGS_USER;
        a->sample_stack_user = o->stack_size;
        a->exclude_callchain_user = 1; /* the unwinder makes the user part */
        a->mmap_data = 1;              /* unwinders read .eh_frame_hdr in read-only maps */
    } else if (o->fp_stack) {
        /* the kernel's walk stays; the top of the stack lets a reader put
         * back the caller a frameless leaf hides from it */
        a->sample_type |= PERF_SAMPLE_STACK_USER | (REC_REGS_FP ? PERF_SAMPLE_REGS_USER : 0);
        a->sample_regs_user = REC_REGS_FP;
        a->sample_stack_user = o->fp_stack;
    }
    a->disabled = 1;
    a->enable_on_exec = rec_command_only(r);
    a->inherit = 1;
    a->mmap = 1;
    a->mmap2 = 1;
    a->comm = 1;
    a->comm_exec = 1;
    a->task = 1;
    a->sample_id_all = 1;
    a->build_id = build_id;
    a->use_clockid = mono;
    a->clockid = mono ? CLOCK_MONOTONIC : 0;
    a->exclude_kernel = user_only;
    if (o->off_cpu)
        a->sample_type |= PERF_SAMPLE_IDENTIFIER;
    a->watermark = 1;
    a->wakeup_watermark = o->dwarf ? RING_PAGES_DWARF * 4096u / 4 : RING_PAGES_FP * 4096u / 2;
    r->event = cycles      ? (user_only ? "cycles:u" : "cycles")
               : user_only ? "cpu-clock:u"
                           : "cpu-clock";
}

/* The context switches beside the sampling event, once it opened: its
 * samples and its ring's settings, no tracking records (the sampling
 * event writes them once), every switch sampled, and the switch records
 * that time how long a thread was away. */
static void cs_attr_init(struct ember_recorder *r)
{
    struct perf_event_attr *a = &r->cs_attr;
    *a = r->attr;
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
    a->freq = 0;
    a->sample_period = 1;
    a->mmap = a->mmap2 = a->mmap_data = a->comm = a->comm_exec = a->task = a->build_id = 0;
    a->context_switch = 1;
}

const struct perf_event_attr *rec_attr(const struct ember_recorder *r, unsigned i)
{
    return i == REC_SWITCHES ? &r->cs_attr : &r->attr;
}

const char *rec_attr_name(const struct ember_recorder *r, unsigned i)
{
    return i == REC_SWITCHES ? "context-switches" : r->event;
}

static int perf_open(const struct perf_event_attr *a, pid_t pid, int cpu, int group)
{
    long fd = syscall(SYS_perf_event_open, a, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

static int paranoid_level(void)
{
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
    int level = 2;
    if (f) {
        if (fscanf(f, "%d", &level) != 1)
            level = 2;
        fclose(f);
    }
    return level;
}

static int permission_error(struct ember_recorder *r, int err, pid_t pid, struct ember_diag *d)
{
    int level = paranoid_level();
    if (r->o.system_wide)
        return ember_diag_set(d, err, "", 0,
                              "system-wide recording (-a) is not permitted: "
                              "kernel.perf_event_paranoid is %d; it needs -1 or 0 (sysctl "
                              "kernel.perf_event_paranoid=0), or CAP_PERFMON or CAP_SYS_ADMIN",
                              level);
    if (pid > 0 && !rec_command_only(r))
        return ember_diag_set(d, err, "", 0,
                              "not permitted to record process %d: it needs the right to trace "
                              "it (same user, kernel.yama.ptrace_scope) and "
                              "kernel.perf_event_paranoid <= 2 (it is %d), or CAP_PERFMON",
                              (int)pid, level);
    return ember_diag_set(d, err, "", 0,
                          "perf_event_open is not permitted: kernel.perf_event_paranoid is %d; "
                          "it needs 2 or less (sysctl kernel.perf_event_paranoid=2), or "
                          "CAP_PERFMON or CAP_SYS_ADMIN",
                          level);
}

/* Opens the first event, falling back as perf does. */
static int open_first(struct ember_recorder *r, pid_t pid, int cpu, struct ember_diag *d)
{
    /* off-CPU time is in nanoseconds: on-CPU time must be too */
    bool cycles = !r->o.off_cpu, user_only = false, build_id = true, mono = true;
    for (;;) {
        attr_init(r, cycles, user_only, build_id, mono);
        int fd = perf_open(&r->attr, pid, cpu, -1);
        if (fd >= 0) {
            r->event_fallback = !cycles && !r->o.off_cpu;
            r->nattrs = r->o.off_cpu ? 2 : 1;
            if (r->o.off_cpu)
                cs_attr_init(r);
            return fd;
        }
        if (cycles && (fd == -ENOENT || fd == -EOPNOTSUPP || fd == -ENODEV || fd == -EINVAL))
            cycles = false;
        else if (!user_only && (fd == -EACCES || fd == -EPERM))
            user_only = true;
        else if (build_id && fd == -EINVAL)
            build_id = false;
        else if (mono && fd == -EINVAL)
            mono = false; /* before 4.1: samples on the kernel's own clock */
        else if (fd == -EACCES || fd == -EPERM)
            return permission_error(r, fd, pid, d);
        else if (fd == -ESRCH)
            return ember_diag_set(d, fd, "", 0, "no process %d", (int)pid);
        else
            return ember_diag_set(d, fd, "", 0, "perf_event_open (%s, %u Hz) failed: %s", r->event,
                                  r->o.freq, strerror(-fd));
    }
}

/* Opens event attr (REC_SAMPLING...) for pid on a CPU; 0 without adding
 * one when the thread ended while we listed them. */
static int open_event(struct ember_recorder *r, unsigned attr, pid_t pid, size_t cpu_index,
                      struct ember_diag *d)
{
    int cpu = r->cpus[cpu_index];
    int fd = r->nev == 0 ? open_first(r, pid, cpu, d) : perf_open(rec_attr(r, attr), pid, cpu, -1);
    if (fd == -ESRCH && !rec_command_only(r) && r->nev > 0)
        return 0;
    if (fd == -EACCES || fd == -EPERM)
        return permission_error(r, fd, pid, d);
    if (fd < 0)
        return d && d->msg[0] ? fd
                              : ember_diag_set(d, fd, "", 0, "perf_event_open (%s) on CPU %d: %s",
                                               rec_attr_name(r, attr), cpu, strerror(-fd));
    if (EMBER_VEC_RESERVE(r->ev, r->evcap, r->nev + 1) < 0) {
        close(fd);
        return -ENOMEM;
    }
    struct rec_event *e = &r->ev[r->nev++];
    e->fd = fd;
    e->cpu = (unsigned)cpu_index;
    e->attr = attr;
    if (ioctl(fd, PERF_EVENT_IOC_ID, &e->id) < 0)
        e->id = 0;
    return 0;
}

static int open_one(struct ember_recorder *r, pid_t pid, size_t cpu_index, struct ember_diag *d)
{
    size_t before = r->nev;
    int err = open_event(r, REC_SAMPLING, pid, cpu_index, d);
    if (!err && r->o.off_cpu && r->nev > before)
        err = open_event(r, REC_SWITCHES, pid, cpu_index, d);
    return err;
}

static int open_on_every_cpu(struct ember_recorder *r, pid_t pid, struct ember_diag *d)
{
    for (size_t c = 0; c < r->ncpus; c++) {
        int err = open_one(r, pid, c, d);
        if (err < 0)
            return err;
    }
    return 0;
}

/* Every thread of a running process: /proc/PID/task. */
static int open_process(struct ember_recorder *r, pid_t pid, struct ember_diag *d)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (!dir)
        return ember_diag_set(d, -ESRCH, "", 0, "no process %d (%s: %s)", (int)pid, path,
                              strerror(errno));
    int err = 0;
    size_t before = r->nev;
    for (struct dirent *e; !err && (e = readdir(dir));)
        if (e->d_name[0] != '.')
            err = open_on_every_cpu(r, (pid_t)atoi(e->d_name), d);
    closedir(dir);
    if (!err && r->nev == before)
        err = ember_diag_set(d, -ESRCH, "", 0, "process %d ended before it was recorded", (int)pid);
    return err;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The context switches' ids, sorted, to tell their samples from the
 * sampling event's as the rings are copied. */
static int note_cs_ids(struct ember_recorder *r)
{
    r->cs_ids = malloc((r->nev ? r->nev : 1) * sizeof(*r->cs_ids));
    if (!r->cs_ids)
        return -ENOMEM;
    for (size_t k = 0; k < r->nev; k++)
        if (r->ev[k].attr == REC_SWITCHES)
            r->cs_ids[r->ncs_ids++] = r->ev[k].id;
    qsort(r->cs_ids, r->ncs_ids, sizeof(*r->cs_ids), cmp_u64);
    return 0;
}

int rec_open_events(struct ember_recorder *r, struct ember_diag *d)
{
    int err = 0;
    if (r->o.system_wide)
        err = open_on_every_cpu(r, -1, d);
    else if (rec_command_only(r))
        err = open_on_every_cpu(r, r->child, d);
    for (size_t i = 0; !err && !r->o.system_wide && !rec_command_only(r) && i < r->o.npids; i++)
        err = open_process(r, r->o.pids[i], d);
    return err ? err : note_cs_ids(r);
}

static int map_ring(struct ember_recorder *r, struct rec_ring *g, int fd, struct ember_diag *d)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t pages = r->o.dwarf ? RING_PAGES_DWARF : RING_PAGES_FP;; pages /= 2) {
        size_t len = (pages + 1) * page;
        void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base != MAP_FAILED) {
            g->fd = fd;
            g->base = base;
            g->len = len;
            return 0;
        }
        int err = errno;
        if ((err != EPERM && err != ENOMEM) || pages <= RING_PAGES_MIN)
            return ember_diag_set(d, -err, "", 0,
                                  "cannot map a %zu KiB ring for the samples: %s (the limit is "
                                  "kernel.perf_event_mlock_kb)",
                                  pages * page / 1024, strerror(err));
    }
}

int rec_map_rings(struct ember_recorder *r, struct ember_diag *d)
{
    r->rings = calloc(r->ncpus, sizeof(*r->rings));
    if (!r->rings)
        return -ENOMEM;
    for (size_t c = 0; c < r->ncpus; c++)
        r->rings[c].fd = -1;
    for (size_t k = 0; k < r->nev; k++) {
        struct rec_ring *g = &r->rings[r->ev[k].cpu];
        int err =
            g->fd < 0 ? map_ring(r, g, r->ev[k].fd, d)
            : ioctl(r->ev[k].fd, PERF_EVENT_IOC_SET_OUTPUT, g->fd) < 0
                ? ember_diag_set(d, -errno, "", 0, "cannot share a CPU's ring: %s", strerror(errno))
                : 0;
        if (err < 0)
            return err;
    }
    return 0;
}

int rec_enable(struct ember_recorder *r, bool on)
{
    for (size_t k = 0; k < r->nev; k++)
        if (ioctl(r->ev[k].fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) < 0 && on)
            return -errno;
    return 0;
}
