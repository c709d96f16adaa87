/*
 * stack_diff.h - what the reading of a stack diff's two inputs
 * (transform/stack_diff_read.c, which runs the folded scanner) asks of
 * its table of stacks (stack_diff.c) (library-internal). The table is the
 * model's: it keeps stacks over a frame table of names.
 *
 * Invariants: side is 0 (BEFORE) or 1 (AFTER); every function runs on the
 * caller's thread except ember_stack_diff_split, which only reads sd's
 * options.
 */
#ifndef EMBER_MODEL_STACK_DIFF_H
#define EMBER_MODEL_STACK_DIFF_H

#include "ember/model.h"
#include "model/folded_line.h"

/* A line to come: its stack's slot fetched. */
void ember_stack_diff_hint(const struct ember_stack_diff *sd, const struct ember_folded_line *l);
/* A line of one side's input, as the folded reader adds it to a profile. */
int ember_stack_diff_line(struct ember_stack_diff *sd, unsigned side,
                          const struct ember_folded_line *l);
/* The ends of the names of l's stack and their hashes, into ends and
 * hashes (room for EMBER_SPLIT_SLACK more than its length); 0 when the
 * stack must be stripped first (done then by ember_stack_diff_line). */
size_t ember_stack_diff_split(const struct ember_stack_diff *sd, const struct ember_folded_line *l,
                              size_t *ends, uint64_t *hashes);
/* Does the side weigh nothing (no samples, or samples of weight 0)? */
bool ember_stack_diff_weightless(const struct ember_stack_diff *sd, unsigned side);

#endif
