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
 * symbols together; names live in one buffer, into which the file is
 * read a piece at a time and parsed in place, each name moved down over
 * the lines already read (no copy of a line, no allocation per line:
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

/* s[0, n) kept at the names' end, NUL-terminated: its offset. The text
 * is parsed in place: what is kept moves down over lines already read,
 * never past the one being parsed (a line holds more than its name and
 * module and their NULs). */
static uint32_t keep(struct ember_kallsyms *k, const char *s, size_t n)
{
    uint32_t at = (uint32_t)k->nlen;
    memmove(k->names + at, s, n);
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
    if (EMBER_VEC_RESERVE(k->syms, k->cap, k->n + 1) < 0)
        return -ENOMEM;
    uint32_t at = keep(k, name, n);
    uint32_t module =
        tab ? module_of(k, tab + 1, (size_t)(eol - tab - 1), last_module) : UINT32_MAX;
    k->syms[k->n++] = (struct ksym){addr, addr, at, module, order};
    return 0;
}

/* The lines read so far: the names kept are names[0, nlen), the text not
 * parsed yet [at, end). */
struct text {
    size_t at, end;
    uint32_t order, last_module;
};

/* Parses the whole lines of the text (with eof, the last one too). */
static int parse_lines(struct ember_kallsyms *k, struct text *t, bool eof)
{
    while (t->at < t->end) {
        const char *line = k->names + t->at;
        const char *eol = memchr(line, '\n', t->end - t->at);
        if (!eol && !eof)
            break;
        if (!eol)
            eol = k->names + t->end;
        int err = parse_line(k, line, eol, t->order++, &t->last_module);
        if (err)
            return err;
        t->at = (size_t)(eol - k->names) + 1;
    }
    if (t->at > t->end)
        t->at = t->end;
    return 0;
}

/* The file read in pieces of 1 MiB and parsed as it comes (a /proc file
 * says no size, and the kernel writes kallsyms a page at a time however
 * much is asked): memory holds the names and one piece. -errno. */
static int read_text(struct ember_kallsyms *k, int fd)
{
    struct text t = {.last_module = UINT32_MAX};
    for (bool eof = false; !eof;) {
        if (t.end > t.at) /* the rest of a line: names may still be NULL */
            memmove(k->names + k->nlen, k->names + t.at, t.end - t.at);
        t.end = k->nlen + (t.end - t.at);
        t.at = k->nlen;
        if (EMBER_VEC_RESERVE(k->names, k->ncap, t.end + (1 << 20) + 1) < 0)
            return -ENOMEM;
        ssize_t got = read(fd, k->names + t.end, k->ncap - t.end - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -errno;
        eof = got == 0;
        t.end += (size_t)got;
        if (t.end >= UINT32_MAX)
            return -EFBIG; /* names are 32-bit offsets */
        int err = parse_lines(k, &t, eof);
        if (err)
            return err;
    }
    char *fit = realloc(k->names, k->nlen + 1); /* the last piece read goes */
    if (fit)
        k->names = fit, k->ncap = k->nlen + 1;
    return 0;
}

static int read_file(struct ember_kallsyms *k, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int err = read_text(k, fd);
    close(fd);
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
