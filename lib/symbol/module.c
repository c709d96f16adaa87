/*
 * module.c - an ELF file opened once with libdwfl (see module.h).
 *
 * Each module has a Dwfl of its own, reported offline: libdwfl places the
 * file at an address of its choosing, and bias converts between that and
 * the file's own addresses. A module whose file could not be opened keeps
 * mod == NULL and the reason in error; every query on it answers -ENOENT.
 * The symbol table and the DWARF index are built on first use (perf's
 * --inline rarely needs the symbols) and live as long as the module: they
 * point into libelf's and libdw's data.
 */
#include "symbol/module.h"

#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct load { /* a PT_LOAD segment */
    uint64_t offset, vaddr, memsz;
};

struct ember_symbol_module {
    char *path;
    Dwfl *dwfl;
    Dwfl_Module *mod; /* NULL: unusable, see error */
    uint64_t bias;    /* libdwfl address = file address + bias */
    uint64_t low, high;
    const uint8_t *build_id; /* libdwfl's copy */
    size_t build_id_len;
    char *identity;
    size_t identity_len;
    struct load *loads;
    size_t nloads;
    struct ember_symtab *symtab;   /* NULL until first asked for */
    struct ember_inlines *inlines; /* the same */
    struct ember_module_perf_syms perf;
    uint32_t key;
    char error[200];
};

static void set_error(struct ember_symbol_module *m, const char *what)
{
    snprintf(m->error, sizeof(m->error), "%s: %s", what, dwfl_errmsg(-1));
    m->mod = NULL;
}

static int read_loads(struct ember_symbol_module *m, Elf *elf)
{
    size_t n = 0;
    if (elf_getphdrnum(elf, &n) != 0)
        return 0;
    m->loads = calloc(n ? n : 1, sizeof(*m->loads));
    if (!m->loads)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
            m->loads[m->nloads++] = (struct load){ph.p_offset, ph.p_vaddr, ph.p_memsz};
    }
    return 0;
}

/* The build-id, else the path with its modification time and size: a file
 * rewritten in place gets another identity. */
static int make_identity(struct ember_symbol_module *m)
{
    char *key = NULL;
    int n;
    if (m->build_id_len) {
        key = malloc(m->build_id_len + 1);
        if (!key)
            return -ENOMEM;
        key[0] = 'B';
        memcpy(key + 1, m->build_id, m->build_id_len);
        n = (int)m->build_id_len + 1;
    } else {
        struct stat st;
        if (stat(m->path, &st) != 0)
            memset(&st, 0, sizeof(st));
        n = asprintf(&key, "P%s%c%lld.%09ld:%lld", m->path, '\0', (long long)st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec, (long long)st.st_size);
        if (n < 0)
            return -ENOMEM;
    }
    m->identity = key;
    m->identity_len = (size_t)n;
    return 0;
}

static int report(struct ember_symbol_module *m, const Dwfl_Callbacks *cb)
{
    struct stat st;
    if (stat(m->path, &st) != 0) {
        snprintf(m->error, sizeof(m->error), "cannot read it as an ELF file: %s", strerror(errno));
        return 0;
    }
    if (!S_ISREG(st.st_mode)) { /* a FIFO would block the open, a device read forever */
        snprintf(m->error, sizeof(m->error), "cannot read it as an ELF file: not a regular file");
        return 0;
    }
    m->dwfl = dwfl_begin(cb);
    if (!m->dwfl) {
        set_error(m, "cannot start libdwfl");
        return 0;
    }
    m->mod = dwfl_report_offline(m->dwfl, m->path, m->path, -1);
    dwfl_report_end(m->dwfl, NULL, NULL);
    if (!m->mod) {
        set_error(m, "cannot read it as an ELF file");
        return 0;
    }
    GElf_Addr bias = 0;
    Elf *elf = dwfl_module_getelf(m->mod, &bias);
    if (!elf) {
        set_error(m, "cannot read it as an ELF file");
        return 0;
    }
    m->bias = bias;
    Dwarf_Addr low = 0, high = 0;
    dwfl_module_info(m->mod, NULL, &low, &high, NULL, NULL, NULL, NULL);
    m->low = low;
    m->high = high;
    const unsigned char *bits = NULL;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(m->mod, &bits, &vaddr);
    if (n > 0) {
        m->build_id = bits;
        m->build_id_len = (size_t)n;
    }
    return read_loads(m, elf);
}

int ember_symbol_module_open(const char *path, size_t len, const Dwfl_Callbacks *cb,
                             struct ember_symbol_module **out)
{
    struct ember_symbol_module *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->path = strndup(path, len);
    int err = m->path ? report(m, cb) : -ENOMEM;
    if (!err)
        err = make_identity(m);
    if (err) {
        ember_symbol_module_free(m);
        return err;
    }
    *out = m;
    return 0;
}

void ember_symbol_module_free(struct ember_symbol_module *m)
{
    if (!m)
        return;
    ember_symtab_free(m->symtab);
    ember_inlines_free(m->inlines);
    ember_symtab_free(m->perf.syms);
    ember_arena_release(&m->perf.names);
    if (m->dwfl)
        dwfl_end(m->dwfl);
    free(m->loads);
    free(m->identity);
    free(m->path);
    free(m);
}

const char *ember_symbol_module_path(const struct ember_symbol_module *m)
{
    return m->path;
}

const char *ember_symbol_module_error(const struct ember_symbol_module *m)
{
    return m->error;
}

size_t ember_symbol_module_build_id(const struct ember_symbol_module *m, const uint8_t **bits)
{
    *bits = m->build_id;
    return m->build_id_len;
}

void ember_symbol_module_identity(const struct ember_symbol_module *m, const char **key,
                                  size_t *len)
{
    *key = m->identity;
    *len = m->identity_len;
}

void ember_symbol_module_set_key(struct ember_symbol_module *m, uint32_t key)
{
    m->key = key;
}

uint32_t ember_symbol_module_key(const struct ember_symbol_module *m)
{
    return m->key;
}

bool ember_symbol_module_contains(const struct ember_symbol_module *m, uint64_t addr)
{
    return m->mod && addr + m->bias >= m->low && addr + m->bias < m->high;
}

int ember_symbol_module_file_address(const struct ember_symbol_module *m, uint64_t map_start,
                                     uint64_t map_pgoff, uint64_t addr, uint64_t *file_addr)
{
    if (!m->mod || addr < map_start)
        return -ENOENT;
    uint64_t offset = addr - map_start + map_pgoff;
    for (size_t i = 0; i < m->nloads; i++) {
        const struct load *l = &m->loads[i];
        if (offset >= l->offset && offset - l->offset < l->memsz) {
            *file_addr = offset - l->offset + l->vaddr;
            return 0;
        }
    }
    return -ENOENT;
}

static bool addressable(const GElf_Sym *sym, GElf_Word shndx)
{
    int type = GELF_ST_TYPE(sym->st_info);
    return (type == STT_FUNC || type == STT_OBJECT || type == STT_GNU_IFUNC) &&
           shndx != SHN_UNDEF && shndx != SHN_ABS && shndx != (GElf_Word)-1;
}

/* Global before weak before local, as libdwfl's own lookup prefers. */
static int rank(const GElf_Sym *sym)
{
    int bind = GELF_ST_BIND(sym->st_info);
    return bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0;
}

int ember_symbol_module_each_symbol(struct ember_symbol_module *m, ember_symbol_each_fn fn,
                                    void *ctx)
{
    int n = m->mod ? dwfl_module_getsymtab(m->mod) : 0;
    for (int i = 1; i < n; i++) { /* 0 is the null symbol */
        struct ember_symbol_elfsym s = {.index = (uint32_t)i};
        GElf_Addr addr;
        s.name = dwfl_module_getsym_info(m->mod, i, &s.sym, &addr, &s.shndx, &s.elf, NULL);
        if (!s.name || !*s.name)
            continue;
        s.addr = addr - m->bias;
        int err = fn(ctx, &s);
        if (err)
            return err;
    }
    return 0;
}

static int add_symbol(void *ctx, const struct ember_symbol_elfsym *s)
{
    /* perf's "func+0xOFF" names only symbols with a value */
    if (s->sym.st_value == 0)
        return 0;
    return ember_symtab_add(ctx, s->name, s->addr, s->sym.st_size, rank(&s->sym),
                            addressable(&s->sym, s->shndx));
}

static int load_symbols(struct ember_symbol_module *m, struct ember_symtab *t)
{
    int err = ember_symbol_module_each_symbol(m, add_symbol, t);
    return err ? err : ember_symtab_finish(t);
}

int ember_symbol_module_symbols(struct ember_symbol_module *m, const struct ember_symtab **out)
{
    if (!m->mod)
        return -ENOENT;
    if (!m->symtab) {
        struct ember_symtab *t;
        int err = ember_symtab_new(&t);
        if (!err && (err = load_symbols(m, t)) < 0)
            ember_symtab_free(t);
        if (err)
            return err;
        m->symtab = t;
    }
    *out = m->symtab;
    return 0;
}

struct ember_module_perf_syms *ember_symbol_module_perf_syms(struct ember_symbol_module *m)
{
    return &m->perf;
}

int ember_symbol_module_inlines(struct ember_symbol_module *m, struct ember_inlines **out)
{
    const struct ember_symtab *t;
    int err = m->inlines ? 0 : ember_symbol_module_symbols(m, &t);
    if (!err && !m->inlines)
        err = ember_inlines_new(m->mod, t, m->bias, &m->inlines);
    if (!err)
        *out = m->inlines;
    return err;
}

Dwfl_Module *ember_symbol_module_dwfl(const struct ember_symbol_module *m, uint64_t *bias)
{
    *bias = m->bias;
    return m->mod;
}
