/*
 * report.c - the text reports of ember/write.h.
 --tree and
 * --callers/--callees (the top table is report_top.c's), computed on the
 * stack trie of report_trie.c.
 * How weights, totals and names are written is in report_output.c.
 */
#include "ember/write.h"
#include "base/writer.h"
#include "write/not_functions.h"
#include "write/report_output.h"
#include "write/report_trie.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* ---- tree --------------------------------------------------------------- */

struct tree_walk {
    const struct ember_report_trie *t;
    const struct ember_report_opts *o;
    struct ember_writer *w;
    uint32_t *node, *next; /* the path being walked, and the next child of each */
    char *text;            /* CSV: the path as "a;b;c" */
    size_t *text_len;      /* its length at each depth */
    size_t cap;
    uint64_t hidden;       /* subtrees left out by --percent-limit ... */
    int64_t hidden_weight; /* ... and their weight */
};

static int by_incl_desc(const void *a, const void *b, void *ctx)
{
    const int64_t *incl = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (incl[x] != incl[y])
        return incl[x] > incl[y] ? -1 : 1;
    return x < y ? -1 : 1;
}

enum { MAX_INDENT = 64 };

/* The line of node n at depth (1 for the roots' children). */
static int tree_line(struct tree_walk *tw, uint32_t n, size_t depth)
{
    const struct ember_profile *p = tw->t->p;
    struct ember_writer *w = tw->w;
    size_t len;
    const char *name = ember_report_name_of(p, ember_profile_node_frame(p, n), &len);
    if (tw->o->format == EMBER_TABLE_TEXT) {
        ember_writer_printf(w, "%7.2f%% ", ember_report_percent(tw->t->incl[n], tw->t->total));
        ember_report_put_weight(w, p, tw->t->incl[n], 12);
        /* indentation stops growing at MAX_INDENT levels (a million-frame
         * stack would print a terabyte); deeper lines say their depth */
        size_t level = depth - 1;
        ember_writer_printf(w, "  %*s", (int)(2 * (level < MAX_INDENT ? level : MAX_INDENT)), "");
        if (level > MAX_INDENT)
            ember_writer_printf(w, "[%zu] ", level);
        ember_writer_put(w, name, len);
        ember_writer_put(w, "\n", 1);
        return 0;
    }
    size_t at = tw->text_len[depth - 1], need = at + 1 + len;
    if (need > tw->cap) {
        char *text = realloc(tw->text, need * 2);
        if (!text)
            return -ENOMEM;
        tw->text = text;
        tw->cap = need * 2;
    }
    if (depth > 1)
        tw->text[at++] = ';';
    memcpy(tw->text + at, name, len);
    tw->text_len[depth] = at + len;
    ember_report_put_field(w, tw->o->format, tw->text, at + len);
    ember_report_put_cells(w, p, tw->o->format, tw->t->incl[n], tw->t->total);
    ember_report_put_cells(w, p, tw->o->format, ember_profile_self(p, n, tw->t->m), tw->t->total);
    ember_writer_put(w, "\n", 1);
    return 0;
}

/* Depth first without recursion (stacks can be a million frames deep),
 * heaviest child first: each node's children are sorted when entered. */
static int tree_walk(struct tree_walk *tw)
{
    const struct ember_report_trie *t = tw->t;
    size_t sp = 0;
    int err = 0;
    tw->node[0] = EMBER_ROOT;
    tw->next[0] = t->first[EMBER_ROOT];
    tw->text_len[0] = 0;
    qsort_r(t->kids + t->first[EMBER_ROOT], t->first[1] - t->first[0], sizeof(*t->kids),
            by_incl_desc, t->incl);
    while (!err) {
        uint32_t n = tw->node[sp];
        if (tw->next[sp] == t->first[n + 1]) {
            if (sp-- == 0)
                break;
            continue;
        }
        uint32_t c = t->kids[tw->next[sp]++];
        if (t->incl[c] == 0)
            continue;
        if (ember_report_percent(t->incl[c], t->total) < tw->o->percent_limit) {
            tw->hidden++;
            tw->hidden_weight += t->incl[c];
            continue;
        }
        err = tree_line(tw, c, sp + 1);
        sp++;
        tw->node[sp] = c;
        tw->next[sp] = t->first[c];
        qsort_r(t->kids + t->first[c], t->first[c + 1] - t->first[c], sizeof(*t->kids),
                by_incl_desc, t->incl);
    }
    return err;
}

static int report_tree(const struct ember_profile *p, const struct ember_report_opts *o,
                       const struct ember_sink *out)
{
    struct ember_report_trie t = {0};
    struct tree_walk tw = {&t, o, malloc(sizeof(struct ember_writer)), NULL, NULL, NULL, NULL, 0,
                           0,  0};
    int err = tw.w ? ember_report_trie_build(&t, p, o->metric) : -ENOMEM;
    if (!err) {
        tw.node = malloc(ember_profile_node_count(p) * sizeof(*tw.node));
        tw.next = malloc(ember_profile_node_count(p) * sizeof(*tw.next));
        tw.text_len = malloc(((size_t)ember_profile_node_count(p) + 1) * sizeof(*tw.text_len));
        err = tw.node && tw.next && tw.text_len ? 0 : -ENOMEM;
    }
    if (!err) {
        ember_writer_init(tw.w, out);
        const char *sep = o->format == EMBER_TABLE_TSV ? "\t" : ",";
        if (o->format != EMBER_TABLE_TEXT)
            ember_writer_printf(tw.w, "stack%stotal%stotal_pct%sself%sself_pct\n", sep, sep, sep,
                                sep);
        else
            ember_report_peaks(tw.w, p);
        err = tree_walk(&tw);
        if (!err && tw.hidden && o->format == EMBER_TABLE_TEXT) {
            char w[160];
            ember_report_total_text(w, sizeof(w), p, tw.hidden_weight);
            ember_writer_printf(tw.w,
                                "(%llu subtrees under %g%% not shown: %s, %.2f%% of the "
                                "total)\n",
                                (unsigned long long)tw.hidden, o->percent_limit, w,
                                ember_report_percent(tw.hidden_weight, t.total));
        }
        int ferr = ember_writer_flush(tw.w);
        err = err ? err : ferr;
    }
    free(tw.node);
    free(tw.next);
    free(tw.text);
    free(tw.text_len);
    free(tw.w);
    ember_report_trie_release(&t);
    return err;
}

/* ---- callers and callees ------------------------------------------------ */

/* A function's callers or callees, summed by neighbouring function (an
 * extra slot, none, for the root or self), then sorted. */
struct neighbours {
    const struct ember_profile *p;
    const struct ember_report_opts *o;
    bool callers;
    uint32_t none;
    struct frame_stat *fs;
    size_t k;      /* of fs, those with a weight */
    int64_t whole; /* the function's */
};

static uint32_t frame_named(const struct ember_profile *p, const char *name)
{
    uint32_t target = UINT32_MAX;
    for (uint32_t f = 0; f < ember_profile_frame_count(p); f++)
        if (ember_report_name_is(p, f, name))
            target = f;
    return target;
}

static void sum_neighbours(struct neighbours *nb, const struct ember_report_trie *t,
                           uint32_t target)
{
    const struct ember_profile *p = nb->p;
    struct frame_stat *fs = nb->fs;
    uint32_t none = nb->none;
    for (uint32_t n = 1; n < ember_profile_node_count(p); n++) {
        if (ember_profile_node_frame(p, n) != target || !t->outer[n])
            continue;
        nb->whole += t->incl[n];
        if (nb->callers) {
            uint32_t up = ember_profile_node_parent(p, n);
            fs[up == EMBER_ROOT ? none : ember_profile_node_frame(p, up)].total += t->incl[n];
            continue;
        }
        fs[none].total += ember_profile_self(p, n, t->m);
        for (uint32_t k = t->first[n]; k < t->first[n + 1]; k++)
            fs[ember_profile_node_frame(p, t->kids[k])].total += t->incl[t->kids[k]];
    }
    size_t k = 0;
    for (uint32_t f = 0; f <= none; f++)
        if (fs[f].total) {
            fs[k] = fs[f];
            fs[k++].frame = f;
        }
    qsort(fs, k, sizeof(*fs), ember_report_by_total);
    nb->k = k;
}

static void write_neighbours_head(struct ember_writer *w, const struct neighbours *nb,
                                  const char *name, int64_t total)
{
    const struct ember_report_opts *o = nb->o;
    const char *sep = o->format == EMBER_TABLE_TSV ? "\t" : ",";
    const char *what = nb->callers ? "caller" : "callee";
    if (o->format != EMBER_TABLE_TEXT) {
        ember_writer_printf(w, "%s%sweight%spct_of_function\n", what, sep, sep);
    } else {
        char buf[160];
        ember_report_total_text(buf, sizeof(buf), nb->p, nb->whole);
        ember_writer_printf(w, "%s of %s: %s, %.2f%% of the total\n",
                            nb->callers ? "Callers" : "Callees", name, buf,
                            ember_report_percent(nb->whole, total));
    }
}

/* The rows down to --percent-limit; in text, a line for those not shown. */
static void write_neighbour_rows(struct ember_writer *w, const struct neighbours *nb)
{
    const struct ember_profile *p = nb->p;
    const struct ember_report_opts *o = nb->o;
    const struct frame_stat *fs = nb->fs;
    size_t i = 0, k = nb->k;
    for (; i < k; i++) {
        if (ember_report_percent(fs[i].total, nb->whole) < o->percent_limit)
            break;
        size_t len = 0;
        const char *s = fs[i].frame == nb->none ? (nb->callers ? "(root)" : "(self)")
                                                : ember_report_name_of(p, fs[i].frame, &len);
        len = fs[i].frame == nb->none ? strlen(s) : len;
        if (o->format != EMBER_TABLE_TEXT) {
            ember_report_put_field(w, o->format, s, len);
            ember_report_put_cells(w, p, o->format, fs[i].total, nb->whole);
            ember_writer_put(w, "\n", 1);
            continue;
        }
        ember_report_put_weight(w, p, fs[i].total, 12);
        ember_writer_printf(w, " %7.2f%%  ", ember_report_percent(fs[i].total, nb->whole));
        ember_writer_put(w, s, len);
        ember_writer_put(w, "\n", 1);
    }
    if (i < k && o->format == EMBER_TABLE_TEXT) {
        int64_t rest = 0;
        for (size_t j = i; j < k; j++)
            rest += fs[j].total;
        char buf[160];
        ember_report_total_text(buf, sizeof(buf), p, rest);
        ember_writer_printf(w, "(%zu %s under %g%% not shown: %s)\n", k - i,
                            nb->callers ? "callers" : "callees", o->percent_limit, buf);
    }
}

static int report_neighbours(const struct ember_profile *p, const struct ember_report_opts *o,
                             const char *name, bool callers, const struct ember_sink *out)
{
    struct ember_report_trie t = {0};
    struct neighbours nb = {p, o, callers, ember_profile_frame_count(p), NULL, 0, 0};
    struct ember_writer *w = malloc(sizeof(*w));
    int err = w ? ember_report_trie_build(&t, p, o->metric) : -ENOMEM;
    uint32_t target = err ? UINT32_MAX : frame_named(p, name);
    if (!err && target == UINT32_MAX)
        err = -ENOENT;
    if (!err && !(nb.fs = calloc((size_t)nb.none + 1, sizeof(*nb.fs))))
        err = -ENOMEM;
    if (!err) {
        sum_neighbours(&nb, &t, target);
        ember_writer_init(w, out);
        write_neighbours_head(w, &nb, name, t.total);
        write_neighbour_rows(w, &nb);
        err = ember_writer_flush(w);
    }
    free(nb.fs);
    free(w);
    ember_report_trie_release(&t);
    return err;
}

/* ---- entry points: reports show names -------------------------------------- */

int ember_report_tree(const struct ember_profile *p, const struct ember_report_opts *o,
                      const struct ember_sink *out)
{
    struct ember_profile *named;
    int err = ember_profile_names(p, &named);
    if (!err)
        err = report_tree(named ? named : p, o, out);
    ember_profile_free(named);
    return err;
}

int ember_report_neighbours(const struct ember_profile *p, const struct ember_report_opts *o,
                            const char *name, bool callers, const struct ember_sink *out)
{
    struct ember_profile *named;
    int err = ember_profile_names(p, &named);
    if (!err)
        err = report_neighbours(named ? named : p, o, name, callers, out);
    ember_profile_free(named);
    return err;
}
