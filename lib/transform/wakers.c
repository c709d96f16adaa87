/*
 * wakers.c - chain graphs (flamegraph.pl --colors=chain): in a stack
 * "blocked;--;waker;waker", the frames after the first "--" separator are
 * the waker's and get the "_[w]" annotation that colours them.
 * flamegraph.pl also appends a "--" frame to every stack that has none; that
 * is a bug, which ember does not reproduce.
 */
#include "ember/transform.h"

#include <string.h>

static int annotate_stack(void *ctx, struct ember_profile *dst, const struct ember_profile *src,
                          const uint32_t *in, size_t n, struct ember_stack_out *out)
{
    (void)ctx;
    bool waker = false;
    char buf[4096];
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        struct ember_frame fr;
        ember_profile_frame(src, in[i], &fr);
        bool sep = fr.name_len == 2 && memcmp(fr.name, "--", 2) == 0;
        /* the name as views spell it ("f_[k]"), then the waker's mark */
        size_t len = ember_frame_spell(&fr, buf, sizeof(buf));
        if (waker && !sep && len + 4 < sizeof(buf)) {
            memcpy(buf + len, "_[w]", 4);
            err = ember_stack_out_name(out, dst, buf, len + 4);
        } else {
            err = ember_stack_out_copy(out, dst, src, in[i]);
        }
        waker |= sep;
    }
    return err;
}

int ember_profile_annotate_wakers(const struct ember_profile *src, struct ember_profile **out)
{
    return ember_profile_map(src, annotate_stack, NULL, out);
}
