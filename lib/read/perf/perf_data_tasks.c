/*
 * perf_data_tasks.c - threads, their names and the memory maps of their
 * processes, kept from COMM, FORK, EXIT, MMAP and MMAP2 records as perf's
 * machine.c keeps them, so that every sample gets the name and the maps
 * perf script gives it.
 *
 * perf's rules, followed here: the idle task (pid and tid 0) is
 * "swapper"; a thread seen first in a sample is named ":TID"; threads of a
 * process share its maps; a forked process gets a copy of its parent's
 * maps and name (a new thread shares them); a thread id forked anew
 * replaces the old thread; a new map cuts the parts of older maps it
 * overlaps; anonymous executable memory is the dso /tmp/perf-PID.map
 * (where JIT compilers write their symbols); what a map's name says of it
 * is perf_data_mapname.c's.
 * Invariants: a process's maps are sorted by start and never overlap; a
 * process's generation changes whenever its maps do (the unwinder and the
 * stack cache key on it); dso ids are stable.
 */
#include "read/perf/perf_data.h"
#include "base/strmap.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

enum { NO_PROCESS = PD_NO_PROCESS };

struct thread {
    uint32_t tid, process; /* process: NO_PROCESS until the pid is known */
    int64_t pid;           /* -1: unknown */
    const char *comm;
    size_t comm_len;
    bool comm_set; /* named by a COMM record (else ":TID") */
};

struct process {
    int64_t pid;
    struct pd_map *maps;
    size_t n, cap;
    uint64_t generation;
    uint64_t samples;  /* told by pd_tasks_thread */
    struct pd_map exe; /* its executable's map (dso PD_NO_DSO: not known) */
};

struct pd_tasks {
    struct thread *th;
    size_t nth, thcap;
    struct ember_u64map by_tid; /* tid -> thread index */
    struct process *pr;
    size_t npr, prcap;
    struct process kernel;
    bool have_text;
    uint64_t text;
    struct pd_dso *dsos;
    size_t ndsos, dcap;
    struct ember_strmap dso_ids; /* kind byte + name -> id + 1 */
    struct ember_arena arena;    /* names */
    uint64_t generations;        /* a source of fresh generation numbers */
};

static int register_idle(struct pd_tasks *t);

int pd_tasks_new(struct pd_tasks **out)
{
    struct pd_tasks *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    ember_arena_init(&t->arena);
    if (ember_u64map_init(&t->by_tid) < 0 || ember_strmap_init(&t->dso_ids) < 0) {
        pd_tasks_free(t);
        return -ENOMEM;
    }
    t->kernel.pid = -1;
    int err = register_idle(t);
    if (err) {
        pd_tasks_free(t);
        return err;
    }
    *out = t;
    return 0;
}

void pd_tasks_free(struct pd_tasks *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->npr; i++)
        free(t->pr[i].maps);
    free(t->kernel.maps);
    free(t->pr);
    free(t->th);
    free(t->dsos);
    ember_u64map_release(&t->by_tid);
    ember_strmap_release(&t->dso_ids);
    ember_arena_release(&t->arena);
    free(t);
}

/* ---- dsos --------------------------------------------------------------- */

static int dso_id(struct pd_tasks *t, enum pd_dso_kind kind, const char *name, size_t len,
                  uint32_t pid, uint32_t *id)
{
    char key[4096 + 8];
    if (len > 4096)
        len = 4096;
    key[0] = (char)('0' + kind);
    memcpy(key + 1, name, len);
    uintptr_t v = (uintptr_t)ember_strmap_get(&t->dso_ids, key, len + 1);
    if (v) {
        *id = (uint32_t)(v - 1);
        return 0;
    }
    if (EMBER_VEC_RESERVE(t->dsos, t->dcap, t->ndsos + 1) < 0)
        return -ENOMEM;
    char *copy = ember_arena_strndup(&t->arena, name, len);
    if (!copy || ember_strmap_put(&t->dso_ids, key, len + 1, (void *)(uintptr_t)(t->ndsos + 1)))
        return -ENOMEM;
    t->dsos[t->ndsos] = (struct pd_dso){copy, len, kind, pid};
    *id = (uint32_t)t->ndsos++;
    return 0;
}

const struct pd_dso *pd_tasks_dso(const struct pd_tasks *t, uint32_t dso)
{
    return &t->dsos[dso];
}

uint32_t pd_tasks_dso_count(const struct pd_tasks *t)
{
    return (uint32_t)t->ndsos;
}

/* ---- threads ------------------------------------------------------------ */

static int new_process(struct pd_tasks *t, int64_t pid, uint32_t *out)
{
    if (EMBER_VEC_RESERVE(t->pr, t->prcap, t->npr + 1) < 0)
        return -ENOMEM;
    t->pr[t->npr] = (struct process){.pid = pid, .generation = ++t->generations};
    t->pr[t->npr].exe.dso = PD_NO_DSO;
    *out = (uint32_t)t->npr++;
    return 0;
}

static int set_comm(struct pd_tasks *t, struct thread *th, const char *s, size_t n)
{
    char *copy = ember_arena_strndup(&t->arena, s, n);
    if (!copy)
        return -ENOMEM;
    th->comm = copy;
    th->comm_len = n;
    return 0;
}

static struct thread *find(const struct pd_tasks *t, uint32_t tid)
{
    uint32_t i;
    return ember_u64map_get(&t->by_tid, tid, &i) ? &t->th[i] : NULL;
}

static int findnew(struct pd_tasks *t, int64_t pid, uint32_t tid, struct thread **out);

/* perf's thread__init_maps: a leader (or a thread of unknown pid) gets
 * maps of its own, another thread its leader's. */
static int init_maps(struct pd_tasks *t, uint32_t index)
{
    struct thread *th = &t->th[index];
    int64_t pid = th->pid;
    uint32_t tid = th->tid, p;
    if (pid == tid || pid < 0) {
        int err = new_process(t, pid, &p);
        if (!err)
            t->th[index].process = p;
        return err;
    }
    struct thread *leader;
    int err = findnew(t, pid, (uint32_t)pid, &leader);
    if (!err)
        t->th[index].process = leader->process;
    return err;
}

/* perf's machine__update_thread_pid: a thread whose pid was unknown joins
 * its leader's maps once a record tells its pid. */
static int update_pid(struct pd_tasks *t, struct thread *th, int64_t pid)
{
    if (pid == th->pid || pid < 0 || th->pid >= 0)
        return 0;
    th->pid = pid;
    if (pid == th->tid)
        return 0;
    uint32_t tid = th->tid;
    struct thread *leader;
    int err = findnew(t, pid, (uint32_t)pid, &leader);
    if (!err)
        find(t, tid)->process = leader->process;
    return err;
}

/* perf's machine__findnew_thread. *out stays valid until the next call that
 * may add a thread. */
static int findnew(struct pd_tasks *t, int64_t pid, uint32_t tid, struct thread **out)
{
    struct thread *th = find(t, tid);
    if (th) {
        int err = update_pid(t, th, pid);
        *out = find(t, tid);
        return err;
    }
    if (EMBER_VEC_RESERVE(t->th, t->thcap, t->nth + 1) < 0)
        return -ENOMEM;
    uint32_t index = (uint32_t)t->nth++;
    t->th[index] = (struct thread){.tid = tid, .pid = pid, .process = NO_PROCESS};
    char name[16];
    int n = snprintf(name, sizeof(name), ":%d", (int32_t)tid); /* perf: ":-1" */
    int err = set_comm(t, &t->th[index], name, (size_t)n);
    if (!err)
        err = ember_u64map_put(&t->by_tid, tid, index);
    if (!err)
        err = init_maps(t, index);
    *out = &t->th[index];
    return err;
}

/* perf_session__register_idle_thread: pid 0, the idle task, is named
 * before any record (no COMM record names it). */
static int register_idle(struct pd_tasks *t)
{
    struct thread *idle;
    int err = findnew(t, 0, 0, &idle);
    if (!err)
        err = set_comm(t, idle, "swapper", strlen("swapper"));
    if (!err)
        idle->comm_set = true;
    return err;
}

/* perf's machine__remove_thread: the tid is free for a new thread. */
static void forget(struct pd_tasks *t, uint32_t tid)
{
    struct ember_u64slot *s = ember_u64map_slot(&t->by_tid, tid);
    if (!s->used)
        return;
    /* linear probing: re-place the slots after it */
    s->used = 0;
    t->by_tid.count--;
    uint32_t i = (uint32_t)(s - t->by_tid.slots);
    for (i = (i + 1) & t->by_tid.mask; t->by_tid.slots[i].used; i = (i + 1) & t->by_tid.mask) {
        struct ember_u64slot moved = t->by_tid.slots[i];
        t->by_tid.slots[i].used = 0;
        t->by_tid.count--;
        ember_u64map_put(&t->by_tid, moved.key, moved.value); /* no growth: cannot fail */
    }
}

int pd_tasks_thread(struct pd_tasks *t, uint32_t pid, uint32_t tid, uint32_t *process,
                    const char **comm, size_t *comm_len)
{
    struct thread *th;
    int err = findnew(t, (int32_t)pid < 0 ? -1 : (int64_t)pid, tid, &th);
    if (err)
        return err;
    *process = th->process;
    *comm = th->comm;
    *comm_len = th->comm_len;
    pd_tasks_count_samples(t, th->process, 1);
    return 0;
}

int pd_tasks_thread_known(const struct pd_tasks *t, uint32_t pid, uint32_t tid, uint32_t *process,
                          const char **comm, size_t *comm_len)
{
    const struct thread *th = find(t, tid);
    if (!th || ((int32_t)pid >= 0 && th->pid < 0)) /* new, or its pid to learn: findnew's */
        return 0;
    *process = th->process;
    *comm = th->comm;
    *comm_len = th->comm_len;
    return 1;
}

void pd_tasks_count_samples(struct pd_tasks *t, uint32_t process, uint64_t n)
{
    if (process != NO_PROCESS)
        t->pr[process].samples += n;
}

bool pd_tasks_main_exe(const struct pd_tasks *t, struct pd_map *exe)
{
    const struct process *best = NULL;
    for (size_t i = 0; i < t->npr; i++)
        if (t->pr[i].exe.dso != PD_NO_DSO && t->pr[i].samples &&
            (!best || t->pr[i].samples > best->samples))
            best = &t->pr[i];
    if (best)
        *exe = best->exe;
    return best != NULL;
}

uint32_t pd_tasks_pid(const struct pd_tasks *t, uint32_t process)
{
    return (uint32_t)t->pr[process].pid;
}

/* ---- maps --------------------------------------------------------------- */

static int insert_at(struct process *p, size_t i, const struct pd_map *m)
{
    if (EMBER_VEC_RESERVE(p->maps, p->cap, p->n + 1) < 0)
        return -ENOMEM;
    memmove(p->maps + i + 1, p->maps + i, (p->n - i) * sizeof(*p->maps));
    p->maps[i] = *m;
    p->n++;
    return 0;
}

/* perf's maps__fixup_overlappings then maps__insert: what older maps had
 * before and after the new one stays, the rest goes. */
static int insert_map(struct pd_tasks *t, struct process *p, const struct pd_map *m)
{
    size_t i = 0;
    while (i < p->n && p->maps[i].end <= m->start)
        i++;
    while (i < p->n && p->maps[i].start < m->end) {
        struct pd_map old = p->maps[i];
        memmove(p->maps + i, p->maps + i + 1, (p->n - i - 1) * sizeof(*p->maps));
        p->n--;
        if (old.start < m->start) {
            struct pd_map before = old;
            before.end = m->start;
            before.ref = 0;
            if (insert_at(p, i++, &before) < 0)
                return -ENOMEM;
        }
        if (m->end < old.end) {
            struct pd_map after = old;
            after.start = m->end;
            after.pgoff += m->end - old.start;
            after.ref = 0;
            if (insert_at(p, i, &after) < 0)
                return -ENOMEM;
            break; /* it ends after the new map: nothing further overlaps */
        }
    }
    p->generation = ++t->generations;
    return insert_at(p, i, m);
}

struct pd_map *pd_tasks_find_map(struct pd_tasks *t, uint32_t process, uint8_t cpumode,
                                 uint64_t addr)
{
    struct process *p;
    if (cpumode == PERF_RECORD_MISC_KERNEL)
        p = &t->kernel;
    else if (cpumode == PERF_RECORD_MISC_USER && process != NO_PROCESS)
        p = &t->pr[process];
    else
        return NULL;
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->maps[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->n && p->maps[lo].start <= addr ? &p->maps[lo] : NULL;
}

uint64_t pd_tasks_generation(const struct pd_tasks *t, uint32_t process)
{
    return (process == NO_PROCESS ? 0 : t->pr[process].generation) ^ (t->kernel.generation << 32);
}

bool pd_tasks_kernel_text(const struct pd_tasks *t, uint64_t *text)
{
    *text = t->text;
    return t->have_text;
}

/* perf's machine__process_kernel_mmap_event: the kernel's text, or a module. */
static int kernel_map(struct pd_tasks *t, uint64_t start, uint64_t len, uint64_t pgoff,
                      const char *name, size_t n)
{
    static const char kname[] = "[kernel.kallsyms]";
    bool is_kernel = pd_mapname_is_kernel(name, n);
    uint32_t dso;
    int err;
    struct pd_map m = {start, start + len, start, 0, 0};
    if (is_kernel) {
        err = dso_id(t, PD_DSO_KERNEL, kname, sizeof(kname) - 1, 0, &dso);
        if (len == 0 && start == 0)
            m.end = UINT64_MAX;
        if (pgoff) { /* the address of _text when recorded (0 under kptr_restrict) */
            t->have_text = true;
            t->text = pgoff;
        }
    } else if (n > 0 && (name[0] == '/' || name[0] == '[')) {
        char mod[256];
        size_t ml = name[0] == '[' ? (n < sizeof(mod) ? n : sizeof(mod) - 1)
                                   : pd_mapname_module(name, n, mod, sizeof(mod));
        if (name[0] == '[')
            memcpy(mod, name, ml);
        err = dso_id(t, PD_DSO_MODULE, mod, ml, 0, &dso);
    } else {
        return 0;
    }
    if (err)
        return err;
    m.dso = dso;
    if (m.end < m.start)
        m.end = UINT64_MAX;
    return insert_map(t, &t->kernel, &m);
}

/* perf's map__new: which dso a user mapping is, and how addresses map. */
static int user_map(struct pd_tasks *t, uint32_t pid, uint32_t tid, uint64_t start, uint64_t len,
                    uint64_t pgoff, uint32_t prot, uint32_t flags, const char *name, size_t n)
{
    struct thread *th;
    int err = findnew(t, pid, tid, &th);
    if (err)
        return err;
    uint32_t process = th->process;
    if (process == NO_PROCESS)
        return 0;
    bool anon = pd_mapname_is_anon(name, n) || (flags & MAP_HUGETLB),
         no_dso = pd_mapname_is_no_dso(name, n);
    struct pd_map m = {start, start + len, pgoff, 0, 0};
    if (m.end < m.start)
        m.end = UINT64_MAX;
    if ((anon || no_dso) && (prot & PROT_EXEC)) {
        char jit[32];
        int jl = snprintf(jit, sizeof(jit), "/tmp/perf-%u.map", pid);
        err = dso_id(t, PD_DSO_JIT, jit, (size_t)jl, pid, &m.dso);
    } else if (n == 6 && memcmp(name, "[vdso]", 6) == 0) {
        m.pgoff = 0;
        err = dso_id(t, PD_DSO_VDSO, name, n, 0, &m.dso);
    } else {
        err = dso_id(t, pd_mapname_is_memory(name, n) ? PD_DSO_MEMORY : PD_DSO_FILE, name, n, 0,
                     &m.dso);
    }
    if (anon || no_dso)
        m.pgoff = m.start;                /* identity: the address is its own */
    struct process *pr = &t->pr[process]; /* its first file mapped executable since exec */
    if (!err && pr->exe.dso == PD_NO_DSO && (prot & PROT_EXEC) &&
        t->dsos[m.dso].kind == PD_DSO_FILE)
        pr->exe = m;
    return err ? err : insert_map(t, pr, &m);
}

/* MMAP: pid, tid, start, len, pgoff, filename; MMAP2 adds (after pgoff)
 * 24 bytes of device and inode or build-id, then prot and flags. */
static int mmap_record(struct pd_tasks *t, const struct pd_file *f, const struct pd_record *r,
                       struct ember_diag *d)
{
    bool v2 = r->type == PERF_RECORD_MMAP2;
    size_t fixed = v2 ? 8 + 8 + 24 + 24 + 8 : 8 + 8 + 24;
    if (r->size < fixed)
        return pd_corrupt(d, f->name, r, "shorter than its fixed fields");
    const uint8_t *p = r->data + 8;
    uint32_t pid = pd_u32(p), tid = pd_u32(p + 4);
    uint64_t start = pd_u64(p + 8), len = pd_u64(p + 16), pgoff = pd_u64(p + 24);
    uint32_t prot = PROT_EXEC, flags = 0;
    if (v2) {
        prot = pd_u32(p + 56);
        flags = pd_u32(p + 60);
    } else if (r->misc & PERF_RECORD_MISC_MMAP_DATA) {
        prot = 0;
    }
    const char *name = (const char *)r->data + fixed;
    size_t n = strnlen(name, r->size - fixed);
    uint8_t cpumode = r->misc & PERF_RECORD_MISC_CPUMODE_MASK;
    if (cpumode == PERF_RECORD_MISC_KERNEL)
        return kernel_map(t, start, len, pgoff, name, n);
    if (cpumode != PERF_RECORD_MISC_USER)
        return 0; /* guests: not read */
    return user_map(t, pid, tid, start, len, pgoff, prot, flags, name, n);
}

/* KSYMBOL: a BPF program or other kernel text appearing: its own dso,
 * named as perf names it, one symbol. */
static int ksymbol_record(struct pd_tasks *t, const struct pd_file *f, const struct pd_record *r,
                          struct ember_diag *d)
{
    enum { UNREGISTER = 1 };
    if (r->size < 8 + 16 + 8)
        return pd_corrupt(d, f->name, r, "shorter than its fixed fields");
    const uint8_t *p = r->data + 8;
    uint64_t addr = pd_u64(p);
    uint32_t len = pd_u32(p + 8);
    uint16_t flags = pd_u16(p + 14);
    if (flags & UNREGISTER)
        return 0;
    const char *name = (const char *)p + 16;
    size_t n = strnlen(name, r->size - 8 - 16);
    if (pd_tasks_find_map(t, NO_PROCESS, PERF_RECORD_MISC_KERNEL, addr))
        return 0; /* perf adds a symbol to the map there; ours are whole */
    struct pd_map m = {addr, addr + len, 0, 0, 0};
    int err = dso_id(t, PD_DSO_BPF, name, n, 0, &m.dso);
    return err ? err : insert_map(t, &t->kernel, &m);
}

static int comm_record(struct pd_tasks *t, const struct pd_file *f, const struct pd_record *r,
                       struct ember_diag *d, bool *exec)
{
    if (r->size < 8 + 8)
        return pd_corrupt(d, f->name, r, "shorter than its fixed fields");
    const uint8_t *p = r->data + 8;
    uint32_t pid = pd_u32(p), tid = pd_u32(p + 4);
    const char *name = (const char *)p + 8;
    size_t n = strnlen(name, r->size - 16);
    struct thread *th;
    int err = findnew(t, pid, tid, &th);
    if (err)
        return err;
    th->comm_set = true;
    *exec = r->misc & PERF_RECORD_MISC_COMM_EXEC;
    if (*exec && th->process != NO_PROCESS) {
        t->pr[th->process].generation = ++t->generations; /* perf flushes its unwind caches */
        t->pr[th->process].exe.dso = PD_NO_DSO;           /* the next one is mapped now */
    }
    return set_comm(t, th, name, n);
}

/* perf's machine__process_fork_event and thread__fork. */
static int fork_record(struct pd_tasks *t, const struct pd_file *f, const struct pd_record *r,
                       struct ember_diag *d)
{
    if (r->size < 8 + 24)
        return pd_corrupt(d, f->name, r, "shorter than its fixed fields");
    const uint8_t *p = r->data + 8;
    uint32_t pid = pd_u32(p), ppid = pd_u32(p + 4), tid = pd_u32(p + 8), ptid = pd_u32(p + 12);
    struct thread *parent;
    int err = findnew(t, ppid, ptid, &parent);
    if (err)
        return err;
    if (parent->pid != ppid) { /* not the parent: a lost EXIT, a reused tid */
        forget(t, ptid);
        if ((err = findnew(t, ppid, ptid, &parent)) < 0)
            return err;
    }
    forget(t, tid);
    bool clone = !(r->misc & PERF_RECORD_MISC_FORK_EXEC); /* synthesized: maps follow */
    struct thread *child;
    if ((err = findnew(t, pid, tid, &child)) < 0)
        return err;
    parent = find(t, ptid); /* findnew may have moved the threads */
    child = find(t, tid);
    if (parent->comm_set) {
        child->comm = parent->comm;
        child->comm_len = parent->comm_len;
        child->comm_set = true;
    }
    if (child->pid == parent->pid || child->process == parent->process || !clone ||
        child->process == NO_PROCESS || parent->process == NO_PROCESS)
        return 0;
    /* a new process: a copy of its parent's maps */
    struct process *cp = &t->pr[child->process], *pp = &t->pr[parent->process];
    if (EMBER_VEC_RESERVE(cp->maps, cp->cap, pp->n) < 0)
        return -ENOMEM;
    if (pp->n)
        memcpy(cp->maps, pp->maps, pp->n * sizeof(*pp->maps));
    cp->n = pp->n;
    cp->generation = ++t->generations;
    cp->exe = pp->exe;
    return 0;
}

int pd_tasks_record(struct pd_tasks *t, const struct pd_file *f, const struct pd_record *r,
                    struct ember_diag *d)
{
    bool exec;
    switch (r->type) {
    case PERF_RECORD_MMAP:
    case PERF_RECORD_MMAP2:
        return mmap_record(t, f, r, d);
    case PERF_RECORD_COMM:
        return comm_record(t, f, r, d, &exec);
    case PERF_RECORD_FORK:
        return fork_record(t, f, r, d);
    case PERF_RECORD_KSYMBOL:
        return ksymbol_record(t, f, r, d);
    default:
        return 0; /* EXIT: perf keeps the thread, for samples after it */
    }
}
