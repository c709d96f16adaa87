/*
 * perf_data_names.c - an address in a map -> the frames `perf script |
 * ember collapse` gives it: perf's symbol, named by stackcollapse-perf's
 * rules (as perf_script.c names a frame line), each frame a record with
 * its module (the mapping), address and kind.
 *
 * perf's symbols, found as perf script finds them (lib/symbol: dso.h,
 * kallsyms.h): an ELF file's; JIT compilers' /tmp/perf-PID.map files;
 * [vdso] from this process's own vDSO when it is the recorded one; the
 * kernel from kallsyms. This file is the glue: which dso a map is, the
 * warnings, the caches keyed by the reader's dsos. Modules go
 * through the symbolizer, which checks the recorded build-id: a file that
 * changed since recording is said once, and its frames are "[unknown]"
 * with their module, as perf would print them without its cache.
 * With --inline, frames come from the symbolizer's DWARF (function, file,
 * line and the calls inlined at the address), as for perf script text.
 * Invariants: each dso's symbols are loaded once; each mapping is one
 * profile module; results are memoized by the caller. With -j 2 and more
 * the kernel's symbols are read on a thread of their own
 * (perf_data_kernel.c: /proc/kallsyms from the data's start, taken where
 * it is the recorded kernel's), joined where the first kernel frame is
 * named, or at the end: what is said of them is said there, as with one
 * thread. The files' symbol tables, and perf's tables of them, are read
 * ahead on every thread (symbol/prepare.c), which says nothing: naming
 * then finds them read. With --inline as well, the
 * files are opened first, in the order naming would open them (so what
 * is said of them is said in that order), and their DWARF read on every
 * thread before any frame is named.
 */
#include "read/perf/perf_data.h"
#include "read/perf/perf_names.h"
#include "read/read_impl.h"
#include "read/perf/perf_tidy.h"
#include "symbol/dso.h"
#include "symbol/kallsyms.h"
#include "symbol/symbolizer.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct dso_syms {
    int state; /* 0 untried, 1 loaded, -1 none */
    struct ember_symbol_module *mod;
    const struct ember_symtab *syms; /* perf's symbols: file addresses (JIT: process addresses) */
    struct ember_symtab *jit;        /* a JIT map's, ours (an ELF file's are its module's) */
};

struct pd_names {
    const struct pd_names *of; /* a fork's: whose files it shares */
    struct ember_profile *p;
    const struct pd_file *f;
    const struct pd_tasks *t;
    const struct ember_read_opts *o;
    struct ember_perf_opts po; /* the options, read once */
    struct ember_symbolizer *sym;
    struct dso_syms *dsos;
    size_t ndsos;
    struct ember_kallsyms kernel;
    struct pd_kernel_ahead *ahead; /* kernel being read on a thread, or NULL */
    int vdso_fd;
    char vdso_path[64];
    struct ember_arena arena; /* symbol names: JIT's, demangled, PLT stubs' */
    char *buf;                /* a frame's name being built */
    size_t bcap;
    uint32_t *out; /* the frames of the current answer */
    size_t nout, ocap;
    /* the last map's module: raw frames are named map after map */
    struct pd_frame_src last_map;
    uint32_t last_module;
    bool have_last;
};

int pd_names_new(struct pd_names **out, struct ember_profile *p, const struct pd_file *f,
                 const struct pd_tasks *t, const struct ember_read_opts *o)
{
    struct pd_names *n = calloc(1, sizeof(*n));
    if (!n)
        return -ENOMEM;
    n->p = p;
    n->f = f;
    n->t = t;
    n->o = o;
    n->po = ember_perf_opts_of(o);
    n->vdso_fd = -1;
    ember_arena_init(&n->arena);
    ember_kallsyms_init(&n->kernel);
    int err = ember_symbolizer_new(&n->sym);
    if (err) {
        pd_names_free(n);
        return err;
    }
    *out = n;
    return 0;
}

static int join_kernel(struct pd_names *n);

int pd_names_fork(const struct pd_names *n, struct ember_profile *p, struct pd_names **out)
{
    struct pd_names *k = calloc(1, sizeof(*k));
    if (!k)
        return -ENOMEM;
    k->of = n;
    k->p = p;
    k->f = n->f;
    k->t = n->t;
    k->o = n->o;
    k->po = n->po;
    k->dsos = n->dsos;
    k->ndsos = n->ndsos;
    k->kernel = n->kernel; /* its tables, only read */
    k->vdso_fd = -1;
    ember_arena_init(&k->arena);
    *out = k;
    return 0;
}

void pd_names_free(struct pd_names *n)
{
    if (!n)
        return;
    if (n->of) { /* a fork: its buffers alone are its own */
        free(n->buf);
        free(n->out);
        free(n);
        return;
    }
    join_kernel(n);
    for (size_t i = 0; i < n->ndsos; i++)
        ember_symtab_free(n->dsos[i].jit);
    free(n->dsos);
    ember_symbolizer_free(n->sym);
    ember_kallsyms_release(&n->kernel);
    if (n->vdso_fd >= 0)
        close(n->vdso_fd);
    ember_arena_release(&n->arena);
    free(n->buf);
    free(n->out);
    free(n);
}

/* ---- loading a dso's symbols -------------------------------------------- */

/* An ELF file's symbols as perf finds them (symbol/dso.h), checked against
 * its recorded build-id: a file that changed, or a missing file, is said
 * once. */
static int open_elf(struct pd_names *n, struct dso_syms *d, const struct pd_dso *dso,
                    const char *path)
{
    const struct pd_build_id *b = pd_file_build_id(n->f, dso->name, false);
    struct ember_dso_elf e = {path, b ? b->bits : NULL, b ? b->size : 0, dso->kind == PD_DSO_VDSO};
    struct ember_diag why;
    int err = ember_dso_elf_symbols(n->sym, &e, &d->mod, &d->syms, &why);
    if (!d->mod && (err == -ESTALE || (err == -ENOENT && dso->kind == PD_DSO_FILE)))
        ember_read_warn(n->o, n->f->name, "%s: %s; its frames are [unknown]", dso->name, why.msg);
    return err;
}

static int load(struct pd_names *n, uint32_t id, struct dso_syms *d)
{
    const struct pd_dso *dso = pd_tasks_dso(n->t, id);
    int err;
    switch (dso->kind) {
    case PD_DSO_FILE:
        err = open_elf(n, d, dso, dso->name);
        break;
    case PD_DSO_VDSO:
        err = n->vdso_fd >= 0
                  ? 0
                  : ember_dso_vdso_open(&n->vdso_fd, n->vdso_path, sizeof(n->vdso_path));
        if (!err)
            err = open_elf(n, d, dso, n->vdso_path);
        break;
    case PD_DSO_JIT:
        err = ember_dso_jit_symbols(dso->name, &n->arena, &d->jit);
        d->syms = d->jit;
        break;
    default:
        err = 0;
        break;
    }
    if (err == -ENOMEM)
        return err;
    d->state = err ? -1 : 1;
    return 0;
}

static int dso_state(struct pd_names *n, uint32_t id, struct dso_syms **out)
{
    if (n->of && (id >= n->ndsos || n->dsos[id].state == 0))
        return -EAGAIN; /* a fork loads nothing */
    if (id >= n->ndsos) {
        size_t want = pd_tasks_dso_count(n->t), cap = n->ndsos;
        if (EMBER_VEC_RESERVE(n->dsos, cap, want) < 0)
            return -ENOMEM;
        memset(n->dsos + n->ndsos, 0, (want - n->ndsos) * sizeof(*n->dsos));
        n->ndsos = want;
    }
    *out = &n->dsos[id];
    return (*out)->state == 0 ? load(n, id, *out) : 0;
}

/* Where the recorded kernel's symbols are; cached holds perf's copy's
 * path (4096 bytes). */
static void kernel_source(const void *ctx, struct ember_kallsyms_source *src, char *cached)
{
    const struct pd_names *n = ctx;
    const struct pd_build_id *b = pd_file_build_id(n->f, "[kernel.kallsyms]", true);
    *src = (struct ember_kallsyms_source){
        .kallsyms = "/proc/kallsyms",
        .notes = "/sys/kernel/notes",
        .build_id = b ? b->bits : NULL,
        .build_id_len = b ? b->size : 0,
    };
    if (ember_dso_cache_path(src->build_id, src->build_id_len, "kallsyms", cached, 4096))
        src->cached = cached;
    src->have_text = pd_tasks_kernel_text(n->t, &src->text);
}

int pd_names_read_kernel_ahead(struct pd_names *n, struct pd_kernel_ahead **early)
{
    if (n->ahead || n->kernel.loaded) {
        pd_kernel_ahead_free(*early);
        *early = NULL;
        return 0;
    }
    return pd_kernel_read_late(early, &n->ahead, kernel_source, n);
}

/* The table read ahead, now n's: 0, or its error. */
static int join_kernel(struct pd_names *n)
{
    struct pd_kernel_ahead *a = n->ahead;
    n->ahead = NULL;
    return a ? pd_kernel_join(a, &n->kernel) : 0;
}

static int kernel_table(struct pd_names *n)
{
    if (n->kernel.loaded && !n->ahead)
        return 0;
    if (n->of)
        return -EAGAIN; /* a fork loads nothing */
    int err;
    if (n->ahead) {
        err = join_kernel(n);
    } else {
        char cached[4096];
        struct ember_kallsyms_source src;
        kernel_source(n, &src, cached);
        err = ember_kallsyms_load(&n->kernel, &src);
    }
    if (!err && !n->kernel.usable)
        ember_read_warn(n->o, n->f->name, "[kernel.kallsyms]: %s; kernel frames are [unknown]",
                        n->kernel.why);
    return err;
}

/* ---- opening ahead (-j 2 and more, --inline) ------------------------------ */

int pd_names_open(struct pd_names *n, const struct pd_frame_src *src)
{
    struct dso_syms *d;
    if (src->dso == PD_NO_DSO)
        return 0;
    switch (pd_tasks_dso(n->t, src->dso)->kind) {
    case PD_DSO_KERNEL:
    case PD_DSO_MODULE:
        return kernel_table(n);
    case PD_DSO_BPF:
    case PD_DSO_MEMORY:
        return 0;
    default:
        return dso_state(n, src->dso, &d);
    }
}

int pd_names_read_ahead(struct pd_names *n, const uint32_t *dsos, size_t k, unsigned threads)
{
    struct ember_symbol_module **m = malloc((k ? k : 1) * sizeof(*m));
    size_t got = 0;
    if (!m)
        return -ENOMEM;
    for (size_t i = 0; i < k; i++) {
        const struct pd_dso *dso = pd_tasks_dso(n->t, dsos[i]);
        if (dso->kind != PD_DSO_FILE || (dsos[i] < n->ndsos && n->dsos[dsos[i]].state))
            continue; /* not an ELF file, or loaded */
        const struct pd_build_id *b = pd_file_build_id(n->f, dso->name, false);
        struct ember_dso_elf e = {dso->name, b ? b->bits : NULL, b ? b->size : 0, false};
        struct ember_symbol_module *mod;
        int err = ember_dso_elf_first(n->sym, &e, &mod);
        if (err == -ENOMEM) {
            free(m);
            return err;
        }
        bool again = false;
        for (size_t j = 0; j < got && !again; j++)
            again = m[j] == mod;
        if (!err && !again)
            m[got++] = mod;
    }
    ember_symbol_modules_read_symbols(m, got, threads);
    free(m);
    return 0;
}

int pd_names_prepare(struct pd_names *n, unsigned threads)
{
    struct ember_symbol_module **m = malloc((n->ndsos ? n->ndsos : 1) * sizeof(*m));
    size_t k = 0;
    if (!m)
        return -ENOMEM;
    for (size_t i = 0; i < n->ndsos; i++) {
        const struct pd_dso *dso = pd_tasks_dso(n->t, (uint32_t)i);
        bool again = false;
        for (size_t j = 0; j < k && !again; j++)
            again = m[j] == n->dsos[i].mod;
        if (n->dsos[i].state == 1 && n->dsos[i].mod && !again && dso->kind == PD_DSO_FILE)
            m[k++] = n->dsos[i].mod;
    }
    ember_symbol_modules_prepare(m, k, threads);
    free(m);
    return 0;
}

/* ---- the symbol perf prints ---------------------------------------------- */

/* The symbol at ip in map m of dso: *sym NULL when perf prints
 * [unknown]. */
static int find_symbol(struct pd_names *n, const struct pd_frame_src *src, const char **sym)
{
    *sym = NULL;
    const struct pd_dso *dso = pd_tasks_dso(n->t, src->dso);
    uint64_t off;
    struct dso_syms *d;
    int err;
    switch (dso->kind) {
    case PD_DSO_KERNEL:
    case PD_DSO_MODULE:
        if ((err = kernel_table(n)) < 0)
            return err;
        return ember_kallsyms_find(&n->kernel, dso->kind == PD_DSO_MODULE ? dso->name : NULL,
                                   dso->name_len, src->ip, sym, &off) == -ENOMEM
                   ? -ENOMEM
                   : 0;
    case PD_DSO_BPF:
        *sym = dso->name;
        return 0;
    case PD_DSO_MEMORY:
        return 0;
    default:
        break;
    }
    if ((err = dso_state(n, src->dso, &d)) < 0 || d->state < 0)
        return err;
    *sym = ember_dso_symbol_at(dso->kind == PD_DSO_JIT ? NULL : d->mod, d->syms, src->start,
                               src->pgoff, src->ip);
    return 0;
}

/* ---- naming, as stackcollapse-perf.pl --------------------------------- */

static int push(struct pd_names *n, uint32_t frame)
{
    if (EMBER_VEC_RESERVE(n->out, n->ocap, n->nout + 1) < 0)
        return -ENOMEM;
    n->out[n->nout++] = frame;
    return 0;
}

static enum ember_frame_kind kind_of(const struct pd_dso *dso)
{
    if (!dso)
        return EMBER_FRAME_USER;
    switch (dso->kind) {
    case PD_DSO_KERNEL:
    case PD_DSO_MODULE:
    case PD_DSO_BPF:
        return EMBER_FRAME_KERNEL;
    case PD_DSO_JIT:
        return EMBER_FRAME_JIT;
    default:
        return EMBER_FRAME_USER;
    }
}

/* One piece of a symbol (FlameGraph's steps 4 to 7, as name_piece in
 * perf_script_frames.c), interned with the frame's record. */
static int name_piece(struct pd_names *n, const struct pd_frame_src *src, const char *piece,
                      size_t plen, bool inlined, bool java, uint32_t module)
{
    const struct ember_perf_opts *po = &n->po;
    const struct pd_dso *dso = src->dso == PD_NO_DSO ? NULL : pd_tasks_dso(n->t, src->dso);
    const char *mod = dso ? dso->name : "[unknown]";
    size_t ml = dso ? dso->name_len : 9;
    char pc[24];
    int pcl = snprintf(pc, sizeof(pc), "%llx", (unsigned long long)src->pc);
    if (EMBER_VEC_RESERVE(n->buf, n->bcap, plen + ml + (size_t)pcl + 16) < 0)
        return -ENOMEM;
    bool unknown = false;
    enum ember_frame_kind ann;
    char *b = n->buf;
    size_t len = ember_perf_name_piece(b, piece, plen, mod, ml, pc, (size_t)pcl, inlined, java, po,
                                       &unknown, &ann);
    struct ember_frame fr = {
        .name = b,
        .name_len = len,
        .address = src->ip,
        .has_address = true,
        .module = module,
        /* the kind the script annotates (views spell "f_[k]"), else the map's */
        .kind = ann != EMBER_FRAME_USER ? ann
                : inlined               ? EMBER_FRAME_INLINED
                                        : kind_of(dso),
        .kind_in_name = ann != EMBER_FRAME_USER,
    };
    uint32_t id;
    int err = ember_profile_intern_frame(n->p, &fr, &id);
    return err ? err : push(n, id);
}

/* FlameGraph's naming of "sym (module)": pieces split at "->" (the
 * inlined calls some perf versions print that way). */
static int name_symbol(struct pd_names *n, const struct pd_frame_src *src, const char *sym,
                       bool java, uint32_t module)
{
    size_t rlen = strlen(sym);
    if (ember_perf_parenthesized_only(sym, rlen))
        return 0;
    while (rlen >= 2 && memcmp(sym + rlen - 2, "->", 2) == 0)
        rlen -= 2;
    for (size_t start = 0, idx = 0; start < rlen || (idx == 0 && rlen > 0); idx++) {
        const char *arrow = memmem(sym + start, rlen - start, "->", 2);
        size_t end = arrow ? (size_t)(arrow - sym) : rlen;
        int err = name_piece(n, src, sym + start, end - start, idx > 0, java, module);
        if (err || !arrow)
            return err;
        start = end + 2;
    }
    return 0;
}

/* --inline: the symbolizer's DWARF frames at the address, outermost
 * first, as perf_script_frames.c's inline_frames makes them; -ENOENT when DWARF
 * does not know the address (perf's naming then applies). */
static int dwarf_frames(struct pd_names *n, const struct pd_frame_src *src, uint32_t module)
{
    const struct pd_dso *dso = pd_tasks_dso(n->t, src->dso);
    struct dso_syms *d;
    uint64_t addr;
    const struct ember_symbol_chain *chain;
    if (dso->kind != PD_DSO_FILE || ember_module_is_kernel(dso->name, dso->name_len) ||
        ember_module_is_jit(dso->name, dso->name_len) ||
        memmem(dso->name, dso->name_len, "kernel.", 7))
        return -ENOENT;
    int err = dso_state(n, src->dso, &d);
    if (err || d->state < 0)
        return err ? err : -ENOENT;
    if (ember_symbol_module_file_address(d->mod, src->start, src->pgoff, src->ip, &addr) < 0 ||
        (err = ember_symbolizer_resolve(n->sym, d->mod, addr, &chain)) == -ENOENT)
        return -ENOENT;
    if (err)
        return err;
    if (!chain->from_dwarf)
        return -ENOENT;
    for (uint32_t k = 0; k < chain->count; k++) {
        struct ember_frame rec;
        if ((err = ember_perf_inline_frame(&chain->frames[k], n->po.context, &n->buf, &n->bcap,
                                           &rec)) < 0)
            return err;
        rec.address = src->ip;
        rec.has_address = true;
        rec.module = module;
        uint32_t id;
        if ((err = ember_profile_intern_frame(n->p, &rec, &id)) < 0 || (err = push(n, id)) < 0)
            return err;
    }
    return 0;
}

static int new_module(struct pd_names *n, const struct pd_frame_src *src, uint32_t *module);

int pd_names_module(struct pd_names *n, const struct pd_frame_src *src, uint32_t *module)
{
    *module = EMBER_NO_MODULE;
    if (src->dso == PD_NO_DSO)
        return 0;
    const struct pd_frame_src *l = &n->last_map;
    if (n->have_last && l->dso == src->dso && l->start == src->start && l->end == src->end &&
        l->pgoff == src->pgoff) {
        *module = n->last_module;
        return 0;
    }
    int err = new_module(n, src, module);
    if (!err) {
        n->last_map = *src;
        n->last_module = *module;
        n->have_last = true;
    }
    return err;
}

/* The profile's module for src's map, as perf names the file. */
static int new_module(struct pd_names *n, const struct pd_frame_src *src, uint32_t *module)
{
    const struct pd_dso *dso = pd_tasks_dso(n->t, src->dso);
    bool kernel = dso->kind == PD_DSO_KERNEL || dso->kind == PD_DSO_MODULE;
    const struct pd_build_id *b = pd_file_build_id(n->f, dso->name, kernel);
    char bid[2 * PD_BUILD_ID_MAX + 1] = "";
    if (b)
        ember_dso_build_id_hex(bid, b->bits, b->size);
    struct ember_module m = {
        .path = dso->name,
        .build_id = b ? bid : NULL,
        .start = src->start,
        .limit = src->end,
        .offset = dso->kind == PD_DSO_FILE || dso->kind == PD_DSO_VDSO || dso->kind == PD_DSO_MEMORY
                      ? src->pgoff
                      : 0,
        .flags = EMBER_MODULE_FUNCTIONS,
    };
    if (n->po.inline_frames && dso->kind == PD_DSO_FILE)
        m.flags |= EMBER_MODULE_FILES | EMBER_MODULE_LINES | EMBER_MODULE_INLINES;
    return ember_profile_module(n->p, &m, module);
}

int pd_names_resolve(struct pd_names *n, const struct pd_frame_src *src, bool java,
                     const uint32_t **frames, size_t *count)
{
    uint32_t module;
    n->nout = 0;
    int err = pd_names_module(n, src, &module);
    if (!err && n->po.inline_frames && src->dso != PD_NO_DSO) {
        err = dwarf_frames(n, src, module);
        if (err == -ENOENT) {
            n->nout = 0;
            err = 1; /* named as perf names it */
        } else if (!err) {
            *frames = n->out;
            *count = n->nout;
            return 0;
        }
    }
    if (err < 0)
        return err;
    const char *sym = NULL;
    if (src->dso != PD_NO_DSO && (err = find_symbol(n, src, &sym)) < 0)
        return err;
    err = name_symbol(n, src, sym ? sym : "[unknown]", java, module);
    *frames = n->out;
    *count = n->nout;
    return err;
}
