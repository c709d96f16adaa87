/*
 * palette.c - flamegraph.pl's consistent palette (--cp): "name->rgb(...)"
 * lines in palette.map, read before drawing and written back after, so a
 * function keeps its colour across graphs.
 */
#include "write/flame/flame_internal.h"
#include "base/chunk.h"
#include "base/diag.h"
#include "base/strmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ember_palette {
    struct ember_strmap map;
};

struct ember_palette *ember_palette_new(void)
{
    struct ember_palette *pal = calloc(1, sizeof(*pal));
    if (pal && ember_strmap_init(&pal->map) < 0) {
        free(pal);
        return NULL;
    }
    return pal;
}

void ember_palette_free(struct ember_palette *pal)
{
    if (!pal)
        return;
    ember_strmap_release(&pal->map);
    free(pal);
}

const char *ember_palette_get(const struct ember_palette *pal, const char *name, size_t len)
{
    return ember_strmap_get(&pal->map, name, len);
}

int ember_palette_put(struct ember_palette *pal, const char *name, size_t len, const char *color)
{
    char *c = ember_arena_strndup(&pal->map.arena, color, strlen(color));
    return c ? ember_strmap_put(&pal->map, name, len, c) : -ENOMEM;
}

int ember_palette_load(struct ember_palette *pal, const char *path, struct ember_diag *d)
{
    struct ember_input *in;
    struct ember_diag tmp;
    if (access(path, F_OK) != 0)
        return 0;
    int err = ember_input_open(&in, path, d ? d : &tmp);
    struct ember_chunk c = {0};
    while (!err) {
        int r = ember_input_read_chunk(in, &c, EMBER_CUT_LINE, d);
        if (r <= 0) {
            err = r;
            break;
        }
        for (const char *s = c.data, *end = c.data + c.len; s < end && !err;) {
            const char *nl = memchr(s, '\n', (size_t)(end - s));
            const char *next = nl ? nl + 1 : end;
            size_t n = (size_t)((nl ? nl : end) - s);
            const char *arrow = memmem(s, n, "->", 2);
            if (arrow) {
                /* Perl's split: the value ends at a further "->" */
                const char *v = arrow + 2;
                const char *vend = memmem(v, (size_t)(s + n - v), "->", 2);
                size_t vl = (size_t)((vend ? vend : s + n) - v);
                char *val = ember_arena_strndup(&pal->map.arena, v, vl);
                err = val ? ember_strmap_put(&pal->map, s, (size_t)(arrow - s), val) : -ENOMEM;
            }
            s = next;
        }
    }
    ember_chunk_release(&c);
    ember_input_close(in);
    return err;
}

int ember_palette_save(const struct ember_palette *pal, const struct ember_sink *out)
{
    struct strmap_slot *all = ember_strmap_sorted(&pal->map);
    struct ember_writer *w = malloc(sizeof(*w));
    if (!all || !w) {
        free(all);
        free(w);
        return -ENOMEM;
    }
    ember_writer_init(w, out);
    for (size_t i = 0; i < pal->map.count; i++) {
        ember_writer_put(w, all[i].key, all[i].len);
        ember_writer_printf(w, "->%s\n", (const char *)all[i].value);
    }
    int err = ember_writer_flush(w);
    free(w);
    free(all);
    return err;
}
