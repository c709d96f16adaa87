/*
 * perf_data_names.c - an address in a map -> the frames `perf script |
 * ember collapse` gives it: perf's symbol, named by stackcollapse-perf's
 * rules (as perf_script.c names a frame line), each frame a record with
 * its module (the mapping), address and kind.
 *
 * perf's symbols, found as perf script finds them (util/symbol-elf.c,
 * symbol.c): an ELF file's functions, objects and text labels (.symtab,
 * else .dynsym: libdwfl picks the file, the separate debug file by
 * build-id or debuglink included), a symbol of no size reaching the next
 * one, of several at one address the one perf keeps, names demangled as
 * perf does (C++ without parameters, Rust, OCaml's "Module.fn"); JIT
 * compilers' /tmp/perf-PID.map files; [vdso] from this process's own
 * vDSO when it is the recorded one; the kernel from kallsyms. Modules go
 * through the symbolizer, which checks the recorded build-id: a file that
 * changed since recording is said once, and its frames are "[unknown]"
 * with their module, as perf would print them without its cache.
 * With --inline, frames come from the symbolizer's DWARF (function, file,
 * line and the calls inlined at the address), as for perf script text.
 * Invariants: each dso's symbols are loaded once; each mapping is one
 * profile module; results are memoized by the caller.
 */
#include "perf_data.h"
#include "perf_names.h"
#include "perf_tidy.h"
#include "symbol/symbolizer.h"
#include "util/diag.h"
#include "util/vec.h"

#include <ctype.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct dso_syms {
    int state; /* 0 untried, 1 loaded, -1 none */
    struct ember_symbol_module *mod;
    struct ember_symtab *syms; /* perf's symbols: file addresses (JIT: process addresses) */
    char **owned;              /* demangled names */
    size_t nowned, ocap;
};

struct pd_names {
    struct ember_profile *p;
    const struct pd_file *f;
    const struct pd_tasks *t;
    const struct ember_read_opts *o;
    struct ember_perf_opts po; /* the options, read once */
    struct ember_symbolizer *sym;
    struct dso_syms *dsos;
    size_t ndsos;
    struct pd_kernel kernel;
    int vdso_fd;
    char vdso_path[64];
    struct ember_arena arena; /* JIT names */
    char *buf;                /* a frame's name being built */
    size_t bcap;
    uint32_t *out; /* the frames of the current answer */
    size_t nout, ocap;
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
    pd_kernel_init(&n->kernel);
    int err = ember_symbolizer_new(&n->sym);
    if (err) {
        pd_names_free(n);
        return err;
    }
    *out = n;
    return 0;
}

static void release_dso(struct dso_syms *d)
{
    ember_symtab_free(d->syms);
    for (size_t i = 0; i < d->nowned; i++)
        free(d->owned[i]);
    free(d->owned);
}

void pd_names_free(struct pd_names *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->ndsos; i++)
        release_dso(&n->dsos[i]);
    free(n->dsos);
    ember_symbolizer_free(n->sym);
    pd_kernel_release(&n->kernel);
    if (n->vdso_fd >= 0)
        close(n->vdso_fd);
    ember_arena_release(&n->arena);
    free(n->buf);
    free(n->out);
    free(n);
}

static void warn(struct pd_names *n, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void warn(struct pd_names *n, const char *file, const char *fmt, ...)
{
    if (!n->o->warn)
        return;
    struct ember_diag d;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ember_diag_set(&d, 0, n->f->name, 0, "%s: %s", file, msg);
    n->o->warn(n->o->warn_ctx, &d);
}

/* ---- perf's demangling -------------------------------------------------- */

static int hexval(char c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* perf's ocaml_demangle_sym: "camlStdlib__List.map_123" is
 * "Stdlib.List.map_123" ("caml" dropped, "__" as '.', "$xx" a byte). */
static char *ocaml_demangle(const char *s)
{
    if (strncmp(s, "caml", 4) != 0 || !isupper((unsigned char)s[4]))
        return NULL;
    size_t len = strlen(s), j = 0;
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    for (size_t i = 4; i < len;) {
        if (s[i] == '_' && s[i + 1] == '_') {
            out[j++] = '.';
            i += 2;
        } else if (s[i] == '$' && isxdigit((unsigned char)s[i + 1]) &&
                   isxdigit((unsigned char)s[i + 2])) {
            out[j++] = (char)(hexval(s[i + 1]) << 4 | hexval(s[i + 2]));
            i += 3;
        } else {
            out[j++] = s[i++];
        }
    }
    out[j] = '\0';
    return out;
}

/* perf's demangle_sym without -v: C++ and Rust by libiberty without
 * parameters, else OCaml. NULL: the name stays. */
static char *perf_demangle(const char *name)
{
    char *d = cplus_demangle(name, DMGL_NO_OPTS);
    return d ? d : ocaml_demangle(name);
}

/* ---- perf's symbols of an ELF file -------------------------------------- */

struct esym {
    const char *name;
    uint64_t start, end;
    int binding;
    uint32_t order;
};

static int esym_cmp(const void *a, const void *b)
{
    const struct esym *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static size_t underscores(const char *s)
{
    size_t n = 0;
    while (s[n] == '_')
        n++;
    return n;
}

/* perf's choose_best_symbol: true when b is better than a. */
static bool better(const struct esym *a, const struct esym *b)
{
    uint64_t la = a->end - a->start, lb = b->end - b->start;
    if ((lb == 0) != (la == 0))
        return lb > 0;
    bool wa = a->binding == STB_WEAK, wb = b->binding == STB_WEAK;
    if (wa != wb)
        return wa;
    bool ga = a->binding == STB_GLOBAL, gb = b->binding == STB_GLOBAL;
    if (ga != gb)
        return gb;
    size_t ua = underscores(a->name), ub = underscores(b->name);
    if (ua != ub)
        return ub < ua;
    return strlen(b->name) > strlen(a->name);
}

/* perf's filter: functions and objects, and labels in text sections, of
 * allocated sections, named, defined. */
static bool perf_keeps(Elf *elf, const GElf_Sym *s, GElf_Word shndx)
{
    int type = GELF_ST_TYPE(s->st_info), vis = GELF_ST_VISIBILITY(s->st_other);
    if (s->st_name == 0 || shndx == SHN_UNDEF)
        return false;
    bool label = type == STT_NOTYPE && shndx != SHN_ABS && vis != STV_HIDDEN && vis != STV_INTERNAL;
    if (!label && type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT)
        return false;
    if (!elf || shndx >= SHN_LORESERVE)
        return !label;
    GElf_Shdr sh;
    Elf_Scn *scn = elf_getscn(elf, shndx);
    if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
        return false;
    if (!label)
        return true;
    size_t shstrndx;
    const char *sec =
        elf_getshdrstrndx(elf, &shstrndx) == 0 ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
    return sec && strstr(sec, "text");
}

static int own(struct dso_syms *d, char *name)
{
    if (EMBER_VEC_RESERVE(d->owned, d->ocap, d->nowned + 1) < 0) {
        free(name);
        return -ENOMEM;
    }
    d->owned[d->nowned++] = name;
    return 0;
}

struct symvec {
    struct esym *v;
    size_t n, cap;
};

/* A symbol as perf keeps it, its name demangled as perf does. */
static int add_esym(struct dso_syms *d, struct symvec *sv, const char *name, uint64_t start,
                    uint64_t size, int binding, uint32_t order)
{
    char *dm = perf_demangle(name);
    if (dm && own(d, dm) < 0)
        return -ENOMEM;
    if (EMBER_VEC_RESERVE(sv->v, sv->cap, sv->n + 1) < 0)
        return -ENOMEM;
    sv->v[sv->n++] = (struct esym){dm ? dm : name, start, start + size, binding, order};
    return 0;
}

/* libdwfl's symbol table: the file's .symtab, else its debug file's, else
 * its .dynsym (the file perf reads symbols from too). */
static int dwfl_pass(Dwfl_Module *mod, uint64_t bias, struct dso_syms *d, struct symvec *sv)
{
    int n = dwfl_module_getsymtab(mod);
    for (int i = 1; i < n; i++) {
        GElf_Sym s;
        GElf_Addr addr;
        GElf_Word shndx = 0;
        Elf *elf = NULL;
        const char *name = dwfl_module_getsym_info(mod, i, &s, &addr, &shndx, &elf, NULL);
        if (name && *name && perf_keeps(elf, &s, shndx) &&
            add_esym(d, sv, name, addr - bias, s.st_size, GELF_ST_BIND(s.st_info), (uint32_t)i))
            return -ENOMEM;
    }
    return 0;
}

/* The section of a type (the first), with data in the file. */
static Elf_Scn *section_of_type(Elf *elf, Elf64_Word type, GElf_Shdr *sh)
{
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn))
        if (gelf_getshdr(scn, sh) && sh->sh_type == type)
            return scn;
    return NULL;
}

static Elf_Scn *section_named(Elf *elf, const char *name, GElf_Shdr *sh)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return NULL;
    for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
        const char *n = gelf_getshdr(scn, sh) ? elf_strptr(elf, shstrndx, sh->sh_name) : NULL;
        if (n && strcmp(n, name) == 0)
            return scn;
    }
    return NULL;
}

/* perf reads .dynsym after .symtab, from the file that has both. */
static int dynsym_pass(Elf *elf, struct dso_syms *d, struct symvec *sv, uint32_t base)
{
    GElf_Shdr sh;
    Elf_Scn *scn = section_of_type(elf, SHT_DYNSYM, &sh);
    Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
    if (!data || sh.sh_entsize == 0)
        return 0;
    size_t n = sh.sh_size / sh.sh_entsize;
    for (size_t i = 1; i < n; i++) {
        GElf_Sym s;
        const char *name =
            gelf_getsym(data, (int)i, &s) ? elf_strptr(elf, sh.sh_link, s.st_name) : NULL;
        if (name && *name && perf_keeps(elf, &s, s.st_shndx) &&
            add_esym(d, sv, name, s.st_value, s.st_size, GELF_ST_BIND(s.st_info),
                     base + (uint32_t)i))
            return -ENOMEM;
    }
    return 0;
}

/* perf's symbols__fixup_end then symbols__fixup_duplicate, in place. */
static void settle_round(struct symvec *sv)
{
    struct esym *v = sv->v;
    size_t n = sv->n, w = 0;
    qsort(v, n, sizeof(*v), esym_cmp);
    for (size_t i = 0; i + 1 < n; i++)
        if (v[i].end == v[i].start)
            v[i].end = v[i + 1].start;
    if (n && v[n - 1].end == v[n - 1].start)
        v[n - 1].end = ((v[n - 1].start + 4095) & ~(uint64_t)4095) + 4096;
    for (size_t i = 0; i < n;) {
        size_t best = i, j = i + 1;
        for (; j < n && v[j].start == v[i].start; j++)
            if (better(&v[best], &v[j]))
                best = j;
        v[w++] = v[best];
        i = j;
    }
    sv->n = w;
}

/* perf's dso__synthesize_plt_symbols (before 6.3): an entry of .plt's
 * size per .rela.plt relocation, after the header, named "sym@plt". */
static int plt_pass(Elf *elf, struct dso_syms *d, struct ember_symtab *t, uint64_t *lowest)
{
    GElf_Shdr rel, plt, dyn;
    Elf_Scn *rscn = section_named(elf, ".rela.plt", &rel);
    if (!rscn)
        rscn = section_named(elf, ".rel.plt", &rel);
    Elf_Scn *dscn = rscn ? elf_getscn(elf, rel.sh_link) : NULL;
    if (!dscn || !gelf_getshdr(dscn, &dyn) || dyn.sh_type != SHT_DYNSYM ||
        !section_named(elf, ".plt", &plt) || rel.sh_entsize == 0 || plt.sh_entsize == 0)
        return 0;
    Elf_Data *rd = elf_getdata(rscn, NULL), *sd = elf_getdata(dscn, NULL);
    if (!rd || !sd)
        return 0;
    size_t n = rel.sh_size / rel.sh_entsize;
    uint64_t at = plt.sh_addr + plt.sh_entsize;
    *lowest = n ? at : UINT64_MAX;
    for (size_t i = 0; i < n; i++, at += plt.sh_entsize) {
        GElf_Rela ra;
        GElf_Rel r;
        size_t sym;
        if (rel.sh_type == SHT_RELA && gelf_getrela(rd, (int)i, &ra))
            sym = GELF_R_SYM(ra.r_info);
        else if (rel.sh_type == SHT_REL && gelf_getrel(rd, (int)i, &r))
            sym = GELF_R_SYM(r.r_info);
        else
            return 0;
        GElf_Sym s;
        const char *name =
            gelf_getsym(sd, (int)sym, &s) ? elf_strptr(elf, dyn.sh_link, s.st_name) : NULL;
        char *dm = name ? perf_demangle(name) : NULL;
        char *full = NULL;
        if (asprintf(&full, "%s@plt", dm ? dm : name ? name : "") < 0)
            full = NULL;
        free(dm);
        if (!full || own(d, full) < 0 || ember_symtab_add(t, full, at, plt.sh_entsize, 1, true))
            return -ENOMEM;
    }
    return 0;
}

/* Whether the file itself has a symbol table (libdwfl then reads it, and
 * perf reads its .dynsym after it). */
static bool has_symtab(Elf *elf)
{
    GElf_Shdr sh;
    return section_of_type(elf, SHT_SYMTAB, &sh) != NULL;
}

/* The PLT's entries, then the symbols: one that perf stretched over the
 * PLT (a symbol of no size before it, such as _init) stops where the PLT
 * starts, which is where perf's search stops finding it. */
static int add_symbols(Elf *main, struct dso_syms *d, const struct symvec *sv)
{
    uint64_t plt = UINT64_MAX;
    int err = plt_pass(main, d, d->syms, &plt);
    for (size_t i = 0; i < sv->n && !err; i++) {
        uint64_t start = sv->v[i].start, end = sv->v[i].end;
        if (start < plt && plt < end)
            end = plt;
        if (end > start)
            err = ember_symtab_add(d->syms, sv->v[i].name, start, end - start, 0, true);
    }
    return err;
}

/* perf's symbols of an ELF file: .symtab (or what libdwfl finds), then
 * .dynsym when the file has both, each round settled as perf settles them,
 * and the PLT's entries. */
static int elf_symbols(struct dso_syms *d)
{
    uint64_t bias;
    Dwfl_Module *mod = ember_symbol_module_dwfl(d->mod, &bias);
    GElf_Addr ebias;
    Elf *main = mod ? dwfl_module_getelf(mod, &ebias) : NULL;
    struct symvec sv = {0};
    if (!main)
        return -ENOENT;
    int err = dwfl_pass(mod, bias, d, &sv);
    settle_round(&sv);
    if (!err && has_symtab(main)) {
        err = dynsym_pass(main, d, &sv, UINT32_MAX / 2);
        settle_round(&sv);
    }
    if (!err)
        err = ember_symtab_new(&d->syms);
    if (!err)
        err = add_symbols(main, d, &sv);
    if (!err)
        err = ember_symtab_finish(d->syms);
    free(sv.v);
    return err;
}

/* ---- JIT maps ----------------------------------------------------------- */

/* perf's dso__load_perf_map: lines "START SIZE name", hexadecimal. */
static int jit_symbols(struct pd_names *n, struct dso_syms *d, const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -ENOENT;
    int err = ember_symtab_new(&d->syms);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while (!err && (len = getline(&line, &cap, fp)) > 0) {
        line[--len] = '\0'; /* perf drops the last byte, newline or not */
        char *end;
        uint64_t start = strtoull(line, &end, 16);
        if (end == line || *end != ' ' || end + 3 >= line + len)
            continue;
        char *sz = end + 1;
        uint64_t size = strtoull(sz, &end, 16);
        if (*end != ' ' || end + 3 >= line + len)
            continue;
        const char *name = ember_arena_strndup(&n->arena, end + 1, strlen(end + 1));
        if (!name)
            err = -ENOMEM;
        else if (size)
            err = ember_symtab_add(d->syms, name, start, size, 0, true);
    }
    free(line);
    fclose(fp);
    return err ? err : ember_symtab_finish(d->syms);
}

/* ---- [vdso] ------------------------------------------------------------- */

/* This process's vDSO as a file the symbolizer can open: a memfd. */
static int vdso_file(struct pd_names *n)
{
    if (n->vdso_fd >= 0)
        return 0;
    return pd_vdso_open(&n->vdso_fd, n->vdso_path, sizeof(n->vdso_path));
}

int pd_vdso_open(int *fd_out, char *path, size_t cap)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps)
        return -ENOENT;
    char line[512];
    uint64_t lo = 0, hi = 0;
    while (fgets(line, sizeof(line), maps))
        if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
            break;
    fclose(maps);
    if (hi <= lo)
        return -ENOENT;
    int fd = memfd_create("ember-vdso", MFD_CLOEXEC);
    if (fd < 0)
        return -ENOENT;
    if (write(fd, (const void *)(uintptr_t)lo, hi - lo) != (ssize_t)(hi - lo)) {
        close(fd);
        return -ENOENT;
    }
    *fd_out = fd;
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return 0;
}

/* ---- loading a dso's symbols -------------------------------------------- */

static void hex(char *out, const uint8_t *bits, size_t len)
{
    for (size_t i = 0; i < len; i++)
        snprintf(out + 2 * i, 3, "%02x", bits[i]);
}

/* perf's build-id cache (perf record copies there each binary it samples,
 * and perf script reads it first): DIR/.build-id/xx/rest/NAME under
 * $PERF_BUILDID_DIR, else ~/.debug. */
static bool cache_path(const struct pd_build_id *b, const char *name, char *out, size_t cap)
{
    const char *dir = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
    char bid[2 * PD_BUILD_ID_MAX + 1];
    if (!b || b->size == 0 || (!dir && !home))
        return false;
    hex(bid, b->bits, b->size);
    int n = dir ? snprintf(out, cap, "%s/.build-id/%.2s/%s/%s", dir, bid, bid + 2, name)
                : snprintf(out, cap, "%s/.debug/.build-id/%.2s/%s/%s", home, bid, bid + 2, name);
    return n > 0 && (size_t)n < cap && access(out, R_OK) == 0;
}

/* An ELF file through the symbolizer, checked against its recorded
 * build-id: perf's cached copy when there is one, else the file at path. */
static int open_elf(struct pd_names *n, struct dso_syms *d, const struct pd_dso *dso,
                    const char *path)
{
    const struct pd_build_id *b = pd_file_build_id(n->f, dso->name, false);
    struct ember_diag why;
    char cached[4096];
    ember_diag_clear(&why);
    int err = -ENOENT;
    if (cache_path(b, dso->kind == PD_DSO_VDSO ? "vdso" : "elf", cached, sizeof(cached)))
        err = ember_symbolizer_module(n->sym, cached, strlen(cached), b->bits, b->size, &d->mod,
                                      &why);
    if (err && err != -ENOMEM)
        err = ember_symbolizer_module(n->sym, path, strlen(path), b ? b->bits : NULL,
                                      b ? b->size : 0, &d->mod, &why);
    if (err == -ESTALE || (err == -ENOENT && dso->kind == PD_DSO_FILE))
        warn(n, dso->name, "%s; its frames are [unknown]", why.msg);
    if (err)
        return err;
    return elf_symbols(d);
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
        err = vdso_file(n);
        if (!err)
            err = open_elf(n, d, dso, n->vdso_path);
        break;
    case PD_DSO_JIT:
        err = jit_symbols(n, d, dso->name);
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

static int kernel_table(struct pd_names *n)
{
    if (n->kernel.loaded)
        return 0;
    const struct pd_build_id *b = pd_file_build_id(n->f, "[kernel.kallsyms]", true);
    char cached[4096];
    struct pd_kernel_source src = {"/proc/kallsyms",
                                   "/sys/kernel/notes",
                                   cache_path(b, "kallsyms", cached, sizeof(cached)) ? cached
                                                                                     : NULL,
                                   b ? b->bits : NULL,
                                   b ? b->size : 0,
                                   false,
                                   0};
    src.have_text = pd_tasks_kernel_text(n->t, &src.text);
    int err = pd_kernel_load(&n->kernel, &src);
    if (!err && !n->kernel.usable)
        warn(n, "[kernel.kallsyms]", "%s; kernel frames are [unknown]", n->kernel.why);
    return err;
}

/* ---- the symbol perf prints ---------------------------------------------- */

/* The symbol at ip in map m of dso: *sym NULL when perf prints
 * [unknown]. */
static int find_symbol(struct pd_names *n, const struct pd_frame_src *src, const char **sym)
{
    *sym = NULL;
    const struct pd_dso *dso = pd_tasks_dso(n->t, src->dso);
    const struct ember_symtab_sym *s;
    uint64_t off, addr;
    struct dso_syms *d;
    int err;
    switch (dso->kind) {
    case PD_DSO_KERNEL:
    case PD_DSO_MODULE:
        if ((err = kernel_table(n)) < 0)
            return err;
        return pd_kernel_find(&n->kernel, dso->kind == PD_DSO_MODULE ? dso->name : NULL,
                              dso->name_len, src->ip, sym, &off) == -ENOMEM
                   ? -ENOMEM
                   : 0;
    case PD_DSO_BPF:
        *sym = dso->name;
        return 0;
    default:
        break;
    }
    if ((err = dso_state(n, src->dso, &d)) < 0 || d->state < 0)
        return err;
    if (dso->kind == PD_DSO_JIT)
        addr = src->ip;
    else if (ember_symbol_module_file_address(d->mod, src->start, src->pgoff, src->ip, &addr) < 0)
        return 0;
    if (ember_symtab_lookup(d->syms, addr, &s, &off) == 0)
        *sym = s->name;
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
 * perf_script.c), interned with the frame's record. */
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
 * first, as perf_script.c's inline_frames makes them; -ENOENT when DWARF
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

int pd_names_module(struct pd_names *n, const struct pd_frame_src *src, uint32_t *module)
{
    *module = EMBER_NO_MODULE;
    if (src->dso == PD_NO_DSO)
        return 0;
    const struct pd_dso *dso = pd_tasks_dso(n->t, src->dso);
    bool kernel = dso->kind == PD_DSO_KERNEL || dso->kind == PD_DSO_MODULE;
    const struct pd_build_id *b = pd_file_build_id(n->f, dso->name, kernel);
    char bid[2 * PD_BUILD_ID_MAX + 1] = "";
    if (b)
        hex(bid, b->bits, b->size);
    struct ember_module m = {
        .path = dso->name,
        .build_id = b ? bid : NULL,
        .start = src->start,
        .limit = src->end,
        .offset = dso->kind == PD_DSO_FILE || dso->kind == PD_DSO_VDSO ? src->pgoff : 0,
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
