/*
 * nameattr.c - flamegraph.pl's --nameattr file: per function, SVG
 * attributes for its frames. Each line is "name<TAB>key=value<TAB>...";
 * keys title, class, id, href, target, g_extra and a_extra are used; a later
 * line for the same name replaces an earlier one.
 */
#include "write/flame/flame_internal.h"
#include "base/chunk.h"
#include "base/diag.h"
#include "base/strmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct ember_nameattr {
    struct ember_strmap map;
};

const struct ember_attrs *ember_nameattr_get(const struct ember_nameattr *na, const char *name,
                                             size_t len)
{
    return ember_strmap_get(&na->map, name, len);
}

void ember_nameattr_free(struct ember_nameattr *na)
{
    if (!na)
        return;
    ember_strmap_release(&na->map);
    free(na);
}

static int parse_line(struct ember_nameattr *na, const char *s, size_t n, const char *file,
                      uint64_t line, struct ember_diag *d)
{
    struct ember_arena *a = &na->map.arena;
    const char *tab = memchr(s, '\t', n);
    if (!tab)
        return ember_diag_set(d, -EINVAL, file, line,
                              "expected \"function<TAB>name=value<TAB>...\", found no TAB");
    struct ember_attrs *at = ember_arena_alloc(a, sizeof(*at));
    if (!at)
        return -ENOMEM;
    memset(at, 0, sizeof(*at));
    const char *p = tab + 1, *end = s + n;
    while (p <= end) {
        const char *next = memchr(p, '\t', (size_t)(end - p));
        const char *fe = next ? next : end;
        const char *eq = memchr(p, '=', (size_t)(fe - p));
        if (!eq && fe > p)
            return ember_diag_set(d, -EINVAL, file, line,
                                  "attribute without '=' (expected name=value)");
        if (eq) {
            size_t kl = (size_t)(eq - p);
            char *v = ember_arena_strndup(a, eq + 1, (size_t)(fe - eq - 1));
            if (!v)
                return -ENOMEM;
#define KEY(k, field)                                                                              \
    if (kl == strlen(k) && memcmp(p, k, kl) == 0)                                                  \
        at->field = v;
            KEY("title", title)
            KEY("class", klass)
            KEY("id", id)
            KEY("href", href)
            KEY("target", target)
            KEY("g_extra", g_extra)
            KEY("a_extra", a_extra)
#undef KEY
        }
        if (!next)
            break;
        p = next + 1;
    }
    return ember_strmap_put(&na->map, s, (size_t)(tab - s), at);
}

int ember_nameattr_load(struct ember_nameattr **out, const char *path, struct ember_diag *d)
{
    struct ember_nameattr *na = calloc(1, sizeof(*na));
    if (!na || ember_strmap_init(&na->map) < 0) {
        free(na);
        return -ENOMEM;
    }
    struct ember_input *in = NULL;
    struct ember_chunk c = {0};
    int err = ember_input_open(&in, path, d);
    while (!err) {
        int r = ember_input_read_chunk(in, &c, EMBER_CUT_LINE, d);
        if (r <= 0) {
            err = r;
            break;
        }
        uint64_t line = c.first_line;
        for (const char *s = c.data, *end = c.data + c.len; s < end && !err; line++) {
            const char *nl = memchr(s, '\n', (size_t)(end - s));
            size_t n = (size_t)((nl ? nl : end) - s);
            if (n > 0 && s[n - 1] == '\r')
                n--;
            if (n > 0)
                err = parse_line(na, s, n, path, line, d);
            s = nl ? nl + 1 : end;
        }
    }
    ember_chunk_release(&c);
    ember_input_close(in);
    if (err) {
        ember_nameattr_free(na);
        return err;
    }
    *out = na;
    return 0;
}
