/*
 * pow10.h - 10^n as a 64-bit integer, for weights kept as integers scaled
 * by a number of decimals (the profile's values, diffs, folded weights).
 *
 * Invariant: n <= 18, the largest power of ten an int64_t holds; callers
 * keep decimals within EMBER_MAX_DECIMALS and differences of them.
 */
#ifndef EMBER_BASE_POW10_H
#define EMBER_BASE_POW10_H

#include <stdint.h>

static inline int64_t ember_pow10(unsigned n)
{
    static const int64_t table[] = {1,
                                    10,
                                    100,
                                    1000,
                                    10000,
                                    100000,
                                    1000000,
                                    10000000,
                                    100000000,
                                    1000000000,
                                    10000000000,
                                    100000000000,
                                    1000000000000,
                                    10000000000000,
                                    100000000000000,
                                    1000000000000000,
                                    10000000000000000,
                                    100000000000000000,
                                    1000000000000000000};
    return table[n];
}

#endif
