/*
 * stack_diff_write.c - a stack diff's lines out, in the byte order the
 * tree's walk writes them: stacks sorted by the ranks of their frames as
 * text pieces (ember_piece_ranks), names copied in whole blocks, the
 * numbers as the profile formats them.
 *
 * Invariants: stacks that --strip-hex made one are written once, their
 * weights summed; a line whose two weights are 0 is not written.
 */
#include "model/stack_diff_impl.h"
#include "base/writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- the order of lines ----------------------------------------------- */

static uint32_t piece_at(const struct ember_stack_diff *sd, const uint32_t *rank,
                         const struct sd_entry *e, size_t depth)
{
    if (depth >= e->n)
        return 0;
    return rank[2 * (size_t)sd->ids[e->off + depth] + (depth + 1 < e->n)];
}

static void item_swap(struct sd_item *it, size_t i, size_t j)
{
    struct sd_item t = it[i];
    it[i] = it[j];
    it[j] = t;
}

/* Each item's piece at depth, into its key. */
static void items_at(const struct ember_stack_diff *sd, const uint32_t *rank, struct sd_item *it,
                     size_t n, size_t depth)
{
    for (size_t i = 0; i < n; i++) {
        if (i + 8 < n)
            __builtin_prefetch(&sd->entries[it[i + 8].entry]);
        it[i].key = piece_at(sd, rank, &sd->entries[it[i].entry], depth);
    }
}

/* a's stack against b's from depth on (their keys), by the ranks of their
 * pieces. */
static int items_cmp(const struct ember_stack_diff *sd, const uint32_t *rank,
                     const struct sd_item *a, const struct sd_item *b, size_t depth)
{
    if (a->key != b->key || a->key == 0)
        return (a->key > b->key) - (a->key < b->key);
    const struct sd_entry *ea = &sd->entries[a->entry], *eb = &sd->entries[b->entry];
    for (size_t d = depth + 1;; d++) {
        uint32_t x = piece_at(sd, rank, ea, d), y = piece_at(sd, rank, eb, d);
        if (x != y || x == 0)
            return (x > y) - (x < y);
    }
}

/* Sorts n items whose stacks agree on their first depth pieces, and whose
 * keys hold their pieces at depth, in line order: a multikey quicksort
 * (Bentley and Sedgewick) on the pieces' ranks, which fetches a stack's
 * piece about once per depth it shares with others. It recurses into the
 * two smaller parts, at most half each, and loops on the largest, so the
 * stack stays O(log n) deep however deep the stacks. Stacks whose pieces
 * all agree (one stack, written with --strip-hex by several input stacks)
 * stay together in any order. */
static void sd_sort(const struct ember_stack_diff *sd, const uint32_t *rank, struct sd_item *it,
                    size_t n, size_t depth)
{
    while (n > 1) {
        if (n < 8) {
            for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && items_cmp(sd, rank, &it[j - 1], &it[j], depth) > 0; j--)
                    item_swap(it, j - 1, j);
            return;
        }
        item_swap(it, 0, n / 2);
        uint64_t v = it[0].key;
        /* [0, lt): below v; [lt, i): v; (gt, n): above v */
        size_t lt = 0, i = 1, gt = n - 1;
        while (i <= gt) {
            if (it[i].key < v)
                item_swap(it, lt++, i++);
            else if (it[i].key > v)
                item_swap(it, i, gt--);
            else
                i++;
        }
        size_t part[3][2] = {{0, lt}, {lt, gt + 1}, {gt + 1, n}};
        if (v) /* the stacks of the middle go on; 0: they all ended */
            items_at(sd, rank, it + lt, gt + 1 - lt, depth + 1);
        else
            part[1][1] = part[1][0];
        unsigned big = 0;
        for (unsigned k = 1; k < 3; k++)
            if (part[k][1] - part[k][0] > part[big][1] - part[big][0])
                big = k;
        for (unsigned k = 0; k < 3; k++)
            if (k != big)
                sd_sort(sd, rank, it + part[k][0], part[k][1] - part[k][0], depth + (k == 1));
        it += part[big][0];
        n = part[big][1] - part[big][0];
        depth += big == 1;
    }
}

static bool same_frames(const struct ember_stack_diff *sd, const struct sd_entry *a,
                        const struct sd_entry *b)
{
    return a->n == b->n && memcmp(sd->ids + a->off, sd->ids + b->off, a->n * sizeof(*sd->ids)) == 0;
}

enum { PIECE_BLOCK = 32, PIECE_PAD = 2 * PIECE_BLOCK };

struct pieces {
    char *text;
    size_t *at;
};

static int pieces_build(const struct ember_frames *f, struct pieces *pc)
{
    size_t total = PIECE_PAD;
    for (uint32_t i = 0; i < f->count; i++)
        total += (size_t)f->len[i] + 1;
    pc->text = malloc(total);
    pc->at = malloc(((size_t)f->count + 1) * sizeof(*pc->at));
    if (!pc->text || !pc->at)
        return -ENOMEM;
    size_t o = 0;
    for (uint32_t i = 0; i < f->count; i++) {
        pc->at[i] = o;
        memcpy(pc->text + o, f->str[i], f->len[i]);
        o += f->len[i];
        pc->text[o++] = ';';
    }
    memset(pc->text + o, 0, PIECE_PAD);
    return 0;
}

static void sd_put_line(struct ember_writer *wr, const struct ember_stack_diff *sd,
                        const struct pieces *pc, const struct sd_entry *e, const int64_t *v,
                        unsigned dec)
{
    const uint32_t *ids = sd->ids + e->off;
    /* the text, blocks past its end, two numbers of 20 digits and more */
    size_t len = (size_t)e->len + PIECE_PAD + 2 * 24;
    char *o = e->len < UINT32_MAX ? ember_writer_reserve(wr, len) : NULL, *at = o;
    if (!o) { /* longer than the buffer: piece by piece */
        for (uint32_t k = 0; k < e->n; k++) {
            if (k)
                ember_writer_put(wr, ";", 1);
            ember_writer_put(wr, sd->names.str[ids[k]], sd->names.len[ids[k]]);
        }
        char num[56];
        size_t n = 0;
        for (unsigned s = 0; s < 2; s++) {
            num[n++] = ' ';
            n += ember_weight_format(num + n, v[s], dec);
        }
        num[n++] = '\n';
        ember_writer_put(wr, num, n);
        return;
    }
    for (uint32_t k = 0; k < e->n; k++) {
        const char *src = pc->text + pc->at[ids[k]];
        size_t n = sd->names.len[ids[k]] + 1; /* with its ';' */
        for (size_t b = 0; b < n; b += PIECE_BLOCK)
            memcpy(at + b, src + b, PIECE_BLOCK);
        at += n;
    }
    at--; /* the last ';' */
    for (unsigned s = 0; s < 2; s++) {
        *at++ = ' ';
        at += ember_weight_format(at, v[s], dec);
    }
    *at++ = '\n';
    ember_writer_commit(wr, (size_t)(at - o));
}

int ember_stack_diff_prepare(struct ember_stack_diff *sd)
{
    size_t n = sd->nentries ? sd->nentries : 1;
    if (!sd->w && !(sd->w = malloc(n * sizeof(*sd->w))))
        return -ENOMEM;
    if (!sd->order && !(sd->order = malloc(n * sizeof(*sd->order))))
        return -ENOMEM;
    int err = ember_stack_diff_weights(sd, sd->w, &sd->dec);
    uint32_t *rank = NULL;
    if (!err)
        err = ember_piece_ranks(&sd->names, &rank);
    if (!err) {
        for (size_t i = 0; i < sd->nentries; i++)
            sd->order[i].entry = (uint32_t)i;
        items_at(sd, rank, sd->order, sd->nentries, 0);
        sd_sort(sd, rank, sd->order, sd->nentries, 0);
    }
    free(rank);
    sd->ready = !err;
    return err;
}

int ember_stack_diff_write(struct ember_stack_diff *sd, const struct ember_sink *out)
{
    int err = sd->ready ? 0 : ember_stack_diff_prepare(sd);
    struct ember_writer *wr = err ? NULL : malloc(sizeof(*wr));
    if (err || !wr)
        return err ? err : -ENOMEM;
    const struct sd_item *it = sd->order;
    int64_t(*w)[2] = sd->w;
    struct pieces pc = {0};
    if ((err = pieces_build(&sd->names, &pc)) < 0) {
        free(pc.text);
        free(pc.at);
        free(wr);
        return err;
    }
    ember_writer_init(wr, out);
    for (size_t i = 0, j; i < sd->nentries; i = j) {
        /* the entries come in line order, from anywhere: fetched ahead */
        if (i + 16 < sd->nentries)
            __builtin_prefetch(&sd->entries[it[i + 16].entry]);
        if (i + 8 < sd->nentries) {
            __builtin_prefetch(&w[it[i + 8].entry]);
            __builtin_prefetch(sd->ids + sd->entries[it[i + 8].entry].off);
        }
        /* stacks that --strip-hex made one add up */
        const struct sd_entry *e = &sd->entries[it[i].entry];
        int64_t v[2] = {w[it[i].entry][0], w[it[i].entry][1]};
        for (j = i + 1; j < sd->nentries && same_frames(sd, e, &sd->entries[it[j].entry]); j++)
            for (unsigned s = 0; s < 2; s++)
                v[s] += w[it[j].entry][s];
        if (v[0] || v[1])
            sd_put_line(wr, sd, &pc, e, v, sd->dec);
    }
    err = ember_writer_flush(wr);
    free(pc.text);
    free(pc.at);
    free(wr);
    return err;
}
