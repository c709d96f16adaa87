/*
 * stack_diff_read.c - the two folded inputs of a stack diff read into its
 * table (ember_stack_diff_read in ember/transform.h): the folded scanner's
 * calls, each passed on to the model's table (model/stack_diff.h). Here,
 * above the readers, so that the model below them need not include them.
 *
 * Invariants: input 0 is BEFORE, input 1 AFTER; an input that weighs
 * nothing is an error, as for any input read.
 */
#include "ember/transform.h"
#include "read/folded_scan.h"
#include "model/split.h"
#include "model/stack_diff.h"

/* One input's lines into sd: side 0 BEFORE, 1 AFTER. */
struct sd_reader {
    struct ember_stack_diff *sd;
    unsigned side;
};

/* the reading thread's room for a split, as ember_stack_text_split needs */
_Static_assert(EMBER_FOLDED_SPLIT_ROOM(0) >= EMBER_SPLIT_SLACK, "split room");

/* (ember_folded_calls.split: on the reading thread, while the merge is
 * behind.) */
static size_t sd_split(const void *ctx, const struct ember_folded_line *l, size_t *ends,
                       uint64_t *hashes)
{
    const struct sd_reader *r = ctx;
    return ember_stack_diff_split(r->sd, l, ends, hashes);
}

static void sd_hint(void *ctx, const struct ember_folded_line *l)
{
    const struct sd_reader *r = ctx;
    ember_stack_diff_hint(r->sd, l);
}

static int sd_line(void *ctx, const struct ember_folded_line *l)
{
    struct sd_reader *r = ctx;
    return ember_stack_diff_line(r->sd, r->side, l);
}

static int sd_end(void *ctx, struct ember_input *in, const struct ember_read_stats *st,
                  struct ember_diag *d)
{
    const struct sd_reader *r = ctx;
    return ember_format_check_samples(&ember_format_folded, ember_input_name(in), st,
                                      ember_stack_diff_weightless(r->sd, r->side), d);
}

int ember_stack_diff_read(struct ember_stack_diff *sd, struct ember_input *in[2],
                          const struct ember_read_opts *ro, struct ember_read_stats *st,
                          struct ember_diag *d)
{
    static const struct ember_folded_calls calls = {sd_hint, sd_line, sd_end, sd_split};
    struct sd_reader r[2] = {{sd, 0}, {sd, 1}};
    const struct ember_folded_source src[2] = {{in[0], &st[0], &r[0]}, {in[1], &st[1], &r[1]}};
    return ember_folded_scan_all(src, 2, ro, &calls, d);
}
