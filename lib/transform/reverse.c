/*
 * reverse.c - stacks read from the leaf: "a;b;c" becomes "c;b;a"
 * (flamegraph.pl --reverse).
 */
#include "ember/transform.h"

static int reverse_stack(void *ctx, struct ember_profile *dst, const struct ember_profile *src,
                         const uint32_t *in, size_t n, struct ember_stack_out *out)
{
    (void)ctx;
    int err = 0;
    for (size_t i = n; i-- > 0 && !err;)
        err = ember_stack_out_copy(out, dst, src, in[i]);
    return err;
}

int ember_profile_reverse(const struct ember_profile *src, struct ember_profile **out)
{
    return ember_profile_map(src, reverse_stack, NULL, out);
}
