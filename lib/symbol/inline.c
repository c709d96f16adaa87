/*
 * inline.c - inline chains from DWARF via elfutils' libdw (see inline.h).
 *
 * For an address, libdw gives the nested scopes (dwarf_getscopes); the
 * functions among them, innermost first, are the inlined subroutines and
 * finally the real subprogram. An entry's source position is where the
 * address is for the innermost one, and for each outer one the call site
 * (DW_AT_call_file/line) of the function inlined into it: exactly what
 * addr2line -i prints. C++ names are demangled like addr2line -C.
 */
#include "inline.h"
#include "util/arena.h"
#include "util/hash.h"
#include "util/table.h"
#include "util/vec.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* From the C++ runtime (extern "C" in <cxxabi.h>). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct module {
    char *path;
    Dwfl *dwfl;
    Dwfl_Module *mod; /* NULL when the file could not be opened */
    Dwarf_Addr bias;  /* where elfutils placed the file: its address = file address + bias */
};

struct result {
    uint32_t module;
    uint64_t pc;
    const char *text; /* NULL: unresolved */
    size_t len;
};

struct ember_symbolizer {
    struct module *mods;
    size_t nmods, mcap;
    struct result *res; /* open addressing on (module, pc) */
    uint32_t rmask, rcount;
    struct ember_arena arena;
    char *buf;
    size_t blen, bcap;
};

static const Dwfl_Callbacks offline_callbacks = {
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

int ember_symbolizer_new(struct ember_symbolizer **out)
{
    struct ember_symbolizer *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->res = calloc(256, sizeof(*s->res));
    if (!s->res) {
        free(s);
        return -ENOMEM;
    }
    s->rmask = 255;
    ember_arena_init(&s->arena);
    *out = s;
    return 0;
}

void ember_symbolizer_free(struct ember_symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nmods; i++) {
        free(s->mods[i].path);
        if (s->mods[i].dwfl)
            dwfl_end(s->mods[i].dwfl);
    }
    free(s->mods);
    free(s->res);
    free(s->buf);
    ember_arena_release(&s->arena);
    free(s);
}

static int module_get(struct ember_symbolizer *s, const char *path, size_t len, uint32_t *idx)
{
    for (size_t i = 0; i < s->nmods; i++) {
        if (strlen(s->mods[i].path) == len && memcmp(s->mods[i].path, path, len) == 0) {
            *idx = (uint32_t)i;
            return 0;
        }
    }
    if (EMBER_VEC_RESERVE(s->mods, s->mcap, s->nmods + 1) < 0)
        return -ENOMEM;
    struct module *m = &s->mods[s->nmods];
    memset(m, 0, sizeof(*m));
    m->path = strndup(path, len);
    if (!m->path)
        return -ENOMEM;
    m->dwfl = dwfl_begin(&offline_callbacks);
    if (m->dwfl) {
        m->mod = dwfl_report_offline(m->dwfl, m->path, m->path, -1);
        dwfl_report_end(m->dwfl, NULL, NULL);
        if (m->mod && !dwfl_module_getelf(m->mod, &m->bias))
            m->mod = NULL;
    }
    *idx = (uint32_t)s->nmods++;
    return 0;
}

static int put(struct ember_symbolizer *s, const char *str, size_t n)
{
    if (EMBER_VEC_RESERVE(s->buf, s->bcap, s->blen + n + 1) < 0)
        return -ENOMEM;
    memcpy(s->buf + s->blen, str, n);
    s->blen += n;
    s->buf[s->blen] = '\0';
    return 0;
}

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path;
}

/* The DIE that declares a function: an inlined or out-of-line instance
 * points to its abstract origin, a definition to its declaration. */
static Dwarf_Die *declaration(Dwarf_Die *die, Dwarf_Die *mem)
{
    Dwarf_Attribute attr;
    Dwarf_Die *cur = die;
    for (int hops = 0; hops < 4; hops++) {
        if ((dwarf_attr(cur, DW_AT_abstract_origin, &attr) ||
             dwarf_attr(cur, DW_AT_specification, &attr)) &&
            dwarf_formref_die(&attr, mem))
            cur = mem;
        else
            break;
    }
    return cur;
}

/* "ns::Class::name" for a function without a linkage name (GCC gives none
 * to functions of an anonymous namespace): the names of the namespaces and
 * types that enclose its declaration, as a demangler would print them. */
static char *qualified_name(Dwarf_Die *die)
{
    Dwarf_Die mem;
    Dwarf_Die *decl = declaration(die, &mem);
    const char *name = dwarf_diename(decl);
    if (!name)
        return strdup("??");
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes_die(decl, &scopes);
    size_t cap = strlen(name) + 1, len = 0;
    for (int i = 1; i < n; i++) /* scopes[0] is decl itself */
        cap += (dwarf_diename(&scopes[i]) ? strlen(dwarf_diename(&scopes[i])) : 21) + 2;
    char *out = malloc(cap);
    if (!out) {
        free(scopes);
        return NULL;
    }
    for (int i = n; i-- > 1;) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag != DW_TAG_namespace && tag != DW_TAG_class_type && tag != DW_TAG_structure_type &&
            tag != DW_TAG_union_type)
            continue;
        const char *part = dwarf_diename(&scopes[i]);
        if (!part)
            part = "(anonymous namespace)";
        len += (size_t)sprintf(out + len, "%s::", part);
    }
    strcpy(out + len, name);
    free(scopes);
    return out;
}

/* The function's name as addr2line -f -C prints it: the demangled linkage
 * name, else the qualified DWARF name. */
static char *function_name(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    if (!link)
        link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
    if (link) {
        int status = 0;
        char *d = __cxa_demangle(link, NULL, NULL, &status);
        if (d && status == 0)
            return d;
        free(d);
        return strdup(link);
    }
    return qualified_name(die);
}

static bool is_function(Dwarf_Die *die)
{
    int tag = dwarf_tag(die);
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/* "file:line" of an inlined instance's call site, from its CU's files. */
static char *call_site(Dwarf_Die *cu, Dwarf_Die *inl)
{
    Dwarf_Attribute attr;
    Dwarf_Word line = 0, file = 0;
    Dwarf_Files *files;
    const char *name = NULL;
    char *loc;
    dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &line);
    dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &file);
    if (dwarf_getsrcfiles(cu, &files, NULL) == 0)
        name = dwarf_filesrc(files, file, NULL, NULL);
    return asprintf(&loc, "%s:%u", name ? base_name(name) : "??", (unsigned)line) < 0 ? NULL : loc;
}

/*
 * Writes "outer;...;innermost" for the functions at addr into s->buf and
 * returns how many there are. dwarf_getscopes gives the innermost function
 * (for an inlined instance, what follows it are the scopes of its abstract
 * definition); the callers are then the function-like parents of each
 * concrete instance, from dwarf_getscopes_die.
 */
static int chain_at(struct ember_symbolizer *s, Dwfl_Module *mod, Dwarf_Addr addr, bool context)
{
    enum { MAX_INLINE = 256 };
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
    Dwarf_Die *scopes = NULL;
    int n = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
    int i = 0;
    while (i < n && !is_function(&scopes[i]))
        i++;
    if (i >= n) {
        free(scopes);
        return 0;
    }
    char *names[MAX_INLINE], *locs[MAX_INLINE];
    int nf = 0, err = 0;
    Dwarf_Die cur = scopes[i];
    free(scopes);
    /* the innermost function's position: the line table at addr */
    Dwfl_Line *line = dwfl_module_getsrc(mod, addr);
    int lineno = 0;
    const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
    char *loc = NULL;
    if (asprintf(&loc, "%s:%d", file ? base_name(file) : "??", lineno) < 0)
        return -ENOMEM;
    for (;;) {
        names[nf] = function_name(&cur);
        locs[nf++] = loc;
        if (dwarf_tag(&cur) != DW_TAG_inlined_subroutine || nf == MAX_INLINE)
            break;
        loc = call_site(cu, &cur);
        Dwarf_Die *parents = NULL;
        int np = dwarf_getscopes_die(&cur, &parents);
        int j = 1;
        while (j < np && !is_function(&parents[j]))
            j++;
        if (j >= np) {
            free(parents);
            free(loc);
            break;
        }
        cur = parents[j];
        free(parents);
    }
    for (int k = nf; k-- > 0 && !err;) {
        if (s->blen)
            err = put(s, ";", 1);
        if (!err)
            err = put(s, names[k] ? names[k] : "??", strlen(names[k] ? names[k] : "??"));
        if (!err && context) {
            err = put(s, ":", 1);
            if (!err)
                err = put(s, locs[k] ? locs[k] : "??:0", strlen(locs[k] ? locs[k] : "??:0"));
        }
    }
    for (int k = 0; k < nf; k++) {
        free(names[k]);
        free(locs[k]);
    }
    return err ? err : nf;
}

/* The symbol's value, for "func+0xOFF" fallbacks. */
static bool symbol_value(Dwfl_Module *mod, const char *name, size_t len, GElf_Addr *value)
{
    int n = dwfl_module_getsymtab(mod);
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        const char *nm = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
        if (nm && strlen(nm) == len && memcmp(nm, name, len) == 0 && sym.st_value) {
            *value = addr;
            return true;
        }
    }
    return false;
}

static int resolve(struct ember_symbolizer *s, struct module *m, uint64_t pc, const char *sym,
                   size_t symlen, bool context)
{
    s->blen = 0;
    if (!m->mod)
        return 0;
    Dwarf_Addr low = 0, high = 0;
    dwfl_module_info(m->mod, NULL, &low, &high, NULL, NULL, NULL, NULL);
    /* perf prints file addresses for most user frames: try it as one */
    Dwarf_Addr at = pc + m->bias;
    int nf = at >= low && at < high ? chain_at(s, m->mod, at, context) : 0;
    if (nf != 0)
        return nf;
    /* "func+0xOFF": func's address plus the offset */
    const char *plus = NULL;
    for (size_t i = symlen; i-- > 0;)
        if (sym[i] == '+') {
            plus = sym + i;
            break;
        }
    GElf_Addr base;
    if (!plus || (size_t)(sym + symlen - plus) < 4 || memcmp(plus, "+0x", 3) != 0 ||
        !symbol_value(m->mod, sym, (size_t)(plus - sym), &base))
        return 0;
    char off[32];
    size_t ol = (size_t)(sym + symlen - plus - 3);
    if (ol >= sizeof(off))
        return 0;
    memcpy(off, plus + 3, ol);
    off[ol] = '\0';
    return chain_at(s, m->mod, base + strtoull(off, NULL, 16), context);
}

static uint64_t result_hash(const void *slot)
{
    const struct result *r = slot;
    return ember_hash_u64(r->pc * 31 + r->module);
}

static bool result_used(const void *slot)
{
    return ((const struct result *)slot)->module != 0;
}

static struct result *result_slot(struct ember_symbolizer *s, uint32_t module, uint64_t pc)
{
    struct result key = {.module = module, .pc = pc};
    for (uint32_t i = (uint32_t)result_hash(&key) & s->rmask;; i = (i + 1) & s->rmask) {
        struct result *r = &s->res[i];
        if (!r->module || (r->module == module && r->pc == pc))
            return r;
    }
}

int ember_symbolizer_inline(struct ember_symbolizer *s, const char *mod, size_t modlen,
                            const char *pc, size_t pclen, const char *sym, size_t symlen,
                            bool context, const char **out, size_t *outlen)
{
    char pcs[32];
    if (pclen == 0 || pclen >= sizeof(pcs))
        return -ENOENT;
    memcpy(pcs, pc, pclen);
    pcs[pclen] = '\0';
    char *end;
    uint64_t addr = strtoull(pcs, &end, 16);
    if (*end)
        return -ENOENT;
    uint32_t mi;
    int err = module_get(s, mod, modlen, &mi);
    if (err)
        return err;
    /* pc 0 in module 0 would look like an empty slot: offset the key */
    struct result *r = result_slot(s, mi + 1, addr);
    if (r->module) {
        if (!r->text)
            return -ENOENT;
        *out = r->text;
        *outlen = r->len;
        return 1;
    }
    int nf = resolve(s, &s->mods[mi], addr, sym, symlen, context);
    if (nf < 0)
        return nf;
    const char *text = nf > 0 ? ember_arena_strndup(&s->arena, s->buf, s->blen) : NULL;
    if (nf > 0 && !text)
        return -ENOMEM;
    *r = (struct result){mi + 1, addr, text, nf > 0 ? s->blen : 0};
    if (++s->rcount * 2 > s->rmask + 1 &&
        (err = ember_table_grow((void **)&s->res, &s->rmask, sizeof(*s->res), result_hash,
                                result_used)) < 0)
        return err;
    if (!text)
        return -ENOENT;
    *out = text;
    *outlen = s->blen;
    return 1;
}
