/*
 * reverse.c - every stack read backwards: "a;b;c" becomes "c;b;a".
 */
#include "ember/transform.h"
#include "model/profile_impl.h"
#include "util/vec.h"

#include <errno.h>
#include <stdlib.h>

/* The node of src's stack ending at n, reversed, in dst (memoized). */
static int reversed_node(const struct ember_profile *src, struct ember_profile *dst, uint32_t n,
                         uint32_t *map, uint32_t *out)
{
    if (map[n]) {
        *out = map[n];
        return 0;
    }
    uint32_t node = EMBER_ROOT;
    for (uint32_t k = n; k != EMBER_ROOT; k = src->nodes[k].parent) {
        uint32_t frame;
        uint32_t f = src->nodes[k].frame;
        int err = ember_frames_intern(&dst->frames, src->frames.str[f], src->frames.len[f], &frame);
        if (!err)
            err = ember_profile_child_fast(dst, node, frame, &node);
        if (err)
            return err;
    }
    *out = map[n] = node;
    return 0;
}

int ember_profile_reverse(const struct ember_profile *src, struct ember_profile **out)
{
    struct ember_profile *dst = ember_profile_new();
    uint32_t *map = calloc(src->nnodes ? src->nnodes : 1, sizeof(*map));
    int err = dst && map ? ember_profile_set_metrics(dst, src->nmetrics) : -ENOMEM;
    if (!err)
        dst->decimals = src->decimals;
    for (uint32_t n = 1; n < src->nnodes && !err; n++) {
        bool any = false;
        for (unsigned m = 0; m < src->nmetrics; m++)
            any |= src->self[m][n] != 0;
        uint32_t r;
        if (!any)
            continue;
        err = reversed_node(src, dst, n, map, &r);
        for (unsigned m = 0; m < src->nmetrics && !err; m++)
            dst->self[m][r] += src->self[m][n];
    }
    /* root weight (stacks with no frames) stays at the root */
    for (unsigned m = 0; m < src->nmetrics && !err; m++)
        dst->self[m][EMBER_ROOT] = src->self[m][EMBER_ROOT];
    if (!err && src->keep_seq) {
        dst->keep_seq = true;
        for (size_t i = 0; i < src->seq_len && !err; i++) {
            uint32_t r = EMBER_ROOT;
            if (src->seq_node[i] != EMBER_ROOT)
                err = reversed_node(src, dst, src->seq_node[i], map, &r);
            for (unsigned m = 0; m < src->nmetrics && !err; m++)
                if (src->seq_w[m][i])
                    err = ember_profile_seq_append(dst, r, m, src->seq_w[m][i]);
        }
    }
    free(map);
    if (err) {
        ember_profile_free(dst);
        return err;
    }
    *out = dst;
    return 0;
}
