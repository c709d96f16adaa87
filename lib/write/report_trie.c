/*
 * report_trie.c - the stack trie as the text reports see it (see
 * report_trie.h).
 *
 * Everything is computed in linear passes: a node's inclusive weight by one
 * reverse scan (children have larger indices than their parents), the
 * children lists by counting, and, by one depth-first walk, whether a
 * node's function already occurs above it on its path.
 */
#include "write/report_trie.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void ember_report_trie_release(struct ember_report_trie *t)
{
    free(t->incl);
    free(t->first);
    free(t->kids);
    free(t->outer);
    free(t->incl2);
}

static int mark_outer(struct ember_report_trie *t)
{
    const struct ember_profile *p = t->p;
    uint32_t *depth_of =
        calloc(ember_profile_frame_count(p) ? ember_profile_frame_count(p) : 1, sizeof(*depth_of));
    uint32_t *stack = malloc(ember_profile_node_count(p) * sizeof(*stack)),
             *next = malloc(ember_profile_node_count(p) * sizeof(*next));
    int err = depth_of && stack && next ? 0 : -ENOMEM;
    size_t sp = 0;
    if (!err) {
        stack[sp] = EMBER_ROOT;
        next[sp++] = t->first[EMBER_ROOT];
    }
    while (!err && sp > 0) {
        uint32_t n = stack[sp - 1];
        if (next[sp - 1] == t->first[n + 1]) { /* done with n */
            if (n != EMBER_ROOT)
                depth_of[ember_profile_node_frame(p, n)]--;
            sp--;
            continue;
        }
        uint32_t c = t->kids[next[sp - 1]++];
        uint32_t f = ember_profile_node_frame(p, c);
        t->outer[c] = depth_of[f]++ == 0;
        stack[sp] = c;
        next[sp++] = t->first[c];
    }
    free(depth_of);
    free(stack);
    free(next);
    return err;
}

int ember_report_trie_build(struct ember_report_trie *t, const struct ember_profile *p,
                            unsigned metric)
{
    memset(t, 0, sizeof(*t));
    t->p = p;
    t->m = ember_profile_is_differential(p) ? (metric < 2 ? metric : 0) : ember_profile_selected(p);
    uint32_t n = ember_profile_node_count(p);
    t->incl = malloc(n * sizeof(*t->incl));
    t->first = calloc((size_t)n + 1, sizeof(*t->first));
    t->kids = malloc(n * sizeof(*t->kids));
    t->outer = calloc(n, sizeof(*t->outer));
    if (!t->incl || !t->first || !t->kids || !t->outer)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        t->incl[i] = ember_profile_self(p, i, t->m);
    for (uint32_t i = n; i-- > 1;)
        t->incl[ember_profile_node_parent(p, i)] += t->incl[i];
    t->total = t->incl[EMBER_ROOT];
    for (uint32_t i = 1; i < n; i++)
        t->first[ember_profile_node_parent(p, i) + 1]++;
    for (uint32_t i = 0; i < n; i++)
        t->first[i + 1] += t->first[i];
    uint32_t *fill = malloc((size_t)n * sizeof(*fill));
    if (!fill)
        return -ENOMEM;
    memcpy(fill, t->first, n * sizeof(*fill));
    for (uint32_t i = 1; i < n; i++)
        t->kids[fill[ember_profile_node_parent(p, i)]++] = i;
    free(fill);
    return mark_outer(t);
}

int ember_report_by_self(const void *a, const void *b)
{
    const struct frame_stat *x = a, *y = b;
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return x->frame < y->frame ? -1 : x->frame > y->frame;
}

int ember_report_by_total(const void *a, const void *b)
{
    const struct frame_stat *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return ember_report_by_self(a, b);
}

int ember_report_trie_second(struct ember_report_trie *t, unsigned m2)
{
    const struct ember_profile *p = t->p;
    uint32_t n = ember_profile_node_count(p);
    if (!(t->incl2 = malloc(n * sizeof(*t->incl2))))
        return -ENOMEM;
    t->m2 = m2;
    for (uint32_t i = 0; i < n; i++)
        t->incl2[i] = ember_profile_self(p, i, m2);
    for (uint32_t i = n; i-- > 1;)
        t->incl2[ember_profile_node_parent(p, i)] += t->incl2[i];
    t->total2 = t->incl2[EMBER_ROOT];
    return 0;
}
