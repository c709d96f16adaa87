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
 * symbols together; names live in one buffer: the file's text as read,
 * each name NUL-terminated where it lies (no copy, no allocation a line:
 * parsing had cost as much CPU as the kernel's writing of the file).
 */
#include "symbol/kallsyms.h"
#include "base/vec.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ksym {
    uint64_t start, end;
    uint32_t name;   /* offset in names */
    uint32_t module; /* offset in names of "[module]", or UINT32_MAX */
    uint32_t order;  /* line in kallsyms, for ties */
};

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

/* The module of the symbol at name, "[mod]" after a tab to the line's
 * end, NUL-terminated in place: consecutive symbols of one module share
 * its first offset. */
static uint32_t module_of(struct ember_kallsyms *k, char *mod, char *eol, uint32_t *last_module)
{
    *eol = '\0';
    size_t ml = (size_t)(eol - mod);
    const char *last = *last_module == UINT32_MAX ? NULL : k->names + *last_module;
    if (!last || strlen(last) != ml || memcmp(last, mod, ml) != 0)
        *last_module = (uint32_t)(mod - k->names);
    return *last_module;
}

/* One line, line[0, eol): "ffffffff81000000 T _text" or "... t name\t[module]".
 * Its name (and module) are NUL-terminated where they lie. */
static int parse_line(struct ember_kallsyms *k, char *line, char *eol, uint32_t order,
                      uint32_t *last_module)
{
    uint64_t addr;
    const char *end = address(line, eol, &addr);
    if (!end || eol - end < 3 || end[0] != ' ' || end[2] != ' ')
        return 0;
    char type = end[1];
    char *name = line + (end - line) + 3;
    char *tab = memchr(name, '\t', (size_t)(eol - name));
    size_t n = (size_t)((tab ? tab : eol) - name);
    if (!kept_type(type) || n == 0 || name[0] == '$')
        return 0;
    if (n == 5 && memcmp(name, "_text", 5) == 0)
        k->text_now = addr, k->have_text = true;
    uint32_t module = tab ? module_of(k, tab + 1, eol, last_module) : UINT32_MAX;
    name[n] = '\0';
    if (EMBER_VEC_RESERVE(k->syms, k->cap, k->n + 1) < 0)
        return -ENOMEM;
    k->syms[k->n++] = (struct ksym){addr, addr, (uint32_t)(name - k->names), module, order};
    return 0;
}

/* The whole file in k->names (NUL-terminated), read in large pieces: a
 * /proc file says no size, and the kernel writes kallsyms a page at a
 * time however much is asked. -errno. */
static int read_all(struct ember_kallsyms *k, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int err = 0;
    for (;;) {
        if (k->ncap - k->nlen < (1 << 16) + 1 &&
            EMBER_VEC_RESERVE(k->names, k->ncap, k->nlen + (1 << 20)) < 0) {
            err = -ENOMEM;
            break;
        }
        ssize_t got = read(fd, k->names + k->nlen, k->ncap - k->nlen - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            err = got < 0 ? -errno : 0;
            break;
        }
        k->nlen += (size_t)got;
    }
    close(fd);
    if (!err && k->nlen >= UINT32_MAX)
        err = -EFBIG; /* names are 32-bit offsets */
    if (!err)
        k->names[k->nlen] = '\0';
    return err;
}

/* Every line of the text read. */
static int parse_all(struct ember_kallsyms *k)
{
    char *p = k->names, *end = k->names + k->nlen;
    uint32_t order = 0, last_module = UINT32_MAX;
    int err = 0;
    while (p < end && !err) {
        char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        err = parse_line(k, p, eol, order++, &last_module);
        p = eol + 1;
    }
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

int ember_kallsyms_load(struct ember_kallsyms *k, const struct ember_kallsyms_source *src)
{
    const char *path = src->kallsyms;
    k->loaded = true;
    if (src->build_id_len) {
        uint8_t now[20];
        size_t n = running_build_id(src->notes, now);
        if ((n != src->build_id_len || memcmp(now, src->build_id, n) != 0) && !src->cached) {
            snprintf(k->why, sizeof(k->why),
                     "the running kernel is not the recorded one (its build-id in %s differs) "
                     "and perf's build-id cache has no copy of its kallsyms",
                     src->notes);
            return 0;
        }
        if (n != src->build_id_len || memcmp(now, src->build_id, n) != 0)
            path = src->cached; /* perf record's copy, of the recorded kernel */
    }
    int err = read_all(k, path);
    if (err == -ENOMEM)
        return err;
    if (err) {
        snprintf(k->why, sizeof(k->why), "cannot read %s", path);
        return 0;
    }
    if ((err = parse_all(k)) < 0)
        return err;
    if (!k->have_text || k->text_now == 0) {
        snprintf(k->why, sizeof(k->why),
                 "%s shows no addresses (kernel.kptr_restrict hides them; root sees them)", path);
        k->n = 0;
        return 0;
    }
    if ((err = fix_ends(k)) < 0)
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
