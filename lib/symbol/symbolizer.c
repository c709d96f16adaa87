/*
 * symbolizer.c - modules opened once, results memoized (see symbolizer.h).
 *
 * Invariants: a path is opened at most once (modules maps it to its module,
 * usable or not); every module of one identity carries the same memo key,
 * so the memo (open addressing on (key, address)) answers for all of them;
 * a memo slot with chain == NULL records that nothing is known there.
 * perf's lines are memoized too, by their pc as printed (with PERF_LINE in
 * the key): a pc that is no file address is then not looked up again
 * through its symbol's name.
 * Names from ELF symbols are interned here: the thousands of addresses of
 * one function share its name. DWARF's names and file names live in the
 * module that gave them (its DWARF index, libdw's data), and modules as
 * long as the symbolizer. Chains and frames live in the arena.
 */
#include "symbol/symbolizer.h"
#include "symbol/inlines.h"
#include "symbol/demangle.h"
#include "symbol/names.h"
#include "base/arena.h"
#include "base/diag.h"
#include "base/hash.h"
#include "base/strmap.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Memo keys with this bit hold perf lines' answers, by pc as printed. */
enum { PERF_LINE = 1u << 31 };

struct memo_slot {
    uint64_t addr;
    uint32_t key; /* the module's memo key (from 1), maybe | PERF_LINE; 0: empty slot */
    const struct ember_symbol_chain *chain;
};

struct ember_symbolizer {
    Dwfl_Callbacks cb;
    char *debuginfo_path;           /* NULL: libdwfl's default */
    struct ember_strmap modules;    /* path -> struct ember_symbol_module * */
    struct ember_strmap identities; /* identity -> memo key */
    struct ember_strmap names;      /* ELF function name -> its interned copy */
    struct ember_symbol_module **owned;
    size_t nowned, ocap;
    struct memo_slot *memo;
    uint32_t mmask, mcount;
    struct ember_arena arena;           /* chains and their frames */
    struct ember_symbol_frame *scratch; /* EMBER_INLINES_MAX frames */
};

/* libdwfl's search (by build-id, by .gnu_debuglink), then perf's build-id
 * cache: perf record keeps a copy of each binary it sampled as
 * DIR/.build-id/xx/yyyy/elf and, where it found one (by the binary's
 * .gnu_debuglink, by build-id), the binary's debug file beside it as
 * .../debug, which perf reads for a stripped binary's symbols. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file, const char *link, GElf_Word crc, char **found)
{
    int fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file, link, crc, found);
    size_t n = file ? strlen(file) : 0;
    if (fd >= 0 || n < 4 || strcmp(file + n - 4, "/elf") != 0)
        return fd;
    char *debug = malloc(n + 3); /* "elf" becomes "debug" */
    if (!debug)
        return -1;
    memcpy(debug, file, n - 3);
    strcpy(debug + n - 3, "debug");
    fd = open(debug, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        free(debug);
    else
        *found = debug;
    return fd;
}

void ember_symbol_debuginfod_load(void)
{
    static const Dwfl_Callbacks cb = {.find_debuginfo = dwfl_standard_find_debuginfo,
                                      .section_address = dwfl_offline_section_address};
    Dwfl *dwfl = dwfl_begin(&cb);
    if (dwfl) {
        dwfl_get_debuginfod_client(dwfl);
        dwfl_end(dwfl);
    }
}

int ember_symbolizer_new(struct ember_symbolizer **out)
{
    struct ember_symbolizer *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->cb = (Dwfl_Callbacks){
        .find_debuginfo = find_debuginfo,
        .section_address = dwfl_offline_section_address,
        .debuginfo_path = &s->debuginfo_path,
    };
    ember_arena_init(&s->arena);
    s->memo = calloc(256, sizeof(*s->memo));
    s->mmask = 255;
    s->scratch = calloc(EMBER_INLINES_MAX, sizeof(*s->scratch));
    int err = s->memo && s->scratch ? 0 : -ENOMEM;
    if (!err)
        err = ember_strmap_init(&s->modules);
    if (!err)
        err = ember_strmap_init(&s->identities);
    if (!err)
        err = ember_strmap_init(&s->names);
    if (err) {
        ember_symbolizer_free(s);
        return err;
    }
    *out = s;
    return 0;
}

void ember_symbolizer_free(struct ember_symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nowned; i++)
        ember_symbol_module_free(s->owned[i]);
    free(s->owned);
    ember_strmap_release(&s->modules);
    ember_strmap_release(&s->identities);
    ember_strmap_release(&s->names);
    free(s->memo);
    free(s->scratch);
    free(s->debuginfo_path);
    ember_arena_release(&s->arena);
    free(s);
}

int ember_symbolizer_set_debuginfo_path(struct ember_symbolizer *s, const char *path)
{
    if (s->nowned)
        return -EBUSY;
    char *copy = strdup(path);
    if (!copy)
        return -ENOMEM;
    free(s->debuginfo_path);
    s->debuginfo_path = copy;
    return 0;
}

/* Gives m the memo key of its identity: identities are numbered from 1
 * in order of appearance. */
static int set_key(struct ember_symbolizer *s, struct ember_symbol_module *m)
{
    const char *id;
    size_t len;
    ember_symbol_module_identity(m, &id, &len);
    uintptr_t k = (uintptr_t)ember_strmap_get(&s->identities, id, len);
    if (!k) {
        k = s->identities.count + 1;
        if (k >= PERF_LINE)
            return -ERANGE;
        if (ember_strmap_put(&s->identities, id, len, (void *)k) < 0)
            return -ENOMEM;
    }
    ember_symbol_module_set_key(m, (uint32_t)k);
    return 0;
}

static int open_module(struct ember_symbolizer *s, const char *path, size_t len,
                       struct ember_symbol_module **out)
{
    if (EMBER_VEC_RESERVE(s->owned, s->ocap, s->nowned + 1) < 0)
        return -ENOMEM;
    struct ember_symbol_module *m;
    int err = ember_symbol_module_open(path, len, &s->cb, &m);
    if (err)
        return err;
    err = set_key(s, m);
    if (!err)
        err = ember_strmap_put(&s->modules, path, len, m);
    if (err) {
        ember_symbol_module_free(m);
        return err;
    }
    s->owned[s->nowned++] = m;
    *out = m;
    return 0;
}

static int module_at(struct ember_symbolizer *s, const char *path, size_t len,
                     struct ember_symbol_module **out)
{
    *out = ember_strmap_get(&s->modules, path, len);
    return *out ? 0 : open_module(s, path, len, out);
}

static void hex(char *out, const uint8_t *bits, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bits[i] >> 4];
        out[2 * i + 1] = digits[bits[i] & 15];
    }
    out[2 * n] = '\0';
}

static int build_id_mismatch(const struct ember_symbol_module *m, const uint8_t *want,
                             size_t want_len, struct ember_diag *d)
{
    const uint8_t *bits;
    size_t n = ember_symbol_module_build_id(m, &bits);
    if (n == want_len && memcmp(bits, want, n) == 0)
        return 0;
    char has[2 * 64 + 1] = "none", expected[2 * 64 + 1];
    if (n)
        hex(has, bits, n < 64 ? n : 64);
    hex(expected, want, want_len < 64 ? want_len : 64);
    return ember_diag_set(d, -ESTALE, ember_symbol_module_path(m), 0,
                          "build-id mismatch: the file's build-id is %s, the recorded one %s "
                          "(the file changed since it was recorded)",
                          has, expected);
}

int ember_symbolizer_module(struct ember_symbolizer *s, const char *path, size_t len,
                            const uint8_t *build_id, size_t build_id_len,
                            struct ember_symbol_module **out, struct ember_diag *d)
{
    struct ember_symbol_module *m;
    *out = NULL;
    int err = module_at(s, path, len, &m);
    if (err)
        return err;
    if (*ember_symbol_module_error(m))
        return ember_diag_set(d, -ENOENT, ember_symbol_module_path(m), 0, "%s",
                              ember_symbol_module_error(m));
    if (build_id_len && (err = build_id_mismatch(m, build_id, build_id_len, d)) < 0)
        return err;
    *out = m;
    return 0;
}

static const char *intern(struct ember_symbolizer *s, const char *name, size_t len)
{
    const char *kept = ember_strmap_get(&s->names, name, len);
    if (kept)
        return kept;
    char *copy = ember_arena_strndup(&s->names.arena, name, len);
    if (!copy || ember_strmap_put(&s->names, name, len, copy) < 0)
        return NULL;
    return copy;
}

static int keep_chain(struct ember_symbolizer *s, const struct ember_symbol_frame *frames, int n,
                      bool from_dwarf, const struct ember_symbol_chain **out)
{
    struct ember_symbol_chain *c = ember_arena_alloc(&s->arena, sizeof(*c));
    struct ember_symbol_frame *f = ember_arena_alloc(&s->arena, (size_t)n * sizeof(*f));
    if (!c || !f)
        return -ENOMEM;
    memcpy(f, frames, (size_t)n * sizeof(*f));
    *c = (struct ember_symbol_chain){f, (uint32_t)n, from_dwarf};
    *out = c;
    return 0;
}

/* One frame named by the ELF symbol around addr; *out NULL when none. */
static int symbol_chain(struct ember_symbolizer *s, struct ember_symbol_module *m, uint64_t addr,
                        const struct ember_symbol_chain **out)
{
    const struct ember_symtab *t;
    const struct ember_symtab_sym *sym;
    uint64_t offset;
    *out = NULL;
    int err = ember_symbol_module_symbols(m, &t);
    if (err)
        return err == -ENOENT ? 0 : err;
    if (ember_symtab_lookup(t, addr, &sym, &offset) < 0)
        return 0;
    char *demangled = ember_demangle(sym->name, strlen(sym->name), EMBER_DEMANGLE_ADDR2LINE);
    const char *name = demangled ? demangled : sym->name;
    struct ember_symbol_frame f = {.function = intern(s, name, strlen(name))};
    free(demangled);
    return f.function ? keep_chain(s, &f, 1, false, out) : -ENOMEM;
}

static int compute(struct ember_symbolizer *s, struct ember_symbol_module *m, uint64_t addr,
                   const struct ember_symbol_chain **out)
{
    uint64_t bias;
    struct ember_inlines *x;
    ember_symbol_module_dwfl(m, &bias);
    int n = ember_symbol_module_inlines(m, &x);
    if (!n)
        n = ember_inlines_at(x, addr + bias, s->scratch);
    if (n < 0)
        return n;
    return n > 0 ? keep_chain(s, s->scratch, n, true, out) : symbol_chain(s, m, addr, out);
}

static uint64_t memo_hash(const void *slot)
{
    const struct memo_slot *m = slot;
    return ember_hash_u64(m->addr * 31 + m->key);
}

static bool memo_used(const void *slot)
{
    return ((const struct memo_slot *)slot)->key != 0;
}

static struct memo_slot *memo_find(struct ember_symbolizer *s, uint32_t key, uint64_t addr)
{
    struct memo_slot probe = {.addr = addr, .key = key};
    for (uint32_t i = (uint32_t)memo_hash(&probe) & s->mmask;; i = (i + 1) & s->mmask) {
        struct memo_slot *m = &s->memo[i];
        if (!m->key || (m->key == key && m->addr == addr))
            return m;
    }
}

/* Records chain (NULL: nothing known) for (key, addr), absent so far. */
static int memo_put(struct ember_symbolizer *s, uint32_t key, uint64_t addr,
                    const struct ember_symbol_chain *chain)
{
    if ((s->mcount + 1) * 2 > s->mmask + 1 &&
        ember_table_grow((void **)&s->memo, &s->mmask, sizeof(*s->memo), memo_hash, memo_used) < 0)
        return -ENOMEM;
    *memo_find(s, key, addr) = (struct memo_slot){addr, key, chain};
    s->mcount++;
    return 0;
}

/* The memo's answer as a return value. */
static int answer(const struct ember_symbol_chain *chain, const struct ember_symbol_chain **out)
{
    *out = chain;
    return chain ? 0 : -ENOENT;
}

int ember_symbolizer_resolve(struct ember_symbolizer *s, struct ember_symbol_module *m,
                             uint64_t addr, const struct ember_symbol_chain **out)
{
    if (!ember_symbol_module_contains(m, addr))
        return -ENOENT;
    uint32_t key = ember_symbol_module_key(m);
    struct memo_slot *slot = memo_find(s, key, addr);
    if (slot->key)
        return answer(slot->chain, out);
    const struct ember_symbol_chain *chain;
    int err = compute(s, m, addr, &chain);
    if (!err)
        err = memo_put(s, key, addr, chain);
    return err ? err : answer(chain, out);
}

static bool parse_hex(const char *text, size_t len, uint64_t *value)
{
    char buf[32];
    if (len == 0 || len >= sizeof(buf))
        return false;
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *end;
    *value = strtoull(buf, &end, 16);
    return *end == '\0';
}

/* perf's "func+0xOFF": func's address plus OFF; false when sym is not that. */
static int symbol_offset(struct ember_symbol_module *m, const char *sym, size_t symlen,
                         uint64_t *addr)
{
    const char *plus = NULL;
    for (size_t i = symlen; i-- > 0;)
        if (sym[i] == '+') {
            plus = sym + i;
            break;
        }
    size_t ol = plus ? (size_t)(sym + symlen - plus) : 0;
    if (ol < 4 || memcmp(plus, "+0x", 3) != 0 || ol - 3 >= 32)
        return -ENOENT;
    char off[32];
    memcpy(off, plus + 3, ol - 3);
    off[ol - 3] = '\0';
    const struct ember_symtab *t;
    uint64_t base;
    int err = ember_symbol_module_symbols(m, &t);
    if (!err)
        err = ember_symtab_find(t, sym, (size_t)(plus - sym), &base);
    if (!err)
        *addr = base + strtoull(off, NULL, 16);
    return err;
}

/* The DWARF chain at addr: 0, -ENOENT (also for an ELF symbol alone). */
static int dwarf_chain(struct ember_symbolizer *s, struct ember_symbol_module *m, uint64_t addr,
                       const struct ember_symbol_chain **out)
{
    int err = ember_symbolizer_resolve(s, m, addr, out);
    return err == 0 && !(*out)->from_dwarf ? -ENOENT : err;
}

/* A perf line's chain, not memoized: from its pc, else its symbol. */
static int perf_chain(struct ember_symbolizer *s, struct ember_symbol_module *m, uint64_t pc,
                      const char *sym, size_t symlen, const struct ember_symbol_chain **out)
{
    /* perf prints file addresses for most user frames: try it as one */
    int err = dwarf_chain(s, m, pc, out);
    uint64_t addr;
    if (err == -ENOENT && (err = symbol_offset(m, sym, symlen, &addr)) == 0)
        err = dwarf_chain(s, m, addr, out);
    return err;
}

int ember_symbolizer_resolve_perf(struct ember_symbolizer *s, const char *mod, size_t modlen,
                                  const char *pc, size_t pclen, const char *sym, size_t symlen,
                                  const struct ember_symbol_chain **out)
{
    uint64_t addr;
    struct ember_symbol_module *m;
    if (!parse_hex(pc, pclen, &addr))
        return -ENOENT;
    int err = module_at(s, mod, modlen, &m);
    if (err)
        return err;
    /* the answer for the pc as printed, whichever way it was found */
    uint32_t key = ember_symbol_module_key(m) | PERF_LINE;
    struct memo_slot *slot = memo_find(s, key, addr);
    if (slot->key)
        return answer(slot->chain, out);
    err = perf_chain(s, m, addr, sym, symlen, out);
    if (err && err != -ENOENT)
        return err;
    const struct ember_symbol_chain *chain = err ? NULL : *out;
    err = memo_put(s, key, addr, chain);
    return err ? err : answer(chain, out);
}
