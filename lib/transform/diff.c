/*
 * diff.c - two profiles as one differential profile: every stack of either
 * with its weight before (value 0) and after (value 1), what
 * FlameGraph's difffolded.pl computes and flamegraph.pl draws red and blue.
 *
 * Stacks compare by the names their views show (ember_profile_names). Nodes
 * are copied in index order, so a node's parent is always mapped before
 * it. --normalize scales BEFORE to AFTER's total and truncates at the
 * profile's precision, as difffolded.pl -n does (int()); --strip-hex
 * writes every 0x-prefixed hex number in a name as "0x...", so that stacks
 * that differ only by addresses compare equal. Two folded inputs diff
 * without any tree (lib/model/stack_diff.c); both ways print the same
 * bytes. Everything here goes through the profile's public API.
 */
#include "ember/transform.h"
#include "base/pow10.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct side {
    const struct ember_profile *src;
    unsigned value;
    int64_t scale;     /* 10^(dst decimals - src decimals) */
    __int128 num, den; /* normalize: times num / den (den 0: no) */
};

/* dst's frame for src's frame f (its name, hex stripped if asked), interned
 * at its first use and remembered in fmap (+ 1; 0: not yet). */
static int map_frame(struct ember_profile *dst, const struct ember_profile *src, uint32_t f,
                     bool hex, uint32_t *fmap, char **buf, size_t *bcap, uint32_t *out)
{
    if (fmap[f]) {
        *out = fmap[f] - 1;
        return 0;
    }
    size_t len;
    const char *name = ember_profile_frame_name(src, f, &len);
    if (hex && memmem(name, len, "0x", 2)) {
        if (*bcap < len * 2 + 1) { /* "0x1" grows to "0x..." */
            free(*buf);
            *bcap = len * 2 + 1;
            if (!(*buf = malloc(*bcap)))
                return *bcap = 0, -ENOMEM;
        }
        len = ember_name_strip_hex(name, len, *buf);
        name = *buf;
    }
    int err = ember_profile_intern(dst, name, len, out);
    if (!err)
        fmap[f] = *out + 1;
    return err;
}

/* One side's weight of a node at dst's precision, normalized if asked. */
static int side_weight(const struct side *s, int64_t *v)
{
    if (__builtin_mul_overflow(*v, s->scale, v))
        return -ERANGE;
    if (s->den)
        *v = (int64_t)(*v * s->num / s->den);
    return 0;
}

static int add_side(struct ember_profile *dst, const struct side *s, bool hex)
{
    const struct ember_profile *src = s->src;
    uint32_t nn = ember_profile_node_count(src);
    unsigned sel = ember_profile_selected(src);
    uint32_t *map = malloc((size_t)nn * sizeof(*map));
    uint32_t *fmap = calloc((size_t)ember_profile_frame_count(src) + 1, sizeof(*fmap));
    char *buf = NULL;
    size_t bcap = 0;
    int err = map && fmap ? 0 : -ENOMEM;
    if (map)
        map[0] = EMBER_ROOT;
    for (uint32_t n = 1; n < nn && !err; n++) {
        uint32_t frame;
        err = map_frame(dst, src, ember_profile_node_frame(src, n), hex, fmap, &buf, &bcap, &frame);
        if (!err)
            err = ember_profile_child(dst, map[ember_profile_node_parent(src, n)], frame, &map[n]);
        int64_t v = ember_profile_self(src, n, sel);
        if (err || !v)
            continue;
        err = side_weight(s, &v);
        if (!err && v)
            err = ember_profile_add(dst, map[n], s->value, v);
    }
    free(buf);
    free(map);
    free(fmap);
    return err;
}

static int diff_of(const struct ember_profile *before, const struct ember_profile *after,
                   const struct ember_diff_opts *o, struct ember_profile **out)
{
    struct ember_profile *d = ember_profile_new();
    if (!d)
        return -ENOMEM;
    unsigned bd = ember_profile_decimals(before), ad = ember_profile_decimals(after);
    unsigned dec = bd > ad ? bd : ad;
    /* each side's selected value; the difference is in AFTER's unit */
    int err = ember_profile_set_differential(d, ember_profile_sample_type(after),
                                             ember_profile_unit(after));
    if (!err)
        err = ember_profile_rescale(d, dec);
    struct side b = {before, 0, ember_pow10(dec - bd), 0, 0};
    struct side a = {after, 1, ember_pow10(dec - ad), 0, 0};
    int64_t bt = ember_profile_total(before, ember_profile_selected(before));
    int64_t at = ember_profile_total(after, ember_profile_selected(after));
    if (o->normalize && bt && at) {
        b.num = (__int128)at * a.scale; /* both totals at dst precision */
        b.den = (__int128)bt * b.scale;
    }
    if (!err)
        err = add_side(d, &b, o->strip_hex);
    if (!err)
        err = add_side(d, &a, o->strip_hex);
    if (err) {
        ember_profile_free(d);
        return err;
    }
    *out = d;
    return 0;
}

/* Stacks compare by the names their views show ("leaf:file.c:12" with
 * --srcline, "f_[k]" with --kernel): the difference is of what is drawn. */
int ember_profile_diff(const struct ember_profile *before, const struct ember_profile *after,
                       const struct ember_diff_opts *o, struct ember_profile **out)
{
    struct ember_profile *nb = NULL, *na = NULL;
    int err = ember_profile_names(before, &nb);
    if (!err)
        err = ember_profile_names(after, &na);
    if (!err)
        err = diff_of(nb ? nb : before, na ? na : after, o, out);
    ember_profile_free(nb);
    ember_profile_free(na);
    return err;
}

/* before becomes the differential profile in place: its selected value,
 * scaled (and normalized), as value 0, its nodes keeping their indices as
 * add_side would give them, then after's added as value 1. One tree less
 * than ember_profile_diff. Only where the result is the same: add_side
 * copies frames by name, renamed by --strip-hex, without their places,
 * and as the folded view spells them (';' as ':'). */
int ember_profile_diff_into(struct ember_profile *before, const struct ember_profile *after,
                            const struct ember_diff_opts *o)
{
    if (o->strip_hex || !ember_profile_is_names(before))
        return -EINVAL;
    struct ember_profile *named = NULL; /* after as its view's names, if they differ */
    int err = ember_profile_names(after, &named);
    if (err)
        return err;
    const struct ember_profile *a = named ? named : after;
    unsigned bd = ember_profile_decimals(before), ad = ember_profile_decimals(a);
    unsigned dec = bd > ad ? bd : ad;
    struct ember_decimal norm = {ember_profile_total(a, ember_profile_selected(a)), ad};
    err = ember_profile_to_before(before, ember_profile_sample_type(a), ember_profile_unit(a), dec,
                                  o->normalize ? &norm : NULL);
    struct side as = {a, 1, ember_pow10(dec - ad), 0, 0};
    if (!err)
        err = add_side(before, &as, false);
    ember_profile_free(named);
    return err;
}
