/*
 * lines.c - line-at-a-time reading for the text readers (see lines.h).
 */
#include "read/lines.h"
#include "base/chunk.h"
#include "base/diag.h"

#include <string.h>

int ember_read_lines(struct ember_input *in, const struct ember_read_opts *o, struct ember_diag *d,
                     ember_line_fn fn, void *ctx, struct ember_lines_at *at)
{
    struct ember_chunk c = {0};
    int err = 0;
    *at = (struct ember_lines_at){0};
    while (!err) {
        int got = ember_input_read_chunk(in, &c, EMBER_CUT_LINE, d);
        if (got <= 0) {
            err = got;
            break;
        }
        uint64_t line = c.first_line;
        for (const char *s = c.data, *end = c.data + c.len; s < end && !err; line++) {
            const char *nl = memchr(s, '\n', (size_t)(end - s));
            size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
            at->line = line;
            at->unterminated = !nl;
            err = fn(ctx, s, n > 0 && s[n - 1] == '\r' ? n - 1 : n, line);
            s += n + 1;
        }
        if (!err && o->progress)
            o->progress(o->progress_ctx, in);
    }
    ember_chunk_release(&c);
    return err;
}
