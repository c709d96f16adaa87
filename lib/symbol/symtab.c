/*
 * symtab.c - the sorted symbol table (see symtab.h).
 *
 * Invariants once finished: the address index holds one symbol per start
 * address, the best ranked (they are added to it best first); by_name[]
 * orders the entries by name bytes, then by the order added.
 */
#include "symbol/symtab.h"
#include "symbol/ranges.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    struct ember_symtab_sym sym;
    uint32_t len;   /* strlen(sym.name) */
    uint32_t order; /* when it was added: ties go to the first */
    int rank;
    bool by_address;
};

struct ember_symtab {
    struct entry *e;
    size_t n, cap;
    uint32_t *by_name;           /* indexes into e */
    struct ember_ranges by_addr; /* values: indexes into e */
};

int ember_symtab_new(struct ember_symtab **t)
{
    *t = calloc(1, sizeof(**t));
    if (!*t)
        return -ENOMEM;
    ember_ranges_init(&(*t)->by_addr);
    return 0;
}

void ember_symtab_free(struct ember_symtab *t)
{
    if (!t)
        return;
    free(t->e);
    free(t->by_name);
    ember_ranges_release(&t->by_addr);
    free(t);
}

int ember_symtab_add(struct ember_symtab *t, const char *name, uint64_t addr, uint64_t size,
                     int rank, bool by_address)
{
    if (t->n >= UINT32_MAX || EMBER_VEC_RESERVE(t->e, t->cap, t->n + 1) < 0)
        return -ENOMEM;
    size_t len = strlen(name);
    t->e[t->n] = (struct entry){
        .sym = {name, addr, size},
        .len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len,
        .order = (uint32_t)t->n,
        .rank = rank,
        .by_address = by_address && size > 0 && addr + size > addr,
    };
    t->n++;
    return 0;
}

static int compare_names(const struct entry *a, const char *name, size_t len)
{
    int c = memcmp(a->sym.name, name, a->len < len ? a->len : len);
    return c ? c : (a->len > len) - (a->len < len);
}

static int by_name_cmp(const void *va, const void *vb, void *ctx)
{
    const struct entry *e = ctx;
    const struct entry *a = &e[*(const uint32_t *)va], *b = &e[*(const uint32_t *)vb];
    int c = compare_names(a, b->sym.name, b->len);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

/* Address order; at one address the entry that answers comes first. */
static int by_addr_cmp(const void *va, const void *vb, void *ctx)
{
    const struct entry *e = ctx;
    const struct entry *a = &e[*(const uint32_t *)va], *b = &e[*(const uint32_t *)vb];
    if (a->sym.addr != b->sym.addr)
        return a->sym.addr < b->sym.addr ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank > b->rank ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

static int sort_names(struct ember_symtab *t)
{
    t->by_name = malloc((t->n ? t->n : 1) * sizeof(*t->by_name));
    if (!t->by_name)
        return -ENOMEM;
    for (size_t i = 0; i < t->n; i++)
        t->by_name[i] = (uint32_t)i;
    if (t->n)
        qsort_r(t->by_name, t->n, sizeof(*t->by_name), by_name_cmp, t->e);
    return 0;
}

/* Into the address index, best ranked first at each address. */
static int index_addresses(struct ember_symtab *t)
{
    uint32_t *order = malloc((t->n ? t->n : 1) * sizeof(*order));
    if (!order)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->e[i].by_address)
            order[k++] = (uint32_t)i;
    if (k)
        qsort_r(order, k, sizeof(*order), by_addr_cmp, t->e);
    int err = 0;
    for (size_t i = 0; i < k && !err; i++) {
        const struct ember_symtab_sym *s = &t->e[order[i]].sym;
        err = ember_ranges_add(&t->by_addr, s->addr, s->addr + s->size, order[i]);
    }
    free(order);
    return err ? err : ember_ranges_finish(&t->by_addr);
}

int ember_symtab_finish(struct ember_symtab *t)
{
    int err = sort_names(t);
    return err ? err : index_addresses(t);
}

int ember_symtab_lookup(const struct ember_symtab *t, uint64_t addr,
                        const struct ember_symtab_sym **sym, uint64_t *offset)
{
    uint64_t i, start;
    if (ember_ranges_find(&t->by_addr, addr, &i, &start) < 0)
        return -ENOENT;
    *sym = &t->e[i].sym;
    *offset = addr - start;
    return 0;
}

int ember_symtab_find(const struct ember_symtab *t, const char *name, size_t len, uint64_t *addr)
{
    size_t lo = 0, hi = t->n; /* the first name not below name */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (compare_names(&t->e[t->by_name[mid]], name, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == t->n || compare_names(&t->e[t->by_name[lo]], name, len) != 0)
        return -ENOENT;
    *addr = t->e[t->by_name[lo]].sym.addr;
    return 0;
}
