/*
 * names.c - a profile as its names alone: what views that show function
 * names (folded stacks, flame graphs, reports) draw.
 *
 * Frames that differ only in where they come from (two lines of one
 * function, two addresses) are one frame in these views, and their stacks
 * one stack: a pprof profile read with its locations draws as pprof's own
 * flame graph does. Profiles whose frames are names already are not copied.
 */
#include "ember/transform.h"
#include "map.h"

static int names_only(void *ctx, struct ember_profile *dst, const struct ember_profile *src,
                      const uint32_t *in, size_t n, struct stack_out *out)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++) {
        int err = ember_stack_out_name(out, dst, src->frames.str[in[i]], src->frames.len[in[i]]);
        if (err)
            return err;
    }
    return 0;
}

int ember_profile_names(const struct ember_profile *p, struct ember_profile **out)
{
    *out = NULL;
    return ember_profile_detailed(p) ? ember_profile_map(p, names_only, NULL, out) : 0;
}
