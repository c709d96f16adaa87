/*
 * unit_profile.h - what the model's unit tests share: a small random
 * generator (xorshift, the same sequence in every run), names interned by
 * number, stacks added from folded text, the folded text a profile writes,
 * and a profile of two values with a decimal weight.
 *
 * Invariant: every helper asserts (cmocka) on a failure of the library, so
 * a test reads as its checks alone.
 */
#ifndef EMBER_UNIT_PROFILE_H
#define EMBER_UNIT_PROFILE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ember/read.h"
#include "ember/write.h"
#include "ember/model.h"
#include "unit_random.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

/* A number in [0, n), from one sequence for the whole test. */
static __attribute__((unused)) uint32_t below(uint32_t n)
{
    return (uint32_t)(next_random(&rng) % n);
}

static __attribute__((unused)) uint32_t *intern_names(struct ember_profile *p, uint32_t n)
{
    uint32_t *ids = malloc(n * sizeof(*ids));
    char name[32];
    for (uint32_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "f%u", i);
        assert_int_equal(ember_profile_intern(p, name, strlen(name), &ids[i]), 0);
    }
    return ids;
}

/* A profile of two values, the second selected, weights on a few stacks
 * with a decimal in one and the empty stack's weight on the root. */
static __attribute__((unused)) struct ember_profile *two_values(int64_t scale)
{
    struct ember_profile *p = ember_profile_new();
    unsigned v0, v1;
    assert_int_equal(ember_profile_value(p, "cpu", "nanoseconds", &v0), 0);
    assert_int_equal(ember_profile_value(p, "samples", "count", &v1), 0);
    ember_profile_select_index(p, v1);
    uint32_t *ids = intern_names(p, 5), node;
    const uint32_t stacks[][3] = {{0, 1, 2}, {0, 1, 3}, {0, 4, 2}, {4, 4, 4}};
    for (int i = 0; i < 4; i++) {
        uint32_t fr[3] = {ids[stacks[i][0]], ids[stacks[i][1]], ids[stacks[i][2]]};
        int64_t w[2] = {1000 * (i + 1), scale * (i + 2)};
        assert_int_equal(ember_profile_add_stack(p, fr, 3 - (i == 2), EMBER_ROOT_FIRST, w, &node),
                         0);
    }
    assert_int_equal(ember_profile_add_decimal(p, node, v1, (struct ember_decimal){25, 1}), 0);
    assert_int_equal(ember_profile_add(p, EMBER_ROOT, v1, 7), 0);
    free(ids);
    return p;
}

static __attribute__((unused)) uint32_t add_stack(struct ember_profile *p, const char *folded,
                                                  int64_t w)
{
    uint32_t node = EMBER_ROOT;
    char *copy = strdup(folded), *save = NULL;
    for (char *f = strtok_r(copy, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
        uint32_t frame;
        assert_int_equal(ember_profile_intern(p, f, strlen(f), &frame), 0);
        assert_int_equal(ember_profile_child(p, node, frame, &node), 0);
    }
    free(copy);
    assert_int_equal(ember_profile_add(p, node, 0, w), 0);
    return node;
}

struct text {
    char buf[4096];
    size_t len;
};

static __attribute__((unused)) int text_write(void *ctx, const char *buf, size_t len)
{
    struct text *t = ctx;
    assert_true(t->len + len < sizeof(t->buf));
    memcpy(t->buf + t->len, buf, len);
    t->len += len;
    t->buf[t->len] = '\0';
    return 0;
}

static __attribute__((unused)) const char *folded(const struct ember_profile *p, struct text *t)
{
    struct ember_sink sink = {text_write, t};
    t->len = 0;
    t->buf[0] = '\0';
    assert_int_equal(ember_write_folded(p, &sink), 0);
    return t->buf;
}

#endif
