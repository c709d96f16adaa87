/*
 * color.h - flamegraph.pl's frame colours (library-internal).
 */
#ifndef EMBER_WRITE_COLOR_H
#define EMBER_WRITE_COLOR_H

#include "ember/write.h"

#include <stdbool.h>
#include <stddef.h>

struct ember_rgb {
    int r, g, b;
};

enum ember_color_mode { EMBER_COLOR_NAME, EMBER_COLOR_HASH, EMBER_COLOR_RANDOM };

/* The colour of a frame named name (as views spell it) of kind (its
 * record's, when the name shows it; else USER: then FlameGraph's
 * annotations in the name decide) in palette. For EMBER_COLOR_RANDOM, *rng
 * is the generator's state. */
struct ember_rgb ember_color(const char *palette, enum ember_color_mode mode, const char *name,
                             size_t len, enum ember_frame_kind kind, unsigned long long *rng);

/* Differential colour: red when delta > 0, blue when < 0, white at 0. */
struct ember_rgb ember_color_scale(double delta, double maxdelta);

/* Exposed for tests: flamegraph.pl's namehash() and its name-seeded rand(). */
double ember_namehash(const char *name, size_t len);
double ember_name_rand(const char *name, size_t len);

#endif
