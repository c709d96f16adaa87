/*
 * write_impl.h - what the writers of lib/write share (library-internal):
 * JSON strings, the frames in use, weights as time, and the flame chart
 * layout that turns a sequence of stacks into open/close events.
 */
#ifndef EMBER_WRITE_WRITE_IMPL_H
#define EMBER_WRITE_WRITE_IMPL_H

#include "ember/write.h"
#include "base/writer.h"
#include "ember/model.h"

/* The options with defaults for what o (possibly NULL) leaves unset. */
struct ember_convert_opts ember_convert_opts_fill(const struct ember_convert_opts *o);

/* n bytes of s as a JSON string, quotes included: escapes what JSON needs
 * escaped and replaces each maximal invalid UTF-8 sequence with U+FFFD. */
void ember_json_string(struct ember_writer *w, const char *s, size_t n);

/* An unsigned number in decimal. */
void ember_put_u64(struct ember_writer *w, uint64_t v);

/* A scaled weight as an exact decimal number. */
void ember_put_weight(struct ember_writer *w, int64_t v, unsigned decimals);

/* The frames some stack uses, numbered densely in frame order: map[frame]
 * is the dense index or UINT32_MAX; frames[index] the frame. Free both. */
struct ember_used_frames {
    uint32_t *map, *frames;
    uint32_t count;
};
int ember_used_frames(const struct ember_profile *p, struct ember_used_frames *u);
void ember_used_frames_release(struct ember_used_frames *u);

/* The metric single-valued formats write: the last one ("after"). */
unsigned ember_convert_metric(const struct ember_profile *p);

/* -EINVAL (d says why) when some stack of the metric has a negative
 * weight, which time-based viewers cannot draw. */
int ember_convert_check_positive(const struct ember_profile *p, unsigned metric, const char *what,
                                 struct ember_diag *d);

/* Weights as microseconds: a time unit's weights are converted, others
 * (samples, bytes) count 1 unit = 1 us. */
struct ember_us {
    int exp10; /* us = weight * 10^exp10, by the unit */
    unsigned decimals;
};
struct ember_us ember_us_of(const struct ember_profile *p);
/* The exact decimal of v (a scaled weight) in us into buf (48 bytes);
 * returns its length, or -ERANGE if it does not fit in 64 bits. */
int ember_us_format(const struct ember_us *u, int64_t v, char *buf);

/*
 * The flame chart layout: stacks in order, each lasting its weight, become
 * frames opened and closed. Consecutive stacks that share their first
 * nodes keep those frames open. Close calls come innermost first.
 */
struct ember_chart {
    uint32_t *open; /* nodes open, outermost first */
    int64_t *start; /* when each opened */
    size_t depth, cap;
    int64_t now;
    int (*on_open)(void *ctx, uint32_t node, int64_t at);
    int (*on_close)(void *ctx, uint32_t node, int64_t start, int64_t end);
    void *ctx;
};
/* Adds a stack of weight w (> 0; others are ignored). */
int ember_chart_step(struct ember_chart *c, const uint32_t *path, size_t depth, int64_t w);
/* Closes every open frame and frees the chart. */
int ember_chart_finish(struct ember_chart *c);

#endif
