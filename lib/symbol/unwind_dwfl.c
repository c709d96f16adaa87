/*
 * unwind_dwfl.c - DWARF call graphs unwound with libdwfl's CFI unwinder
 * (dwfl_attach_state, dwfl_getthread_frames), as perf script unwinds
 * them: the samples whose CFI rows unwind.c cannot evaluate itself (DWARF
 * expressions, .debug_frame), and every sample for the tests that compare
 * the two. The sampled address first, each caller's return address minus
 * one (perf's and dwfl_frame_pc's "not an activation": the call, not what
 * follows it), at most max frames.
 *
 * One Dwfl session per process, kept across its samples (a fresh one per
 * sample reads every module's CFI again: issue 10 measured 441 us per
 * sample that way, 2.4 us kept). A session reports the process's ELF files
 * lazily, as the unwinder meets their addresses (the caller's maps at the
 * sample's time, base = start - pgoff, as perf reports them; [vdso] from
 * this process's own image); a session whose module at an address is no
 * longer the file mapped there (an exec, a library unloaded and another
 * loaded) is ended and started again. At most MAX_SESSIONS are open (the
 * least recently used is ended): each holds its files open. Files are
 * read at their mapped paths: the build-ids that would find perf's cached
 * copies come at the end of a perf.data, after the samples.
 * Only the copied stack is read as memory: an address outside it ends the
 * unwinding there (perf also reads the mapped files' bytes; CFI rules
 * almost never point there).
 * Invariants: a session's thread callbacks read the thread being unwound
 * (set before dwfl_getthread_frames, cleared after); sessions are freed
 * only by ember_unwind_dwfl_free or eviction, never during an unwinding.
 */
#include "symbol/unwind_impl.h"
#include "symbol/dso.h"
#include "base/vec.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
enum { MAX_SESSIONS = 64 };

struct session {
    struct ember_unwind *u;
    Dwfl *dwfl;
    bool attached, stale;
    uint32_t process;
    uint64_t used; /* when last used: the eviction order */
    /* the thread being unwound */
    const struct ember_unwind_thread *th;
    uint64_t *ips;
    size_t n, max;
};

struct ember_unwind_dwfl {
    struct session **sessions;
    size_t nsessions, scap;
    uint64_t clock;
};

/* Unwinding reads the call frame information of the mapped files
 * themselves (.eh_frame, and .debug_frame when they have one), never a
 * separate debug file, as perf's libdw unwinder: a session is per process,
 * and looking for debug files made every one of them open and decompress
 * libc's (libc6-dbg) again when a walk reached the outermost frame, 35% of
 * the time on a recording of 20 short processes. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                        const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                        char **debuginfo_file_name)
{
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
    (void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
    return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = no_debuginfo,
};

static void session_end(struct session *s)
{
    if (s->dwfl)
        dwfl_end(s->dwfl);
    s->dwfl = NULL;
    s->attached = s->stale = false;
}

void ember_unwind_dwfl_free(struct ember_unwind_dwfl *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nsessions; i++) {
        session_end(d->sessions[i]);
        free(d->sessions[i]);
    }
    free(d->sessions);
    free(d);
}

/* ---- libdwfl's view of the thread ---------------------------------------- */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_arg)
{
    (void)dwfl;
    struct session *s = arg;
    if (*thread_arg || !s->th)
        return 0;
    *thread_arg = s;
    return (pid_t)s->th->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_arg)
{
    (void)dwfl;
    struct session *s = arg;
    *thread_arg = s;
    return s->th && (pid_t)s->th->tid == tid;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    (void)dwfl;
    uint64_t v;
    if (!ember_unwind_stack_read(((struct session *)arg)->th, addr, &v))
        return false;
    *result = v;
    return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
    struct session *s = arg;
    Dwarf_Word regs[EMBER_UNWIND_NREGS];
    for (unsigned i = 0; i < EMBER_UNWIND_NREGS; i++)
        regs[i] = s->th->regs[i];
    return dwfl_thread_state_registers(thread, 0, EMBER_UNWIND_NREGS, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

/* ---- modules -------------------------------------------------------------- */

/* Reports the file mapped at pc, if the session has no module there; a
 * module there that is another file makes the session stale. */
static void report_module(struct session *s, uint64_t pc)
{
    struct ember_unwind_map m;
    bool mapped = s->u->map(s->u->ctx, s->process, pc, &m);
    Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, pc);
    if (mod) {
        const char *name = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        if (mapped && (!name || strcmp(name, m.name) != 0))
            s->stale = true;
        return;
    }
    const char *path = mapped ? ember_unwind_file_of(s->u, &m) : NULL;
    if (!path)
        return;
    int fd = ember_dso_open_regular(path);
    if (fd < 0)
        return;
    dwfl_report_begin_add(s->dwfl);
    if (!dwfl_report_elf(s->dwfl, m.name, path, fd, m.base, false))
        close(fd); /* consumed only on success */
    dwfl_report_end(s->dwfl, NULL, NULL);
}

static int session_start(struct session *s, uint64_t ip)
{
    s->dwfl = dwfl_begin(&dwfl_callbacks);
    if (!s->dwfl)
        return -ENOMEM;
    report_module(s, ip);
    /* the session's architecture comes from its first module: none yet
     * means no unwinding for this sample (tried again with the next) */
    s->attached = dwfl_attach_state(s->dwfl, NULL, (pid_t)s->th->pid, &thread_callbacks, s);
    if (!s->attached)
        session_end(s);
    return 0;
}

/* ---- sessions ------------------------------------------------------------- */

static int session_of(struct ember_unwind *u, uint32_t process, struct session **out)
{
    if (!u->dwfl && !(u->dwfl = calloc(1, sizeof(*u->dwfl))))
        return -ENOMEM;
    struct ember_unwind_dwfl *d = u->dwfl;
    for (size_t i = 0; i < d->nsessions; i++)
        if (d->sessions[i]->process == process) {
            *out = d->sessions[i];
            return 0;
        }
    if (d->nsessions == MAX_SESSIONS) { /* reuse the least recently used */
        size_t old = 0;
        for (size_t i = 1; i < d->nsessions; i++)
            if (d->sessions[i]->used < d->sessions[old]->used)
                old = i;
        session_end(d->sessions[old]);
        d->sessions[old]->process = process;
        *out = d->sessions[old];
        return 0;
    }
    struct session *s = calloc(1, sizeof(*s));
    if (!s || EMBER_VEC_RESERVE(d->sessions, d->scap, d->nsessions + 1) < 0) {
        free(s);
        return -ENOMEM;
    }
    s->process = process;
    s->u = u;
    d->sessions[d->nsessions++] = s;
    *out = s;
    return 0;
}

static int on_frame(Dwfl_Frame *frame, void *arg)
{
    struct session *s = arg;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(frame, &pc, NULL))
        return DWARF_CB_ABORT;
    report_module(s, pc); /* before asking whether it is an activation, as perf */
    if (s->stale || !dwfl_frame_pc(frame, &pc, &activation))
        return DWARF_CB_ABORT;
    s->ips[s->n++] = activation ? pc : pc - 1;
    return s->n < s->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* One try: 1 when the session was stale (ended: try again). */
static int unwind_once(struct session *s, const struct ember_unwind_thread *th)
{
    s->n = 0;
    s->th = th;
    if (!s->dwfl) {
        int err = session_start(s, th->regs[EMBER_UNWIND_IP]);
        if (err || !s->dwfl) {
            s->th = NULL;
            return err;
        }
    }
    dwfl_getthread_frames(s->dwfl, (pid_t)th->tid, on_frame, s);
    s->th = NULL;
    if (!s->stale)
        return 0;
    session_end(s);
    return 1;
}

int ember_unwind_dwfl_frames(struct ember_unwind *u, const struct ember_unwind_thread *th,
                             uint64_t *ips, size_t max, size_t *n)
{
    struct session *s;
    *n = 0;
    if (max == 0)
        return 0;
    int err = session_of(u, th->process, &s);
    if (err)
        return err;
    s->used = ++u->dwfl->clock;
    s->ips = ips;
    s->max = max;
    err = unwind_once(s, th);
    if (err == 1)
        err = unwind_once(s, th);
    if (err < 0)
        return err;
    /* the sampled address is a frame even where nothing unwinds from it */
    if (s->n == 0)
        ips[s->n++] = th->regs[EMBER_UNWIND_IP];
    *n = s->n;
    return 0;
}
