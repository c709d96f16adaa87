/*
 * speedscope.c - speedscope's file format (its file-format-spec): the
 * frames in use once in "shared", then one profile.
 *
 * Sampled (the default): "samples" lists each distinct stack once, root
 * first, in folded order, and "weights" their weights, so the two arrays
 * come from one walk (weights are kept until the samples are written:
 * memory grows with distinct stacks). Evented (the profile kept its arrival
 * order): open/close events from the flame chart layout, "at" the running
 * weight, which never decreases, and every open is closed in order, as the
 * importer demands. Units: speedscope knows nanoseconds to seconds and
 * bytes; anything else is "none" (plain numbers).
 */
#include "write/write_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct speedscope {
    struct ember_writer w;
    const struct ember_profile *p;
    struct ember_used_frames used;
    unsigned metric;
    int64_t *weights;
    size_t nweights, wcap;
    bool first;
};

static const char *speedscope_unit(const struct ember_profile *p)
{
    static const char *const units[] = {"nanoseconds", "microseconds", "milliseconds", "seconds",
                                        "bytes"};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(ember_profile_unit(p), units[i]) == 0)
            return units[i];
    return "none";
}

static void put_header(struct speedscope *s, const struct ember_convert_opts *o)
{
    struct ember_writer *w = &s->w;
    ember_writer_puts(w, "{\"$schema\":\"" EMBER_SPEEDSCOPE_SCHEMA "\",\"exporter\":");
    ember_json_string(w, o->exporter, strlen(o->exporter));
    ember_writer_puts(w, ",\"name\":");
    ember_json_string(w, o->name, strlen(o->name));
    ember_writer_puts(w, ",\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[");
    for (uint32_t i = 0; i < s->used.count; i++) {
        struct ember_frame fr;
        ember_profile_frame(s->p, s->used.frames[i], &fr);
        ember_writer_puts(w, i ? ",\n{\"name\":" : "\n{\"name\":");
        ember_json_string(w, fr.name, fr.name_len);
        if (fr.file) { /* where the function is, when known: speedscope shows it */
            ember_writer_puts(w, ",\"file\":");
            ember_json_string(w, fr.file, fr.file_len);
        }
        if (fr.line)
            ember_writer_printf(w, ",\"line\":%u", (unsigned)fr.line);
        if (fr.column)
            ember_writer_printf(w, ",\"col\":%u", (unsigned)fr.column);
        ember_writer_puts(w, "}");
    }
    ember_writer_puts(w, "]},\n\"profiles\":[{\"type\":");
}

/* The profile's fields after "type": name, unit, start and end. */
static void put_profile_head(struct speedscope *s, const char *type,
                             const struct ember_convert_opts *o, int64_t end)
{
    struct ember_writer *w = &s->w;
    ember_writer_printf(w, "\"%s\",\"name\":", type);
    ember_json_string(w, o->name, strlen(o->name));
    ember_writer_printf(w,
                        ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":", speedscope_unit(s->p));
    ember_put_weight(w, end, ember_profile_decimals(s->p));
}

static int put_sample(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct speedscope *s = ctx;
    int64_t v = self[s->metric];
    if (v == 0)
        return 0; /* a stack of the other metric only */
    if (EMBER_VEC_RESERVE(s->weights, s->wcap, s->nweights + 1) < 0)
        return -ENOMEM;
    s->weights[s->nweights++] = v;
    ember_writer_puts(&s->w, s->first ? "\n[" : ",\n[");
    s->first = false;
    for (size_t i = 0; i < depth; i++) {
        if (i)
            ember_writer_put(&s->w, ",", 1);
        ember_put_u64(&s->w, s->used.map[ember_profile_node_frame(s->p, path[i])]);
    }
    ember_writer_put(&s->w, "]", 1);
    return s->w.err;
}

static int write_sampled(struct speedscope *s, const struct ember_convert_opts *o)
{
    put_profile_head(s, "sampled", o, ember_profile_total(s->p, s->metric));
    ember_writer_puts(&s->w, ",\n\"samples\":[");
    s->first = true;
    int err = ember_profile_walk(s->p, put_sample, s);
    if (err)
        return err;
    ember_writer_puts(&s->w, "],\n\"weights\":[");
    for (size_t i = 0; i < s->nweights; i++) {
        if (i)
            ember_writer_put(&s->w, ",", 1);
        ember_put_weight(&s->w, s->weights[i], ember_profile_decimals(s->p));
    }
    ember_writer_puts(&s->w, "]}]}\n");
    return 0;
}

static int put_event(struct speedscope *s, char type, uint32_t node, int64_t at)
{
    ember_writer_puts(&s->w, s->first ? "\n{\"type\":\"" : ",\n{\"type\":\"");
    s->first = false;
    ember_writer_put(&s->w, &type, 1);
    ember_writer_puts(&s->w, "\",\"frame\":");
    ember_put_u64(&s->w, s->used.map[ember_profile_node_frame(s->p, node)]);
    ember_writer_puts(&s->w, ",\"at\":");
    ember_put_weight(&s->w, at, ember_profile_decimals(s->p));
    ember_writer_put(&s->w, "}", 1);
    return s->w.err;
}

static int on_open(void *ctx, uint32_t node, int64_t at)
{
    return put_event(ctx, 'O', node, at);
}

static int on_close(void *ctx, uint32_t node, int64_t start, int64_t end)
{
    (void)start;
    return put_event(ctx, 'C', node, end);
}

static int chart_stack(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct ember_chart *c = ctx;
    struct speedscope *s = c->ctx;
    return ember_chart_step(c, path, depth, self[s->metric]);
}

struct seq_end {
    unsigned metric;
    int64_t end;
};

static int add_positive(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct seq_end *e = ctx;
    (void)path;
    (void)depth;
    return self[e->metric] > 0 && __builtin_add_overflow(e->end, self[e->metric], &e->end) ? -ERANGE
                                                                                           : 0;
}

/* endValue, written before the events, is where the last one closes: the
 * sum of the sequence's weights (the chart skips those that are not
 * positive). */
static int write_evented(struct speedscope *s, const struct ember_convert_opts *o)
{
    struct ember_chart c = {.on_open = on_open, .on_close = on_close, .ctx = s};
    struct seq_end se = {s->metric, 0};
    int serr = ember_profile_walk_sequence(s->p, add_positive, &se);
    if (serr)
        return serr;
    int64_t end = se.end;
    put_profile_head(s, "evented", o, end);
    ember_writer_puts(&s->w, ",\n\"events\":[");
    s->first = true;
    int err = ember_profile_walk_sequence(s->p, chart_stack, &c);
    int ferr = ember_chart_finish(&c);
    if (err || ferr)
        return err ? err : ferr;
    ember_writer_puts(&s->w, "]}]}\n");
    return 0;
}

static int write_speedscope(const struct ember_profile *p, const struct ember_convert_opts *opts,
                            const struct ember_sink *out, struct ember_diag *d)
{
    struct ember_convert_opts o = ember_convert_opts_fill(opts);
    struct speedscope *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->p = p;
    s->metric = ember_convert_metric(p);
    ember_writer_init(&s->w, out);
    int err = ember_convert_check_positive(p, s->metric, "speedscope", d);
    if (!err)
        err = ember_used_frames(p, &s->used);
    if (!err) {
        put_header(s, &o);
        err = ember_profile_has_sequence(p) ? write_evented(s, &o) : write_sampled(s, &o);
    }
    int ferr = ember_writer_flush(&s->w);
    ember_used_frames_release(&s->used);
    free(s->weights);
    free(s);
    return err ? err : ferr;
}

int ember_write_speedscope(const struct ember_profile *p, const struct ember_convert_opts *opts,
                           const struct ember_sink *out, struct ember_diag *d)
{
    struct ember_profile *named; /* speedscope's frames are functions, with their place */
    int err = ember_profile_function_names(p, &named);
    if (!err)
        err = write_speedscope(named ? named : p, opts, out, d);
    ember_profile_free(named);
    return err;
}
