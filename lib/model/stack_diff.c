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
 * This file keeps the table and builds the profile; stack_diff_write.c
 * writes the lines, transform/stack_diff_read.c reads the inputs.
 */
#include "model/stack_diff.h"
#include "model/stack_diff_impl.h"
#include "model/split.h"
#include "base/pow10.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
/* Does the folded view spell the stack s otherwise (--strip-hex, a control character)? */
static bool sd_strips(const struct ember_stack_diff *sd, const char *s, size_t n)
{
    return ember_stack_text_unfit(s, n, sd->o.strip_hex);
}

/* The ends of the names of s and their hashes (ember_folded_calls.split:
 * on the reading thread, while the merge is behind). */
size_t ember_stack_diff_split(const struct ember_stack_diff *sd, const struct ember_folded_line *l,
                              size_t *ends, uint64_t *hashes)
{
    if (sd_strips(sd, l->stack, l->len))
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

void ember_stack_diff_hint(const struct ember_stack_diff *sd, const struct ember_folded_line *l)
{
    __builtin_prefetch(&sd->slots[(uint32_t)l->hash[0] & sd->mask]);
}

int ember_stack_diff_line(struct ember_stack_diff *sd, unsigned side,
                          const struct ember_folded_line *l)
{
    struct sd_side *sv = &sd->side[side];
    struct sd_entry *e = NULL;
    if (l->diff && !sv->diff) {
        sv->diff = true;
        sv->total[1] = sv->total[0];
    }
    int err = l->len ? sd_entry(sd, l, &e) : 0;
    if (!err && l->diff) {
        err = sd_add(sd, side, e, 0, l->before);
        if (!err)
            err = sd_add(sd, side, e, 1, l->count);
    }
    for (unsigned m = 0; !err && !l->diff && m < 1u + sv->diff; m++)
        err = sd_add(sd, side, e, m, l->count);
    return err;
}

bool ember_stack_diff_weightless(const struct ember_stack_diff *sd, unsigned side)
{
    return sd->side[side].total[0] == 0 && sd->side[side].total[1] == 0;
}

/* ---- the numbers ------------------------------------------------------ */

/* Each entry's two weights as the differential profile holds them (at the
 * larger precision, BEFORE normalized), into w; the totals are checked
 * for overflow as the profile's are. */
int ember_stack_diff_weights(const struct ember_stack_diff *sd, int64_t (*w)[2], unsigned *dec)
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

/* ---- the same differential profile, built once ---------------------- */

int ember_stack_diff_profile(struct ember_stack_diff *sd, struct ember_profile **out)
{
    size_t n = sd->nentries ? sd->nentries : 1;
    if (!sd->w && !(sd->w = malloc(n * sizeof(*sd->w))))
        return -ENOMEM;
    int err = ember_stack_diff_weights(sd, sd->w, &sd->dec);
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
