/*
 * modules.c - the profile's modules (pprof's mappings: a binary mapped at
 * an address range, its path and build-id, what is known of its code),
 * interned by every field, and which of them is the main program.
 *
 * Invariants: a module's strings live in the frames' arena (they die with
 * the profile); ids are stable and dense; the main module, when set, is a
 * valid id (views that drop the modules drop it too).
 */
#include "model/profile_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

int ember_profile_module(struct ember_profile *p, const struct ember_module *m, uint32_t *id)
{
    for (uint32_t i = 0; i < p->nmodules; i++) {
        const struct ember_module *k = &p->modules[i];
        if (same_str(k->path, m->path) && same_str(k->build_id, m->build_id) &&
            k->start == m->start && k->limit == m->limit && k->offset == m->offset &&
            k->flags == m->flags) {
            *id = i;
            return 0;
        }
    }
    if (p->nmodules >= EMBER_NO_MODULE - 1)
        return -ERANGE;
    if (EMBER_VEC_RESERVE(p->modules, p->mcap, (size_t)p->nmodules + 1) < 0)
        return -ENOMEM;
    struct ember_module copy = *m;
    copy.path = m->path ? ember_arena_strndup(&p->frames.names, m->path, strlen(m->path)) : NULL;
    copy.build_id = m->build_id
                        ? ember_arena_strndup(&p->frames.names, m->build_id, strlen(m->build_id))
                        : NULL;
    if ((m->path && !copy.path) || (m->build_id && !copy.build_id))
        return -ENOMEM;
    p->modules[p->nmodules] = copy;
    *id = p->nmodules++;
    return 0;
}

uint32_t ember_profile_module_count(const struct ember_profile *p)
{
    return p->nmodules;
}

const struct ember_module *ember_profile_module_info(const struct ember_profile *p, uint32_t id)
{
    return id < p->nmodules ? &p->modules[id] : NULL;
}

int ember_profile_modules_like(struct ember_profile *dst, const struct ember_profile *src,
                               uint32_t **map)
{
    *map = NULL;
    if (!src->nmodules)
        return 0;
    if (!(*map = malloc(src->nmodules * sizeof(**map))))
        return -ENOMEM;
    for (uint32_t i = 0; i < src->nmodules; i++) {
        int err = ember_profile_module(dst, &src->modules[i], &(*map)[i]);
        if (err) {
            free(*map);
            *map = NULL;
            return err;
        }
    }
    return 0;
}

void ember_profile_set_main_module(struct ember_profile *p, uint32_t id)
{
    p->main_module = id < p->nmodules ? id + 1 : 0;
}

uint32_t ember_profile_main_module(const struct ember_profile *p)
{
    return p->main_module && p->main_module <= p->nmodules ? p->main_module - 1 : EMBER_NO_MODULE;
}
