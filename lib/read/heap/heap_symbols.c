/*
 * heap_symbols.c - a heap recording's stacks as frames, through the
 * symbolizer (lib/symbol), as the perf.data reader names user frames: the
 * modules come from the process's MODULE records (path, bias, build-id,
 * checked against the file: one that changed since recording is said once
 * and its frames are "[unknown]" with their module); each return address
 * is looked up at addr - 1 (the call, not the instruction after it), as a
 * file address addr - 1 - bias; names are perf's symbols (demangled, and
 * tidied as stackcollapse-perf.pl does), or with --inline the DWARF chain
 * at the address (function, file, line, the calls inlined there),
 * outermost first; an address in none of a module's symbols is named by
 * the module's file as stackcollapse-perf.pl names it ("[libc.so.6]",
 * the frame keeping its module), one outside every module "[unknown]".
 *
 * Stacks are innermost first in the file; frames come out outermost first
 * (the profile's order). Results are memoized per address for a process
 * (heap_symbols_reset between processes: their modules differ); the
 * symbolizer's own memo, per build, lasts the whole reading.
 */
#include "read/heap/heap_impl.h"
#include "read/perf/perf_names.h"
#include "read/perf/perf_opts.h"
#include "symbol/dso.h"
#include "symbol/symbolizer.h"
#include "base/diag.h"
#include "base/u64map.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mod_state {
    int state; /* 0 untried, 1 loaded, -1 unusable */
    struct ember_symbol_module *mod;
    const struct ember_symtab *syms; /* perf's symbols, kept with mod */
    uint32_t id;                     /* the profile's module */
};

struct span {
    uint32_t off, n;
};

struct heap_symbols {
    struct ember_profile *prof;
    const struct ember_read_opts *o;
    const char *input;
    bool inline_frames, context;
    struct ember_symbolizer *sym;
    struct ember_u64map memo; /* address -> span */
    struct span *spans;
    size_t nspans, scap;
    uint32_t *frames; /* the spans' frames */
    size_t nframes, fcap;
    struct mod_state *mods;
    size_t nmods;
    char *buf;
    size_t bcap;
};

int heap_symbols_new(struct heap_symbols **out, struct ember_profile *prof,
                     const struct ember_read_opts *o, const char *input)
{
    struct heap_symbols *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->prof = prof;
    s->o = o;
    s->input = input;
    s->context = ember_read_opts_flag(o, "context");
    s->inline_frames = s->context || ember_read_opts_flag(o, "inline");
    int err = ember_u64map_init(&s->memo);
    if (!err)
        err = ember_symbolizer_new(&s->sym);
    if (err) {
        heap_symbols_free(s);
        return err;
    }
    *out = s;
    return 0;
}

void heap_symbols_reset(struct heap_symbols *s)
{
    free(s->mods);
    s->mods = NULL;
    s->nmods = 0;
    s->nspans = s->nframes = 0;
    memset(s->memo.slots, 0, ((size_t)s->memo.mask + 1) * sizeof(*s->memo.slots));
    s->memo.count = 0;
}

void heap_symbols_free(struct heap_symbols *s)
{
    if (!s)
        return;
    if (s->memo.slots)
        heap_symbols_reset(s);
    ember_u64map_release(&s->memo);
    ember_symbolizer_free(s->sym);
    free(s->spans);
    free(s->frames);
    free(s->buf);
    free(s);
}

static void warn(struct heap_symbols *s, const char *msg)
{
    if (!s->o->warn)
        return;
    struct ember_diag d;
    ember_diag_set(&d, 0, s->input, 0, "%s", msg);
    s->o->warn(s->o->warn_ctx, &d);
}

static int profile_module(struct heap_symbols *s, const struct heap_module *m, uint32_t *id)
{
    char bid[2 * 255 + 1] = "";
    ember_dso_build_id_hex(bid, m->build_id, m->build_id_len);
    struct ember_module pm = {
        .path = m->path,
        .build_id = m->build_id_len ? bid : NULL,
        .start = m->start,
        .limit = m->end,
        .offset = m->start - m->bias, /* the file address the mapping starts at */
        .flags = EMBER_MODULE_FUNCTIONS,
    };
    if (s->inline_frames)
        pm.flags |= EMBER_MODULE_FILES | EMBER_MODULE_LINES | EMBER_MODULE_INLINES;
    return ember_profile_module(s->prof, &pm, id);
}

/* Module i of p, opened on first use. */
static int module(struct heap_symbols *s, const struct heap_proc *p, size_t i,
                  struct mod_state **out)
{
    if (s->nmods < p->nmods) {
        struct mod_state *m = realloc(s->mods, p->nmods * sizeof(*m));
        if (!m)
            return -ENOMEM;
        memset(m + s->nmods, 0, (p->nmods - s->nmods) * sizeof(*m));
        s->mods = m;
        s->nmods = p->nmods;
    }
    struct mod_state *st = *out = &s->mods[i];
    if (st->state)
        return 0;
    const struct heap_module *m = &p->mods[i];
    int err = profile_module(s, m, &st->id);
    if (err)
        return err;
    /* the program's own module is pprof's first mapping ("File:") */
    if (ember_profile_main_module(s->prof) == EMBER_NO_MODULE &&
        strncmp(m->path, p->h.exe, sizeof(p->h.exe)) == 0)
        ember_profile_set_main_module(s->prof, st->id);
    struct ember_dso_elf e = {m->path, m->build_id, m->build_id_len, false};
    struct ember_diag why;
    err = ember_dso_elf_symbols(s->sym, &e, &st->mod, &st->syms, &why);
    if (err == -ENOMEM)
        return err;
    st->state = st->mod ? 1 : -1;
    if (!st->mod) {
        char msg[600];
        snprintf(msg, sizeof(msg), "%s: %s; its frames are [unknown]", m->path, why.msg);
        warn(s, msg);
    }
    return 0;
}

/* The module of p holding addr: its index, or -1. */
static long module_of(const struct heap_proc *p, uint64_t addr)
{
    for (size_t i = 0; i < p->nmods; i++) {
        const struct heap_module *m = &p->mods[i];
        if (addr < m->start || addr >= m->end)
            continue;
        for (size_t k = 0; k < m->nsegs; k++)
            if (addr >= m->segs[2 * k] && addr < m->segs[2 * k + 1])
                return (long)i;
    }
    return -1;
}

static int push(struct heap_symbols *s, struct ember_frame *fr, uint64_t addr, uint32_t module)
{
    uint32_t id;
    fr->address = addr;
    fr->has_address = true;
    fr->module = module;
    fr->pid = fr->tid = -1;
    int err = ember_profile_intern_frame(s->prof, fr, &id);
    if (err || (err = EMBER_VEC_RESERVE(s->frames, s->fcap, s->nframes + 1)) < 0)
        return err;
    s->frames[s->nframes++] = id;
    return 0;
}

/* --inline: the DWARF chain at file address fa; -ENOENT without DWARF. */
static int dwarf_frames(struct heap_symbols *s, struct mod_state *m, uint64_t fa, uint64_t addr)
{
    const struct ember_symbol_chain *chain;
    int err = ember_symbolizer_resolve(s->sym, m->mod, fa, &chain);
    if (err)
        return err;
    if (!chain->from_dwarf)
        return -ENOENT;
    for (uint32_t k = 0; k < chain->count; k++) {
        struct ember_frame rec;
        if ((err = ember_perf_inline_frame(&chain->frames[k], s->context, &s->buf, &s->bcap,
                                           &rec)) < 0 ||
            (err = push(s, &rec, addr, m->id)) < 0)
            return err;
    }
    return 0;
}

/* The frame perf's naming gives a symbol (or "[unknown]") in module mod
 * (NULL: none): "[unknown]" in a module becomes "[file]", names are tidied
 * as stackcollapse-perf.pl tidies them (perf_names.h). */
static int perf_frame(struct heap_symbols *s, const char *sym, const char *mod, uint64_t addr,
                      uint32_t module)
{
    static const struct ember_perf_opts po = {0};
    size_t plen = strlen(sym), ml = mod ? strlen(mod) : 0;
    if (EMBER_VEC_RESERVE(s->buf, s->bcap, plen + ml + 16) < 0)
        return -ENOMEM;
    bool unknown;
    enum ember_frame_kind ann;
    struct ember_frame fr = {.kind = EMBER_FRAME_USER};
    fr.name = s->buf;
    fr.name_len = ember_perf_name_piece(s->buf, sym, plen, mod ? mod : "[unknown]", mod ? ml : 9,
                                        "", 0, false, false, &po, &unknown, &ann);
    return push(s, &fr, addr, module);
}

/* The frames of return address addr, appended to s->frames. */
static int resolve(struct heap_symbols *s, const struct heap_proc *p, uint64_t addr)
{
    long i = module_of(p, addr - 1);
    const char *name = "[unknown]";
    struct mod_state *m = NULL;
    int err = i >= 0 ? module(s, p, (size_t)i, &m) : 0;
    if (err)
        return err;
    if (m && m->state > 0) {
        uint64_t fa = addr - 1 - p->mods[i].bias;
        if (s->inline_frames && (err = dwarf_frames(s, m, fa, addr)) != -ENOENT)
            return err;
        const struct ember_symtab_sym *sym;
        uint64_t off;
        if (m->syms && ember_symtab_lookup(m->syms, fa, &sym, &off) == 0)
            name = sym->name;
    }
    return perf_frame(s, name, m ? p->mods[i].path : NULL, addr, m ? m->id : EMBER_NO_MODULE);
}

static int span_of(struct heap_symbols *s, const struct heap_proc *p, uint64_t addr,
                   struct span *out)
{
    uint32_t k;
    if (ember_u64map_get(&s->memo, addr, &k)) {
        *out = s->spans[k];
        return 0;
    }
    size_t start = s->nframes;
    int err = resolve(s, p, addr);
    if (err || (err = EMBER_VEC_RESERVE(s->spans, s->scap, s->nspans + 1)) < 0)
        return err;
    *out = (struct span){(uint32_t)start, (uint32_t)(s->nframes - start)};
    s->spans[s->nspans] = *out;
    return ember_u64map_put(&s->memo, addr, (uint32_t)s->nspans++);
}

int heap_symbols_stack(struct heap_symbols *s, const struct heap_proc *p, uint64_t id,
                       uint32_t **out, size_t *n, size_t *cap)
{
    const uint64_t *a = p->addrs + p->stack_at[id];
    for (uint32_t k = p->stack_n[id]; k-- > 0;) {
        struct span sp;
        int err = span_of(s, p, a[k], &sp);
        if (err || (err = EMBER_VEC_RESERVE(*out, *cap, *n + sp.n)) < 0)
            return err;
        memcpy(*out + *n, s->frames + sp.off, sp.n * sizeof(**out));
        *n += sp.n;
    }
    return 0;
}
