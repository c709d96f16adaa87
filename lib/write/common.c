/*
 * common.c - what the writers share (see write_impl.h): JSON strings,
 * numbers, the frames in use, weights as microseconds, and the flame chart
 * layout.
 *
 * JSON strings (base/escape.h): \n, \t and \r written short; each maximal
 * prefix of a valid UTF-8 sequence that is cut or wrong (Unicode's "maximal
 * subpart", what Python's errors="replace" does) becomes one U+FFFD.
 */
#include "write/write_impl.h"
#include "base/diag.h"
#include "base/escape.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void ember_convert_opts_default(struct ember_convert_opts *o)
{
    o->name = "profile";
    o->exporter = "ember";
    o->separator = ',';
}

struct ember_convert_opts ember_convert_opts_fill(const struct ember_convert_opts *o)
{
    struct ember_convert_opts r;
    ember_convert_opts_default(&r);
    if (o && o->name)
        r.name = o->name;
    if (o && o->exporter)
        r.exporter = o->exporter;
    if (o && o->separator)
        r.separator = o->separator;
    return r;
}

void ember_json_string(struct ember_writer *w, const char *s, size_t n)
{
    ember_writer_put(w, "\"", 1);
    ember_escape_json(w, s, n, EMBER_JSON_SHORT);
    ember_writer_put(w, "\"", 1);
}

void ember_put_u64(struct ember_writer *w, uint64_t v)
{
    char buf[24];
    size_t i = sizeof(buf);
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    ember_writer_put(w, buf + i, sizeof(buf) - i);
}

void ember_put_weight(struct ember_writer *w, int64_t v, unsigned decimals)
{
    if (decimals == 0 && v >= 0) {
        ember_put_u64(w, (uint64_t)v);
        return;
    }
    char buf[48];
    ember_writer_put(w, buf, ember_weight_format(buf, v, decimals));
}

int ember_used_frames(const struct ember_profile *p, struct ember_used_frames *u)
{
    uint32_t nf = ember_profile_frame_count(p);
    u->count = 0;
    u->map = malloc(((size_t)nf + 1) * sizeof(*u->map));
    u->frames = malloc(((size_t)nf + 1) * sizeof(*u->frames));
    if (!u->map || !u->frames) {
        ember_used_frames_release(u);
        return -ENOMEM;
    }
    memset(u->map, 0xff, ((size_t)nf + 1) * sizeof(*u->map));
    for (uint32_t n = 1; n < ember_profile_node_count(p); n++)
        u->map[ember_profile_node_frame(p, n)] = 0;
    for (uint32_t f = 0; f < nf; f++)
        if (u->map[f] == 0) {
            u->map[f] = u->count;
            u->frames[u->count++] = f;
        }
    return 0;
}

void ember_used_frames_release(struct ember_used_frames *u)
{
    free(u->map);
    free(u->frames);
    u->map = u->frames = NULL;
}

unsigned ember_convert_metric(const struct ember_profile *p)
{
    return ember_profile_is_differential(p) ? 1 : ember_profile_selected(p);
}

int ember_convert_check_positive(const struct ember_profile *p, unsigned metric, const char *what,
                                 struct ember_diag *d)
{
    for (uint32_t n = 1; n < ember_profile_node_count(p); n++)
        if (ember_profile_self(p, n, metric) < 0)
            return ember_diag_set(d, -EINVAL, "", 0,
                                  "%s cannot show negative weights (the profile has some: a "
                                  "difference of profiles?); use --to pprof, csv or folded",
                                  what);
    return 0;
}

struct ember_us ember_us_of(const struct ember_profile *p)
{
    static const struct {
        const char *unit;
        int exp10;
    } units[] = {{"nanoseconds", -3}, {"microseconds", 0}, {"milliseconds", 3}, {"seconds", 6}};
    struct ember_us u = {0, ember_profile_decimals(p)};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(ember_profile_unit(p), units[i].unit) == 0)
            u.exp10 = units[i].exp10;
    return u;
}

int ember_us_format(const struct ember_us *u, int64_t v, char *buf)
{
    int shift = u->exp10 - (int)u->decimals;
    if (shift < 0)
        return (int)ember_weight_format(buf, v, (unsigned)-shift);
    for (int i = 0; i < shift; i++)
        if (__builtin_mul_overflow(v, 10, &v))
            return -ERANGE;
    return (int)ember_weight_format(buf, v, 0);
}

/* ---- the flame chart layout ------------------------------------------- */

static int chart_close_to(struct ember_chart *c, size_t keep)
{
    int err = 0;
    while (c->depth > keep && !err) {
        c->depth--;
        err = c->on_close(c->ctx, c->open[c->depth], c->start[c->depth], c->now);
    }
    return err;
}

int ember_chart_step(struct ember_chart *c, const uint32_t *path, size_t depth, int64_t w)
{
    if (w <= 0)
        return 0;
    size_t same = 0;
    while (same < c->depth && same < depth && c->open[same] == path[same])
        same++;
    int err = chart_close_to(c, same);
    if (!err && depth > c->cap) {
        size_t cap = c->cap;
        if (EMBER_VEC_RESERVE(c->open, cap, depth) < 0 ||
            EMBER_VEC_RESERVE(c->start, c->cap, cap) < 0)
            return -ENOMEM;
        c->cap = cap;
    }
    for (; !err && c->depth < depth; c->depth++) {
        c->open[c->depth] = path[c->depth];
        c->start[c->depth] = c->now;
        err = c->on_open(c->ctx, path[c->depth], c->now);
    }
    if (!err && __builtin_add_overflow(c->now, w, &c->now))
        err = -ERANGE;
    return err;
}

int ember_chart_finish(struct ember_chart *c)
{
    int err = chart_close_to(c, 0);
    free(c->open);
    free(c->start);
    c->open = NULL;
    c->start = NULL;
    c->cap = 0;
    return err;
}
