/*
 * not_functions.c - the frames ember report's tables of functions leave
 * out (see not_functions.h). Roots are known by their kind in the profile
 * read, and reports show the names view, whose frames are names alone:
 * the names of p's process and thread frames are looked up there.
 */
#include "write/not_functions.h"

#include "base/strmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* p's process and thread frames, by the name the names view gives them. */
static int root_set(const struct ember_profile *p, struct ember_strmap *roots)
{
    char *buf = NULL;
    size_t cap = 0;
    int err = 0;
    for (uint32_t f = 0; f < ember_profile_frame_count(p) && !err; f++) {
        struct ember_frame rec;
        ember_profile_frame(p, f, &rec);
        if (rec.kind != EMBER_FRAME_PROCESS && rec.kind != EMBER_FRAME_THREAD)
            continue;
        size_t len = ember_frame_spell_folded(&rec, buf, cap);
        if (len >= cap) {
            char *b = realloc(buf, len + 1);
            if (!b) {
                err = -ENOMEM;
                break;
            }
            buf = b;
            cap = len + 1;
            ember_frame_spell_folded(&rec, buf, cap);
        }
        err = ember_strmap_put(roots, buf, len, roots);
    }
    free(buf);
    return err;
}

int ember_report_root_names(const struct ember_profile *p, const struct ember_profile *named,
                            bool **out)
{
    uint32_t n = ember_profile_frame_count(named);
    struct ember_strmap roots;
    *out = calloc(n ? n : 1, sizeof(**out));
    int err = *out ? ember_strmap_init(&roots) : -ENOMEM;
    if (err)
        return err;
    err = root_set(p, &roots);
    for (uint32_t f = 0; f < n && !err && roots.count; f++) {
        size_t len;
        const char *name = ember_profile_frame_name(named, f, &len);
        (*out)[f] = ember_strmap_get(&roots, name, len) != NULL;
    }
    ember_strmap_release(&roots);
    return err;
}

bool ember_report_unresolved(const char *n, size_t len)
{
    return len > 2 && n[0] == '[' && n[len - 1] == ']' && !memchr(n + 1, '[', len - 2) &&
           !memchr(n + 1, ']', len - 2) && !memchr(n, '<', len);
}

void ember_report_left_out(struct ember_writer *w, size_t roots, size_t unresolved)
{
    if (!roots && !unresolved)
        return;
    ember_writer_puts(w, "Not ranked, not functions:");
    if (roots)
        ember_writer_printf(w, " %zu process or thread root%s", roots, roots == 1 ? "" : "s");
    if (unresolved)
        ember_writer_printf(w,
                            "%s %zu name%s of unresolved addresses ([unknown], [module]: by total, "
                            "perf ranks each address apart, as --addrs does)",
                            roots ? "," : "", unresolved, unresolved == 1 ? "" : "s");
    ember_writer_puts(w, "\n");
}
