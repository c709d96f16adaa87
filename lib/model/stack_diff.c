/*
 * stack_diff.c - two folded inputs diffed without any tree
 * (ember_stack_diff in ember/transform.h): each line's stack is found by
 * the 128-bit hash of its text in one table of distinct stacks (as the
 * folded reader's stack cache finds nodes), which keeps its frames as name
 * ids (in a frame table of names, through the readers' name memo) and a
 * weight per side. Nothing else is kept, so memory follows the distinct
 * stacks, not the inputs. The lines come out in byte order as the tree's
 * walk writes them: stacks are sorted by the ranks of their frames as text
 * pieces ("name;" inside a stack, "name" at its end, ember_piece_ranks),
 * whose order is the order of the whole lines. The numbers follow the
 * tree's arithmetic step by step (per side: decimals rescaled as they grow,
 * totals checked for overflow; then normalized per input stack) and the
 * names spelled as the folded view spells them (ember_stack_text_fold), so
 * both ways print the same bytes as ember_profile_diff (transform/diff.c).
 * A table of stacks over the frame table, as stack_text.c is: the model's.
 */
#include "ember/transform.h"
#include "base/pow10.h"
#include "read/read_impl.h"
#include "base/writer.h"
#include "model/name_cache.h"
#include "model/profile_impl.h"
#include "model/split.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct sd_entry {
    uint64_t off; /* its frames: ids[off .. off + n), names after --strip-hex */
    uint32_t n;
    uint32_t len; /* of its text, UINT32_MAX: longer */
    int64_t w[2]; /* per side, in units of 10^-decimals of that side */
};

/* 96 bits of the text's hash identify a stack (as perf's line cache). */
struct sd_slot {
    uint64_t lo;
    uint32_t hi;
    uint32_t entry; /* + 1; 0: empty */
};

struct sd_item {
    uint32_t key; /* the rank of its piece at the depth sorted on */
    uint32_t entry;
};

/* What the profile keeps of one input beyond its stacks: a differential
 * input has values before (0) and after (1), and after is its selected
 * value, the side's weight; the other value's total counts only for the
 * "no samples" and overflow rules. An input that becomes differential has
 * had its lines so far unchanged, after as before
 * (ember_profile_set_differential). */
struct sd_side {
    bool diff;
    unsigned decimals;
    int64_t total[2];
};

struct ember_stack_diff {
    struct ember_diff_opts o;
    struct ember_frames names;
    struct ember_name_cache memo;
    uint64_t *hashes; /* of a new stack's names */
    size_t *ends;
    size_t hcap, ecap2;
    struct sd_slot *slots;
    uint32_t mask;
    struct sd_entry *entries;
    size_t nentries, ecap;
    uint32_t *ids;
    size_t nids, icap;
    struct sd_side side[2];
    char *buf; /* a stack's text with hex numbers stripped */
    size_t bcap;
    /* after prepare: the weights as the differential profile has them, at
     * dec decimals, and the entries in line order */
    int64_t (*w)[2];
    struct sd_item *order;
    unsigned dec;
    bool ready;
};

int ember_stack_diff_new(struct ember_stack_diff **out, const struct ember_diff_opts *o)
{
    struct ember_stack_diff *sd = calloc(1, sizeof(*sd));
    if (!sd)
        return -ENOMEM;
    sd->o = *o;
    sd->mask = 1023;
    sd->slots = calloc(sd->mask + 1, sizeof(*sd->slots));
    if (!sd->slots || ember_frames_init(&sd->names) < 0 || ember_name_cache_init(&sd->memo) < 0) {
        ember_stack_diff_free(sd);
        return -ENOMEM;
    }
    *out = sd;
    return 0;
}

void ember_stack_diff_free(struct ember_stack_diff *sd)
{
    if (!sd)
        return;
    ember_frames_release(&sd->names);
    ember_name_cache_release(&sd->memo);
    free(sd->hashes);
    free(sd->ends);
    free(sd->slots);
    free(sd->entries);
    free(sd->ids);
    free(sd->buf);
    free(sd->w);
    free(sd->order);
    free(sd);
}

static struct sd_slot *sd_find(struct sd_slot *slots, uint32_t mask, uint64_t lo, uint32_t hi)
{
    for (uint32_t i = (uint32_t)lo & mask;; i = (i + 1) & mask)
        if (!slots[i].entry || (slots[i].lo == lo && slots[i].hi == hi))
            return &slots[i];
}

static int sd_grow(struct ember_stack_diff *sd)
{
    uint32_t nmask = sd->mask * 2 + 1;
    struct sd_slot *slots = nmask ? ember_table_calloc((size_t)nmask + 1, sizeof(*slots)) : NULL;
    if (!slots)
        return -ENOMEM;
    for (uint32_t i = 0; i <= sd->mask; i++)
        if (sd->slots[i].entry)
            *sd_find(slots, nmask, sd->slots[i].lo, sd->slots[i].hi) = sd->slots[i];
    free(sd->slots);
    sd->slots = slots;
    sd->mask = nmask;
    return 0;
}

/* One input's lines into sd: side 0 BEFORE, 1 AFTER. */
struct sd_reader {
    struct ember_stack_diff *sd;
    unsigned side;
};

/* the reading thread's room for a split, as ember_stack_text_split needs */
_Static_assert(EMBER_FOLDED_SPLIT_ROOM(0) >= EMBER_SPLIT_SLACK, "split room");

/* Does the folded view spell the stack s otherwise (--strip-hex, a control character)? */
static bool sd_strips(const struct ember_stack_diff *sd, const char *s, size_t n)
{
    return ember_stack_text_unfit(s, n, sd->o.strip_hex);
}

/* The ends of the names of s and their hashes (ember_folded_calls.split:
 * on the reading thread, while the merge is behind). */
static size_t sd_split(const void *ctx, const struct ember_folded_line *l, size_t *ends,
                       uint64_t *hashes)
{
    const struct sd_reader *r = ctx;
    if (sd_strips(r->sd, l->stack, l->len))
        return 0; /* split after stripping, by the merge */
    return ember_stack_text_split(';', l->stack, l->len, ends, hashes);
}

/* The frames of a new stack, as name ids (hex numbers stripped if asked),
 * split and hashed unless the reading thread did. */
static int sd_frames(struct ember_stack_diff *sd, const struct ember_folded_line *l,
                     struct sd_entry *e)
{
    const char *s = l->stack;
    size_t n = l->len, k = l->names;
    const size_t *ends = l->ends;
    const uint64_t *hashes = l->name_hash;
    if (!k && sd_strips(sd, s, n)) {
        if (EMBER_FOLD_ROOM(n) > sd->bcap) { /* "0x1" grows to "0x...", ESC to "\x1b" */
            free(sd->buf);
            sd->bcap = EMBER_FOLD_ROOM(n);
            if (!(sd->buf = malloc(sd->bcap)))
                return sd->bcap = 0, -ENOMEM;
        }
        n = ember_stack_text_fold(s, n, sd->o.strip_hex, sd->buf);
        s = sd->buf;
    }
    if (!k) {
        if (EMBER_VEC_RESERVE(sd->ends, sd->ecap2, n + EMBER_SPLIT_SLACK) < 0 ||
            EMBER_VEC_RESERVE(sd->hashes, sd->hcap, n + EMBER_SPLIT_SLACK) < 0)
            return -ENOMEM;
        k = ember_stack_text_split(';', s, n, sd->ends, sd->hashes);
        ends = sd->ends;
        hashes = sd->hashes;
    }
    /* their memo slots fetched at once, then interned */
    for (size_t i = 0; i < k; i++)
        ember_name_cache_prefetch(&sd->memo, hashes[i]);
    if (k > UINT32_MAX || EMBER_VEC_RESERVE(sd->ids, sd->icap, sd->nids + k) < 0)
        return -ENOMEM;
    for (size_t i = 0, pos = 0; i < k; pos = ends[i++] + 1) {
        int err = ember_name_cache_intern(&sd->memo, &sd->names, s + pos, ends[i] - pos, hashes[i],
                                          &sd->ids[sd->nids + i]);
        if (err)
            return err;
    }
    e->off = sd->nids;
    e->n = (uint32_t)k;
    e->len = n < UINT32_MAX ? (uint32_t)n : UINT32_MAX;
    sd->nids += k;
    return 0;
}

/* The entry of the line's stack, made if new. */
static int sd_entry(struct ember_stack_diff *sd, const struct ember_folded_line *l,
                    struct sd_entry **out)
{
    XXH128_hash_t h = {l->hash[0], l->hash[1]};
    struct sd_slot *slot = sd_find(sd->slots, sd->mask, h.low64, (uint32_t)h.high64);
    if (slot->entry) {
        *out = &sd->entries[slot->entry - 1];
        return 0;
    }
    if (sd->nentries >= UINT32_MAX - 1)
        return -ERANGE;
    if (EMBER_VEC_RESERVE(sd->entries, sd->ecap, sd->nentries + 1) < 0)
        return -ENOMEM;
    struct sd_entry *e = &sd->entries[sd->nentries];
    *e = (struct sd_entry){0};
    int err = sd_frames(sd, l, e);
    if (err)
        return err;
    if ((sd->nentries + 1) * 2 > (size_t)sd->mask + 1) {
        if (sd_grow(sd) < 0)
            return -ENOMEM;
        slot = sd_find(sd->slots, sd->mask, h.low64, (uint32_t)h.high64);
    }
    *slot = (struct sd_slot){h.low64, (uint32_t)h.high64, (uint32_t)++sd->nentries};
    *out = e;
    return 0;
}

/* Multiplies the side's weights by 10^by (the profile's rescale). */
static int sd_rescale(struct ember_stack_diff *sd, unsigned side, unsigned by)
{
    struct sd_side *sv = &sd->side[side];
    int64_t f = ember_pow10(by);
    for (unsigned m = 0; m < 1u + sv->diff; m++)
        if (__builtin_mul_overflow(sv->total[m], f, &sv->total[m]))
            return -ERANGE;
    for (size_t i = 0; i < sd->nentries; i++)
        if (__builtin_mul_overflow(sd->entries[i].w[side], f, &sd->entries[i].w[side]))
            return -ERANGE;
    sv->decimals += by;
    return 0;
}

/* ember_profile_add_decimal on one side: the selected value goes to the
 * entry (NULL: the empty stack, the root's), the other only to its total. */
static int sd_add(struct ember_stack_diff *sd, unsigned side, struct sd_entry *e, unsigned m,
                  struct ember_decimal v)
{
    struct sd_side *sv = &sd->side[side];
    if (v.digits > EMBER_MAX_DECIMALS) {
        int64_t f = ember_pow10(v.digits - EMBER_MAX_DECIMALS);
        v.mant = (v.mant + f / 2) / f;
        v.digits = EMBER_MAX_DECIMALS;
    }
    int err = v.digits > sv->decimals ? sd_rescale(sd, side, v.digits - sv->decimals) : 0;
    int64_t x, total, self = 0;
    if (err || __builtin_mul_overflow(v.mant, ember_pow10(sv->decimals - v.digits), &x) ||
        __builtin_add_overflow(sv->total[m], x, &total) ||
        (e && m == sv->diff && __builtin_add_overflow(e->w[side], x, &self)))
        return err ? err : -ERANGE;
    sv->total[m] = total;
    if (e && m == sv->diff)
        e->w[side] = self;
    return 0;
}

/* A line to come: its stack's slot fetched. */
static void sd_hint(void *ctx, const struct ember_folded_line *l)
{
    const struct sd_reader *r = ctx;
    __builtin_prefetch(&r->sd->slots[(uint32_t)l->hash[0] & r->sd->mask]);
}

/* A line of one input, as the folded reader adds it to a profile. */
static int sd_line(void *ctx, const struct ember_folded_line *l)
{
    struct sd_reader *r = ctx;
    struct ember_stack_diff *sd = r->sd;
    struct sd_side *sv = &sd->side[r->side];
    struct sd_entry *e = NULL;
    if (l->diff && !sv->diff) {
        sv->diff = true;
        sv->total[1] = sv->total[0];
    }
    int err = l->len ? sd_entry(sd, l, &e) : 0;
    if (!err && l->diff) {
        err = sd_add(sd, r->side, e, 0, l->before);
        if (!err)
            err = sd_add(sd, r->side, e, 1, l->count);
    }
    for (unsigned m = 0; !err && !l->diff && m < 1u + sv->diff; m++)
        err = sd_add(sd, r->side, e, m, l->count);
    return err;
}

/* An input's end: no samples, or samples that weigh nothing, is an
 * error, as for any input read. */
static int sd_end(void *ctx, struct ember_input *in, const struct ember_read_stats *st,
                  struct ember_diag *d)
{
    const struct sd_reader *r = ctx;
    const struct sd_side *sv = &r->sd->side[r->side];
    return ember_format_check_samples(&ember_format_folded, ember_input_name(in), st,
                                      sv->total[0] == 0 && sv->total[1] == 0, d);
}

int ember_stack_diff_read(struct ember_stack_diff *sd, struct ember_input *in[2],
                          const struct ember_read_opts *ro, struct ember_read_stats *st,
                          struct ember_diag *d)
{
    static const struct ember_folded_calls calls = {sd_hint, sd_line, sd_end, sd_split};
    struct sd_reader r[2] = {{sd, 0}, {sd, 1}};
    const struct ember_folded_source src[2] = {{in[0], &st[0], &r[0]}, {in[1], &st[1], &r[1]}};
    return ember_folded_scan_all(src, 2, ro, &calls, d);
}

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

/* ---- the numbers and the lines ---------------------------------------- */

/* Each entry's two weights as the differential profile holds them (at the
 * larger precision, BEFORE normalized), into w; the totals are checked
 * for overflow as the profile's are. */
static int sd_weights(const struct ember_stack_diff *sd, int64_t (*w)[2], unsigned *dec)
{
    const struct sd_side *b = &sd->side[0], *a = &sd->side[1];
    *dec = b->decimals > a->decimals ? b->decimals : a->decimals;
    int64_t scale[2] = {ember_pow10(*dec - b->decimals), ember_pow10(*dec - a->decimals)};
    __int128 num = 0, den = 0;
    int64_t bt = b->total[b->diff], at = a->total[a->diff]; /* of the selected values */
    if (sd->o.normalize && bt && at) {
        num = (__int128)at * scale[1];
        den = (__int128)bt * scale[0];
    }
    int64_t total[2] = {0, 0};
    for (size_t i = 0; i < sd->nentries; i++)
        for (unsigned s = 0; s < 2; s++) {
            int64_t v = sd->entries[i].w[s];
            w[i][s] = 0;
            if (!v)
                continue;
            if (__builtin_mul_overflow(v, scale[s], &v))
                return -ERANGE;
            if (s == 0 && den)
                v = (int64_t)(v * num / den);
            if (__builtin_add_overflow(total[s], v, &total[s]))
                return -ERANGE;
            w[i][s] = v;
        }
    return 0;
}

/* Every name once more, each followed by ';' and all by PIECE_PAD bytes,
 * so that a line is made of whole blocks copied: piece f is
 * text[at[f] .. at[f] + len + 1). */
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
    int err = sd_weights(sd, sd->w, &sd->dec);
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

/* ---- the same differential profile, built once ---------------------- */

int ember_stack_diff_profile(struct ember_stack_diff *sd, struct ember_profile **out)
{
    size_t n = sd->nentries ? sd->nentries : 1;
    if (!sd->w && !(sd->w = malloc(n * sizeof(*sd->w))))
        return -ENOMEM;
    int err = sd_weights(sd, sd->w, &sd->dec);
    struct ember_profile *p = err ? NULL : ember_profile_new();
    uint32_t *fmap = err ? NULL : malloc(((size_t)sd->names.count + 1) * sizeof(*fmap));
    uint32_t *path = NULL;
    size_t pcap = 0;
    if (!err && (!p || !fmap))
        err = -ENOMEM;
    if (!err)
        err = ember_profile_set_differential(p, "samples", "count");
    if (!err) /* what a folded input measures, as the reader leaves it */
        p->decimals = sd->dec;
    for (uint32_t f = 0; f < sd->names.count && !err; f++)
        err = ember_frames_intern(&p->frames, sd->names.str[f], sd->names.len[f], &fmap[f]);
    for (size_t i = 0; i < sd->nentries && !err; i++) {
        const struct sd_entry *e = &sd->entries[i];
        uint32_t leaf;
        if (EMBER_VEC_RESERVE(path, pcap, e->n) < 0) {
            err = -ENOMEM;
            break;
        }
        for (uint32_t k = 0; k < e->n; k++)
            path[k] = fmap[sd->ids[e->off + k]];
        err = ember_profile_child_path(p, EMBER_ROOT, path, e->n, 1, NULL, &leaf);
        for (unsigned s = 0; s < 2 && !err; s++)
            if (sd->w[i][s])
                err = ember_profile_add_raw(p, leaf, s, sd->w[i][s]);
    }
    free(fmap);
    free(path);
    if (err) {
        ember_profile_free(p);
        return err;
    }
    *out = p;
    return 0;
}
