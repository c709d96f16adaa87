/*
 * csv.c - one row per stack: "stack,weight" (or "stack,before,after", or a
 * column per value: "stack,alloc_objects,alloc_space,..."), after a header
 * row, in folded order.
 *
 * Quoting follows RFC 4180: a field holding the separator, a quote, CR or
 * LF is quoted, with quotes doubled. The same rule with a tab separator is
 * what Python's csv module and pandas read as TSV. Lines end in CRLF in
 * CSV (the RFC), LF in TSV (for cut and awk). Bytes are written as they are
 * (CSV has no encoding of its own).
 */
#include "write/write_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct csv {
    struct ember_writer w;
    const struct ember_profile *p;
    char sep;
    const char *eol;
};

static bool needs_quotes(const char *s, size_t n, char sep)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == sep || s[i] == '"' || s[i] == '\n' || s[i] == '\r')
            return true;
    return false;
}

/* s with its quotes doubled. */
static void put_quoted(struct ember_writer *w, const char *s, size_t n)
{
    const char *q;
    while ((q = memchr(s, '"', n))) {
        ember_writer_put(w, s, (size_t)(q - s) + 1);
        ember_writer_put(w, "\"", 1);
        n -= (size_t)(q - s) + 1;
        s = q + 1;
    }
    ember_writer_put(w, s, n);
}

/* A header cell, quoted if it must be. */
static void put_column(struct csv *c, const char *name)
{
    size_t n = strlen(name);
    bool quote = needs_quotes(name, n, c->sep);
    if (quote)
        ember_writer_put(&c->w, "\"", 1);
    if (quote)
        put_quoted(&c->w, name, n);
    else
        ember_writer_put(&c->w, name, n);
    if (quote)
        ember_writer_put(&c->w, "\"", 1);
}

static int put_row(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct csv *c = ctx;
    const struct ember_profile *p = c->p;
    bool quote = false;
    for (size_t i = 0; i < depth && !quote; i++) {
        size_t len;
        const char *name = ember_profile_frame_name(p, ember_profile_node_frame(p, path[i]), &len);
        quote = needs_quotes(name, len, c->sep);
    }
    if (quote)
        ember_writer_put(&c->w, "\"", 1);
    for (size_t i = 0; i < depth; i++) {
        size_t len;
        const char *name = ember_profile_frame_name(p, ember_profile_node_frame(p, path[i]), &len);
        if (i)
            ember_writer_put(&c->w, ";", 1);
        if (quote)
            put_quoted(&c->w, name, len);
        else
            ember_writer_put(&c->w, name, len);
    }
    if (quote)
        ember_writer_put(&c->w, "\"", 1);
    for (unsigned v = 0; v < ember_profile_values(p); v++) {
        ember_writer_put(&c->w, &c->sep, 1);
        ember_put_weight(&c->w, self[v], ember_profile_decimals(p));
    }
    ember_writer_puts(&c->w, c->eol);
    return c->w.err;
}

static int write_csv(const struct ember_profile *p, const struct ember_convert_opts *o,
                     const struct ember_sink *out, struct ember_diag *d)
{
    (void)d;
    struct csv *c = malloc(sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->p = p;
    c->sep = ember_convert_opts_fill(o).separator;
    c->eol = c->sep == ',' ? "\r\n" : "\n";
    ember_writer_init(&c->w, out);
    /* one column per value: "weight" when there is one, else their types
     * ("before" and "after" for a difference) */
    ember_writer_puts(&c->w, "stack");
    for (unsigned v = 0; v < ember_profile_values(p); v++) {
        ember_writer_put(&c->w, &c->sep, 1);
        put_column(c, ember_profile_values(p) == 1 ? "weight" : ember_profile_value_type(p, v));
    }
    ember_writer_puts(&c->w, c->eol);
    int err = ember_profile_walk(p, put_row, c);
    int ferr = ember_writer_flush(&c->w);
    free(c);
    return err ? err : ferr;
}

int ember_write_csv(const struct ember_profile *p, const struct ember_convert_opts *o,
                    const struct ember_sink *out, struct ember_diag *d)
{
    struct ember_profile *named; /* a row per stack of names */
    int err = ember_profile_names(p, &named);
    if (!err)
        err = write_csv(named ? named : p, o, out, d);
    ember_profile_free(named);
    return err;
}
