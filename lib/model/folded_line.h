/*
 * folded_line.h - one line of folded text as a reader hands it on: the
 * folded scanner (read/folded_scan.c) makes them, the folded reader and
 * the stack diff (stack_diff.c) take them (library-internal).
 *
 * Invariants: stack points into the input, without its trailing ';';
 * hash is ember_stack_text_key of [stack, stack + len); when names is not
 * 0, ends and name_hash hold that many names' ends and hashes.
 */
#ifndef EMBER_MODEL_FOLDED_LINE_H
#define EMBER_MODEL_FOLDED_LINE_H

#include "ember/model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One line of folded input with a count: the stack (its trailing ';'
 * dropped), its count, and for a differential line ("stack BEFORE AFTER")
 * the count before. */
struct ember_folded_line {
    const char *stack;
    size_t len;
    struct ember_decimal count;
    struct ember_decimal before; /* diff lines only */
    bool diff;
    uint64_t hash[2]; /* the stack's ember_stack_text_key */
    /* the scanner's split (ember_folded_calls.split) on the reading thread
     * (names 0: not done) */
    const size_t *ends;
    const uint64_t *name_hash;
    size_t names;
};

#endif
