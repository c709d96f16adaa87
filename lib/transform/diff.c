/*
 * diff.c - two profiles as one differential profile: every stack of either
 * with its weight before (metric 0) and after (metric 1), what
 * FlameGraph's difffolded.pl computes and flamegraph.pl draws red and blue.
 *
 * Nodes are copied in index order, so a node's parent is always mapped
 * before it. --normalize scales BEFORE to AFTER's total and truncates at
 * the profile's precision, as difffolded.pl -n does (int()); --strip-hex
 * writes every 0x-prefixed hex number in a name as "0x...", so that stacks
 * that differ only by addresses compare equal.
 */
#include "ember/transform.h"
#include "model/profile_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* name with hex numbers as "0x..." into buf (len + 1 bytes at least). */
static size_t strip_hex(const char *s, size_t n, char *buf)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (i + 2 < n && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X') && is_hex(s[i + 2])) {
            i += 2;
            while (i < n && is_hex(s[i]))
                i++;
            memcpy(buf + o, "0x...", 5);
            o += 5;
        } else {
            buf[o++] = s[i++];
        }
    }
    return o;
}

struct side {
    const struct ember_profile *src;
    unsigned metric;
    int64_t scale;     /* 10^(dst decimals - src decimals) */
    __int128 num, den; /* normalize: times num / den (den 0: no) */
};

static int add_side(struct ember_profile *dst, const struct side *s, bool hex)
{
    const struct ember_profile *src = s->src;
    uint32_t *map = malloc((size_t)src->nnodes * sizeof(*map));
    char *buf = NULL;
    size_t bcap = 0;
    int err = map ? 0 : -ENOMEM;
    if (map)
        map[0] = EMBER_ROOT;
    for (uint32_t n = 1; n < src->nnodes && !err; n++) {
        const struct ember_node *sn = &src->nodes[n];
        const char *name = src->frames.str[sn->frame];
        size_t len = src->frames.len[sn->frame];
        if (hex && memmem(name, len, "0x", 2)) {
            if (bcap < len * 3 + 1) { /* "0x1" grows to "0x..." */
                free(buf);
                bcap = len * 3 + 1;
                if (!(buf = malloc(bcap))) {
                    err = -ENOMEM;
                    break;
                }
            }
            len = strip_hex(name, len, buf);
            name = buf;
        }
        uint32_t frame;
        err = ember_frames_intern(&dst->frames, name, len, &frame);
        if (!err)
            err = ember_profile_child_fast(dst, map[sn->parent], frame, &map[n]);
        int64_t v = src->self[src->selected][n];
        if (err || !v)
            continue;
        if (__builtin_mul_overflow(v, s->scale, &v))
            err = -ERANGE;
        else if (s->den)
            v = (int64_t)(v * s->num / s->den);
        if (!err && v)
            err = ember_profile_add_raw(dst, map[n], s->metric, v);
    }
    free(buf);
    free(map);
    return err;
}

static int64_t pow10i(unsigned n)
{
    int64_t v = 1;
    while (n--)
        v *= 10;
    return v;
}

static int diff_of(const struct ember_profile *before, const struct ember_profile *after,
                   const struct ember_diff_opts *o, struct ember_profile **out)
{
    struct ember_profile *d = ember_profile_new();
    if (!d)
        return -ENOMEM;
    unsigned dec = before->decimals > after->decimals ? before->decimals : after->decimals;
    /* each side's selected value; the difference is in AFTER's unit */
    int err = ember_profile_set_differential(d, ember_profile_sample_type(after),
                                             ember_profile_unit(after));
    d->decimals = dec;
    struct side b = {before, 0, pow10i(dec - before->decimals), 0, 0};
    struct side a = {after, 1, pow10i(dec - after->decimals), 0, 0};
    int64_t bt = before->total[before->selected], at = after->total[after->selected];
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
