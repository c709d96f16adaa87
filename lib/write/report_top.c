/*
 * report_top.c - the top table of ember/write.h (`ember report`, as
 * `pprof -top`): per function, its self and total weight of the value
 * shown, sorted.
 *
 * Memory profiles get more: where the value shown has a partner that
 * counts the same allocations in the other measure (Go's and ember's
 * alloc_space and alloc_objects, inuse_space and inuse_objects), its self
 * and total are two more columns; and each counter over time (a heap
 * recording's "heap") gives its peak and when it was reached, above the
 * table. Both come from the profile alone: nothing here knows a format.
 *
 * Invariants: the CSV/TSV columns of a profile without a partner are those
 * the table has always had (programs read them by position); the partner's
 * are appended after them.
 */
#include "ember/write.h"
#include "base/writer.h"
#include "write/not_functions.h"
#include "write/report_output.h"
#include "write/report_trie.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value counting what value m counts, in the other measure: the
 * type with "_space" and "_objects" exchanged, when the profile has it. */
static bool partner(const struct ember_profile *p, unsigned m, unsigned *out)
{
    static const char *const ends[2] = {"_space", "_objects"};
    const char *type = ember_profile_value_type(p, m);
    size_t n = strlen(type);
    for (int i = 0; i < 2; i++) {
        size_t e = strlen(ends[i]);
        if (n <= e || strcmp(type + n - e, ends[i]) != 0)
            continue;
        for (unsigned v = 0; v < ember_profile_values(p); v++) {
            const char *t = ember_profile_value_type(p, v);
            if (strlen(t) == n - e + strlen(ends[1 - i]) && strncmp(t, type, n - e) == 0 &&
                strcmp(t + n - e, ends[1 - i]) == 0) {
                *out = v;
                return true;
            }
        }
    }
    return false;
}

/* What the partner's columns are headed: its unit when that is bytes,
 * else what its type counts ("objects"). */
static const char *partner_word(const struct ember_profile *p, unsigned v)
{
    const char *type = ember_profile_value_type(p, v), *us = strrchr(type, '_');
    if (strcmp(ember_profile_value_unit(p, v), "bytes") == 0)
        return "bytes";
    return us ? us + 1 : type;
}

/* A weight of value v as people read it: "12.5 MiB", or the exact count. */
static void value_text(char *buf, size_t cap, const struct ember_profile *p, unsigned v, int64_t w)
{
    unsigned dec = ember_profile_decimals(p);
    double scale = 1;
    for (unsigned i = 0; i < dec; i++)
        scale *= 10;
    if (!ember_unit_format(buf, cap, (double)w / scale, ember_profile_value_unit(p, v))) {
        char num[32];
        ember_weight_format(num, w, dec);
        snprintf(buf, cap, "%s", num);
    }
}

/* Per function: self and total (and the second value's); the functions
 * that have any weight. A root named as a process is no function: its
 * total is not counted. */
static int frame_stats(const struct ember_report_trie *t, const bool *root_name,
                       struct frame_stat **out, size_t *count)
{
    const struct ember_profile *p = t->p;
    struct frame_stat *fs =
        calloc(ember_profile_frame_count(p) ? ember_profile_frame_count(p) : 1, sizeof(*fs));
    if (!fs)
        return -ENOMEM;
    for (uint32_t f = 0; f < ember_profile_frame_count(p); f++)
        fs[f].frame = f;
    for (uint32_t n = 1; n < ember_profile_node_count(p); n++) {
        uint32_t f = ember_profile_node_frame(p, n);
        struct frame_stat *s = &fs[f];
        s->self += ember_profile_self(p, n, t->m);
        s->self2 += t->incl2 ? ember_profile_self(p, n, t->m2) : 0;
        if (t->outer[n] && !(root_name[f] && ember_profile_node_parent(p, n) == EMBER_ROOT)) {
            s->total += t->incl[n];
            s->total2 += t->incl2 ? t->incl2[n] : 0;
        }
    }
    size_t k = 0;
    for (uint32_t f = 0; f < ember_profile_frame_count(p); f++)
        if (fs[f].self || fs[f].total || fs[f].self2 || fs[f].total2)
            fs[k++] = fs[f];
    *out = fs;
    *count = k;
    return 0;
}

/* The second value's cells: ",self,total" exact, or two text columns. */
static void second_cells(struct ember_writer *w, const struct ember_report_trie *t,
                         const struct frame_stat *s, enum ember_table fmt)
{
    char self[64], total[64];
    if (fmt != EMBER_TABLE_TEXT) {
        char sep = fmt == EMBER_TABLE_TSV ? '\t' : ',';
        ember_weight_format(self, s->self2, ember_profile_decimals(t->p));
        ember_weight_format(total, s->total2, ember_profile_decimals(t->p));
        ember_writer_printf(w, "%c%s%c%s", sep, self, sep, total);
        return;
    }
    value_text(self, sizeof(self), t->p, t->m2, s->self2);
    value_text(total, sizeof(total), t->p, t->m2, s->total2);
    ember_writer_printf(w, " %13s %13s", self, total);
}

static void top_rows(struct ember_writer *w, const struct ember_report_trie *t,
                     const struct frame_stat *fs, size_t rows, enum ember_table fmt)
{
    const struct ember_profile *p = t->p;
    int64_t sum = 0;
    for (size_t i = 0; i < rows; i++) {
        size_t len;
        const char *name = ember_report_name_of(p, fs[i].frame, &len);
        sum += fs[i].self;
        if (fmt != EMBER_TABLE_TEXT) {
            ember_report_put_field(w, fmt, name, len);
            ember_report_put_cells(w, p, fmt, fs[i].self, t->total);
            ember_report_put_cells(w, p, fmt, fs[i].total, t->total);
            if (t->incl2)
                second_cells(w, t, &fs[i], fmt);
            ember_writer_put(w, "\n", 1);
            continue;
        }
        ember_report_put_weight(w, p, fs[i].self, 12);
        ember_writer_printf(w, " %6.2f%% %6.2f%% ", ember_report_percent(fs[i].self, t->total),
                            ember_report_percent(sum, t->total));
        ember_report_put_weight(w, p, fs[i].total, 12);
        ember_writer_printf(w, " %6.2f%%", ember_report_percent(fs[i].total, t->total));
        if (t->incl2)
            second_cells(w, t, &fs[i], fmt);
        ember_writer_put(w, "  ", 2);
        ember_writer_put(w, name, len);
        ember_writer_put(w, "\n", 1);
    }
}

/* By total, the names of unresolved addresses are left out (not_functions.h). */
static size_t rank_by_total(const struct ember_profile *p, struct frame_stat *fs, size_t n,
                            size_t *unresolved)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *name = ember_report_name_of(p, fs[i].frame, &len);
        if (ember_report_unresolved(name, len))
            ++*unresolved;
        else
            fs[k++] = fs[i];
    }
    return k;
}

static size_t count_roots(const struct ember_profile *p, const bool *root_name)
{
    size_t n = 0;
    for (uint32_t f = 0; f < ember_profile_frame_count(p); f++)
        n += root_name[f];
    return n;
}

/* The lines above a text table: peaks, what is shown of what total (and
 * the second value's total), what was left out, the column heads. */
static void text_head(struct ember_writer *w, const struct ember_report_trie *t, size_t rows,
                      size_t n, size_t roots, size_t unresolved)
{
    const struct ember_profile *p = t->p;
    char total[160];
    ember_report_peaks(w, p);
    ember_report_total_text(total, sizeof(total), p, t->total);
    ember_writer_printf(w, "Showing %zu of %zu functions; total %s", rows, n, total);
    if (t->incl2) {
        value_text(total, sizeof(total), p, t->m2, t->total2);
        ember_writer_printf(w, " (%s%s%s)", total,
                            strcmp(partner_word(p, t->m2), "bytes") == 0 ? " of " : " ",
                            ember_profile_value_type(p, t->m2));
    }
    ember_writer_put(w, "\n", 1);
    ember_report_left_out(w, roots, unresolved);
    ember_writer_printf(w, "%12s %7s %7s %12s %7s", "self", "self%", "sum%", "total", "total%");
    if (t->incl2) {
        char self2[40], total2[40];
        snprintf(self2, sizeof(self2), "self %s", partner_word(p, t->m2));
        snprintf(total2, sizeof(total2), "total %s", partner_word(p, t->m2));
        ember_writer_printf(w, " %13s %13s", self2, total2);
    }
    ember_writer_puts(w, "  function\n");
}

static void table_head(struct ember_writer *w, const struct ember_report_trie *t,
                       enum ember_table fmt)
{
    const char *sep = fmt == EMBER_TABLE_TSV ? "\t" : ",";
    ember_writer_printf(w, "function%sself%sself_pct%stotal%stotal_pct", sep, sep, sep, sep);
    if (t->incl2) {
        const char *word = partner_word(t->p, t->m2);
        ember_writer_printf(w, "%sself_%s%stotal_%s", sep, word, sep, word);
    }
    ember_writer_put(w, "\n", 1);
}

/* The rows shown: --top of them, down to --percent-limit. */
static size_t rows_shown(const struct ember_report_opts *o, const struct frame_stat *fs, size_t n,
                         int64_t total)
{
    size_t rows = o->top && o->top < n ? o->top : n;
    while (rows > 0 && ember_report_percent(o->by_total ? fs[rows - 1].total : fs[rows - 1].self,
                                            total) < o->percent_limit)
        rows--;
    return rows;
}

static int report_top(const struct ember_profile *p, const bool *root_name,
                      const struct ember_report_opts *o, const struct ember_sink *out)
{
    struct ember_report_trie t = {0};
    struct frame_stat *fs = NULL;
    size_t n = 0, unresolved = 0;
    unsigned m2;
    struct ember_writer *w = malloc(sizeof(*w));
    int err = w ? ember_report_trie_build(&t, p, o->metric) : -ENOMEM;
    if (!err && !ember_profile_is_differential(p) && partner(p, t.m, &m2))
        err = ember_report_trie_second(&t, m2);
    if (!err)
        err = frame_stats(&t, root_name, &fs, &n);
    if (!err && o->by_total)
        n = rank_by_total(p, fs, n, &unresolved);
    if (!err) {
        qsort(fs, n, sizeof(*fs), o->by_total ? ember_report_by_total : ember_report_by_self);
        size_t rows = rows_shown(o, fs, n, t.total);
        ember_writer_init(w, out);
        if (o->format != EMBER_TABLE_TEXT)
            table_head(w, &t, o->format);
        else
            text_head(w, &t, rows, n, count_roots(p, root_name), unresolved);
        top_rows(w, &t, fs, rows, o->format);
        err = ember_writer_flush(w);
    }
    free(fs);
    free(w);
    ember_report_trie_release(&t);
    return err;
}

int ember_report_top(const struct ember_profile *p, const struct ember_report_opts *o,
                     const struct ember_sink *out)
{
    struct ember_profile *named;
    bool *root_name = NULL;
    int err = ember_profile_names(p, &named);
    if (!err)
        err = ember_report_root_names(p, named ? named : p, &root_name);
    if (!err)
        err = report_top(named ? named : p, root_name, o, out);
    free(root_name);
    ember_profile_free(named);
    return err;
}
