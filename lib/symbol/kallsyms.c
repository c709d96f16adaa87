/*
 * kallsyms.c - kernel symbols from /proc/kallsyms, as perf script
 * finds them when no vmlinux is at hand.
 *
 * perf's rules (util/symbol.c, kallsyms): text, weak, data and bss
 * symbols are kept; a symbol ends where the next one starts (the last
 * kernel symbol before the modules, and the very last, one page further);
 * of symbols at one address the last listed wins (it is the one left with
 * a length); the kernel proper is relocated by the difference between the
 * _text recorded in the file and the running kernel's, modules are not.
 * The table is used only when the running kernel is the recorded one (the
 * build-id in /sys/kernel/notes), and when kallsyms shows addresses (it
 * shows zeros under kernel.kptr_restrict to those who may not see them).
 * Invariants: kernel and module symbols are sorted by start, each module's
 * symbols together; names live in one buffer, each copied there from
 * the piece of the file it is parsed in (kallsyms_read.c reads it a
 * piece at a time; no copy of a line but the few cut at a piece's end, no
 * allocation per line: parsing had cost as much CPU as the kernel's
 * writing of the file).
 */
#include "symbol/kallsyms.h"
#include "symbol/kallsyms_impl.h"
#include "base/vec.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int by_address(const void *a, const void *b)
{
    const struct ksym *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

void ember_kallsyms_init(struct ember_kallsyms *k)
{
    memset(k, 0, sizeof(*k));
}

void ember_kallsyms_release(struct ember_kallsyms *k)
{
    free(k->syms);
    free(k->names);
}

static bool kept_type(char type)
{
    type = (char)toupper((unsigned char)type);
    return type == 'T' || type == 'W' || type == 'D' || type == 'B';
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The address a line starts with (the kernel prints 16 hex digits):
 * the first byte after it, or NULL. */
static const char *address(const char *p, const char *end, uint64_t *addr)
{
    const char *start = p;
    int d;
    for (*addr = 0; p < end && p - start < 16 && (d = hex_digit(*p)) >= 0; p++)
        *addr = *addr << 4 | (uint64_t)d;
    return p > start && (p == end || hex_digit(*p) < 0) ? p : NULL;
}

/* s[0, n) kept at the names' end (room made for it), NUL-terminated:
 * its offset. */
static uint32_t keep(struct ember_kallsyms *k, const char *s, size_t n)
{
    uint32_t at = (uint32_t)k->nlen;
    memcpy(k->names + at, s, n);
    k->names[at + n] = '\0';
    k->nlen += n + 1;
    return at;
}

/* The module "[mod]" of mod[0, n): consecutive symbols of one module
 * share one copy. */
static uint32_t module_of(struct ember_kallsyms *k, const char *mod, size_t n,
                          uint32_t *last_module)
{
    const char *last = *last_module == UINT32_MAX ? NULL : k->names + *last_module;
    if (!last || strlen(last) != n || memcmp(last, mod, n) != 0)
        *last_module = keep(k, mod, n);
    return *last_module;
}

/* One line, line[0, eol): "ffffffff81000000 T _text" or "... t name\t[module]". */
static int parse_line(struct ember_kallsyms *k, const char *line, const char *eol, uint32_t order,
                      uint32_t *last_module)
{
    uint64_t addr;
    const char *end = address(line, eol, &addr);
    if (!end || eol - end < 3 || end[0] != ' ' || end[2] != ' ')
        return 0;
    char type = end[1];
    const char *name = end + 3, *tab = memchr(name, '\t', (size_t)(eol - name));
    size_t n = (size_t)((tab ? tab : eol) - name);
    if (!kept_type(type) || n == 0 || name[0] == '$')
        return 0;
    if (n == 5 && memcmp(name, "_text", 5) == 0)
        k->text_now = addr, k->have_text = true;
    /* the name and module and their NULs take less than the line */
    size_t need = k->nlen + (size_t)(eol - line);
    if (need >= UINT32_MAX)
        return -EFBIG; /* names are 32-bit offsets */
    if (EMBER_VEC_RESERVE(k->syms, k->cap, k->n + 1) < 0 ||
        EMBER_VEC_RESERVE(k->names, k->ncap, need) < 0)
        return -ENOMEM;
    uint32_t at = keep(k, name, n);
    uint32_t module =
        tab ? module_of(k, tab + 1, (size_t)(eol - tab - 1), last_module) : UINT32_MAX;
    k->syms[k->n++] = (struct ksym){addr, addr, at, module, order};
    return 0;
}

/* The text as it is parsed: a line cut at a piece's end waits in carry
 * for the rest. */
struct text {
    struct ember_kallsyms *k;
    char *carry;
    size_t ncarry, ccap;
    uint32_t order, last_module;
};

/* The line carried, its rest p[0, n) added: parsed once whole. */
static int carry_on(struct text *t, const char *p, size_t n, bool whole)
{
    if (EMBER_VEC_RESERVE(t->carry, t->ccap, t->ncarry + n) < 0)
        return -ENOMEM;
    if (n) /* carry may still be NULL (memcpy(NULL, p, 0) is undefined) */
        memcpy(t->carry + t->ncarry, p, n);
    t->ncarry += n;
    if (!whole)
        return 0;
    size_t len = t->ncarry;
    t->ncarry = 0;
    return parse_line(t->k, t->carry, t->carry + len, t->order++, &t->last_module);
}

/* A piece of the file (ks_piece_fn): its whole lines parsed, the last
 * one's start, if cut, carried. */
static int parse_piece(void *ctx, const char *p, size_t n)
{
    struct text *t = ctx;
    const char *end = p + n, *eol;
    int err = 0;
    if (t->ncarry) { /* the line cut at the last piece's end */
        eol = memchr(p, '\n', n);
        if ((err = carry_on(t, p, (size_t)((eol ? eol : end) - p), eol != NULL)) || !eol)
            return err;
        p = eol + 1;
    }
    for (; p < end && !err; p = eol + 1) {
        if (!(eol = memchr(p, '\n', (size_t)(end - p))))
            return carry_on(t, p, (size_t)(end - p), false);
        err = parse_line(t->k, p, eol, t->order++, &t->last_module);
    }
    return err;
}

/* The file read (beside: on a thread of its own, kallsyms_read.c) and
 * parsed as it comes: memory holds the names and a few pieces. -errno. */
static int read_file(struct ember_kallsyms *k, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct text t = {.k = k, .last_module = UINT32_MAX};
    int err = ks_read_pieces(fd, k->read_beside, parse_piece, &t);
    if (!err && t.ncarry) /* the last line, with no newline */
        err = carry_on(&t, "", 0, true);
    close(fd);
    free(t.carry);
    char *fit = err ? NULL : realloc(k->names, k->nlen + 1); /* the room left goes */
    if (fit)
        k->names = fit, k->ncap = k->nlen + 1;
    return err;
}

/* A 32-bit word of the notes, in the running kernel's (this host's) order. */
static uint32_t note_word(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static uint64_t page_up(uint64_t x)
{
    return (x + 4095) & ~(uint64_t)4095;
}

/* perf's symbols__fixup_end (kallsyms) then symbols__fixup_duplicate: the
 * symbol listed last at an address is the one left with a length. Then
 * the kernel's symbols first, each module's after, in their order. */
static int fix_ends(struct ember_kallsyms *k)
{
    bool sorted_already = true; /* the kernel lists its symbols by address */
    for (size_t i = 1; i < k->n && sorted_already; i++)
        sorted_already = k->syms[i - 1].start <= k->syms[i].start;
    if (!sorted_already) /* lines keep their order at one address: order ties */
        qsort(k->syms, k->n, sizeof(*k->syms), by_address);
    for (size_t i = 0; i + 1 < k->n; i++) {
        struct ksym *prev = &k->syms[i], *curr = &k->syms[i + 1];
        if ((prev->module == UINT32_MAX) != (curr->module == UINT32_MAX))
            prev->end = page_up(prev->start + 4096);
        else
            prev->end = curr->start;
    }
    if (k->n)
        k->syms[k->n - 1].end = page_up(k->syms[k->n - 1].start) + 4096;
    struct ksym *sorted = malloc((k->n ? k->n : 1) * sizeof(*sorted));
    if (!sorted)
        return -ENOMEM;
    size_t w = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < k->n; i++) {
            bool kernel = k->syms[i].module == UINT32_MAX;
            if (kernel != (pass == 0) || (i + 1 < k->n && k->syms[i + 1].start == k->syms[i].start))
                continue;
            sorted[w++] = k->syms[i];
            k->nkernel += pass == 0;
        }
    free(k->syms);
    k->syms = sorted;
    k->n = w;
    k->cap = k->n ? k->n : 1;
    return 0;
}

/* The build-id in the notes of the running kernel (/sys/kernel/notes). */
static size_t running_build_id(const char *notes, uint8_t *out)
{
    FILE *f = fopen(notes, "rb");
    if (!f)
        return 0;
    uint8_t buf[4096];
    size_t len = fread(buf, 1, sizeof(buf), f), at = 0, got = 0;
    fclose(f);
    while (at + 12 <= len) {
        uint32_t namesz = note_word(buf + at), descsz = note_word(buf + at + 4);
        uint32_t type = note_word(buf + at + 8);
        size_t name_at = at + 12, desc_at = name_at + ((namesz + 3u) & ~3u);
        size_t next = desc_at + ((descsz + 3u) & ~3u);
        if (namesz > len || descsz > len || next > len)
            break;
        if (type == 3 && namesz == 4 && memcmp(buf + name_at, "GNU", 4) == 0 && descsz <= 20) {
            memcpy(out, buf + desc_at, descsz);
            got = descsz;
            break;
        }
        at = next;
    }
    return got;
}

const char *ember_kallsyms_path(struct ember_kallsyms *k, const struct ember_kallsyms_source *src)
{
    k->loaded = true;
    if (!src->build_id_len)
        return src->kallsyms;
    uint8_t now[20];
    size_t n = running_build_id(src->notes, now);
    if (n == src->build_id_len && memcmp(now, src->build_id, n) == 0)
        return src->kallsyms;
    if (!src->cached)
        snprintf(k->why, sizeof(k->why),
                 "the running kernel is not the recorded one (its build-id in %s differs) "
                 "and perf's build-id cache has no copy of its kallsyms",
                 src->notes);
    return src->cached; /* perf record's copy, of the recorded kernel */
}

/* The table settled once (its ends fixed, as fix_ends), where it has
 * addresses: work of its own, done by whoever reads the file. */
static int settle(struct ember_kallsyms *k)
{
    if (k->settled || !k->have_text || k->text_now == 0)
        return 0;
    k->settled = true;
    return fix_ends(k);
}

int ember_kallsyms_read(struct ember_kallsyms *k, const char *path)
{
    int err = read_file(k, path);
    return err ? err : settle(k);
}

int ember_kallsyms_load(struct ember_kallsyms *k, const struct ember_kallsyms_source *src)
{
    const char *path = ember_kallsyms_path(k, src);
    return path ? ember_kallsyms_finish(k, src, path, read_file(k, path)) : 0;
}

int ember_kallsyms_finish(struct ember_kallsyms *k, const struct ember_kallsyms_source *src,
                          const char *path, int err)
{
    k->loaded = true;
    if (err == -ENOMEM)
        return err;
    if (err) {
        snprintf(k->why, sizeof(k->why), "cannot read %s", path);
        return 0;
    }
    if (!k->have_text || k->text_now == 0) {
        snprintf(k->why, sizeof(k->why),
                 "%s shows no addresses (kernel.kptr_restrict hides them; root sees them)", path);
        k->n = 0;
        return 0;
    }
    if ((err = settle(k)) < 0)
        return err;
    k->delta = src->have_text ? k->text_now - src->text : 0;
    k->usable = k->nkernel > 0;
    return 0;
}

static const struct ksym *search(const struct ksym *s, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct ksym *c = &s[lo - 1];
    return addr < c->end || addr == c->start ? c : NULL;
}

int ember_kallsyms_find(const struct ember_kallsyms *k, const char *module, size_t mlen,
                        uint64_t addr, const char **name, uint64_t *offset)
{
    if (!k->usable)
        return -ENOENT;
    const struct ksym *s;
    if (!module) {
        addr += k->delta; /* the running kernel's address */
        s = search(k->syms, k->nkernel, addr);
    } else {
        /* the module's symbols: a range of the sorted table */
        size_t lo = k->nkernel, hi = k->n;
        while (lo < hi && !(strlen(k->names + k->syms[lo].module) == mlen &&
                            memcmp(k->names + k->syms[lo].module, module, mlen) == 0))
            lo++;
        size_t end = lo;
        while (end < hi && k->syms[end].module == k->syms[lo].module)
            end++;
        s = lo < hi ? search(k->syms + lo, end - lo, addr) : NULL;
    }
    if (!s)
        return -ENOENT;
    *name = k->names + s->name;
    *offset = addr - s->start;
    return 0;
}
