/*
 * unit_random.h - the unit tests' random numbers: xorshift64 (13, 7, 17),
 * the same sequence for the same seed in every run, so that a failure
 * repeats. The seed must not be 0 (the sequence would stay 0).
 */
#ifndef EMBER_UNIT_RANDOM_H
#define EMBER_UNIT_RANDOM_H

#include <stdint.h>

static __attribute__((unused)) uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#endif
