/*
 * folded.c - a profile as folded stacks, "frame;frame;frame COUNT", one line
 * per distinct stack in bytewise order (ember_profile_walk's order), the
 * selected value's weight, or before and after for a differential profile.
 * Stacks with no weight in the value written are left out, as
 * stackcollapse's output has none. Frames are names (ember_profile_names):
 * a profile that keeps addresses is written as the functions they are in.
 * The reader of these lines is lib/read/folded.c; what one writes the
 * other reads back byte-identical.
 */
#include "ember/write.h"
#include "base/writer.h"

#include <errno.h>
#include <stdlib.h>

struct fold_out {
    struct ember_writer w;
    const struct ember_profile *p;
    bool diff;         /* before and after are written ... */
    unsigned selected; /* ... else this value */
    unsigned decimals;
};

static int write_line(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct fold_out *o = ctx;
    const struct ember_profile *p = o->p;
    if (!o->diff && self[o->selected] == 0)
        return 0; /* a stack with weight in other values only */
    for (size_t i = 0; i < depth; i++) {
        size_t len;
        const char *name = ember_profile_frame_name(p, ember_profile_node_frame(p, path[i]), &len);
        if (i)
            ember_writer_put(&o->w, ";", 1);
        ember_writer_put(&o->w, name, len);
    }
    /* the selected value, or before and after */
    unsigned first = o->diff ? 0 : o->selected, last = o->diff ? 1 : o->selected;
    for (unsigned v = first; v <= last; v++) {
        char num[40];
        num[0] = ' ';
        ember_writer_put(&o->w, num, 1 + ember_weight_format(num + 1, self[v], o->decimals));
    }
    ember_writer_put(&o->w, "\n", 1);
    return o->w.err;
}

int ember_write_folded(const struct ember_profile *p, const struct ember_sink *out)
{
    struct ember_profile *named; /* folded stacks are names */
    int err = ember_profile_names(p, &named);
    struct fold_out *o = err ? NULL : malloc(sizeof(*o));
    if (!o) {
        ember_profile_free(named);
        return err ? err : -ENOMEM;
    }
    ember_writer_init(&o->w, out);
    o->p = named ? named : p;
    o->diff = ember_profile_is_differential(o->p);
    o->selected = ember_profile_selected(o->p);
    o->decimals = ember_profile_decimals(o->p);
    err = ember_profile_walk(o->p, write_line, o);
    int ferr = ember_writer_flush(&o->w);
    free(o);
    ember_profile_free(named);
    return err ? err : ferr;
}
