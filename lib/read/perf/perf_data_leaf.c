/*
 * perf_data_leaf.c - better than perf in fp mode (issue 10, item 2): the
 * caller that the kernel's frame-pointer walk skips when a sample's user pc
 * is in code whose frame is not on the frame pointer (a leaf GCC gave no
 * frame, a prologue), put back from the top of the user stack that
 * `ember record` copies with each fp sample (symbol/leaf.h finds it; this
 * is the reader's glue: which file a map is, a cache by the reader's dso).
 *
 * Only fp samples that carry a stack copy and no registers (what ember
 * record writes) are looked at: perf's own -g recordings are read as perf
 * script reads them. One module and one CFI per mapped file, opened on
 * first use; a file that cannot be read gives no caller, never an error.
 */
#include "read/perf/perf_data.h"
#include "symbol/leaf.h"
#include "symbol/symbolizer.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct leaf_dso {
    int state; /* 0 untried, 1 usable, -1 not */
    struct ember_leaf_file file;
};

struct pd_leaf {
    struct ember_symbolizer *sym;
    struct leaf_dso *dsos;
    size_t ndsos;
};

int pd_leaf_new(struct pd_leaf **out)
{
    struct pd_leaf *l = calloc(1, sizeof(*l));
    int err = l ? ember_symbolizer_new(&l->sym) : -ENOMEM;
    if (err) {
        free(l);
        l = NULL;
    }
    *out = l;
    return err;
}

void pd_leaf_free(struct pd_leaf *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->ndsos; i++)
        ember_leaf_file_close(&l->dsos[i].file);
    free(l->dsos);
    ember_symbolizer_free(l->sym);
    free(l);
}

static int dso_of(struct pd_leaf *l, const struct pd_tasks *t, uint32_t id, struct leaf_dso **out)
{
    if (id >= l->ndsos) {
        size_t want = id + 1, cap = l->ndsos;
        if (EMBER_VEC_RESERVE(l->dsos, cap, want) < 0)
            return -ENOMEM;
        memset(l->dsos + l->ndsos, 0, (want - l->ndsos) * sizeof(*l->dsos));
        l->ndsos = want;
    }
    struct leaf_dso *d = *out = &l->dsos[id];
    if (d->state)
        return 0;
    const struct pd_dso *dso = pd_tasks_dso(t, id);
    d->state = -1;
    if (dso->kind != PD_DSO_FILE)
        return 0;
    int err = ember_leaf_file_open(l->sym, dso->name, dso->name_len, &d->file);
    if (err == -ENOMEM)
        return err;
    d->state = err ? -1 : 1;
    return 0;
}

int pd_leaf_caller(struct pd_leaf *l, const struct pd_tasks *t, const struct pd_map *m, uint64_t ip,
                   const uint8_t *stack, size_t len, uint64_t *ret)
{
    struct leaf_dso *d;
    int err = dso_of(l, t, m->dso, &d);
    if (err || d->state < 0)
        return err;
    return ember_leaf_file_caller(&d->file, m->start, m->pgoff, ip, stack, len, ret);
}
