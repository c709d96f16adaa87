/*
 * progress.c - "ember collapse: big.txt: 412 MB of 2.0 GB (20%), 980 MB/s"
 * on stderr, redrawn in place, for inputs that take more than a second,
 * only when stderr is a terminal.
 */
#include "cli.h"
#include "ember/base.h"

#include <stdio.h>
#include <unistd.h>

void cli_progress_init(struct cli_progress *pr)
{
    pr->enabled = isatty(STDERR_FILENO);
    pr->shown = false;
    pr->last = 0;
    clock_gettime(CLOCK_MONOTONIC, &pr->start);
}

static double elapsed(const struct cli_progress *pr)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - pr->start.tv_sec) + (now.tv_nsec - pr->start.tv_nsec) / 1e9;
}

void cli_progress_cb(void *ctx, const struct ember_input *in)
{
    struct cli_progress *pr = ctx;
    if (!pr->enabled)
        return;
    double t = elapsed(pr);
    if (t < 1.0 || t - pr->last < 0.25)
        return;
    pr->last = t;
    double mb = (double)ember_input_consumed(in) / 1e6;
    int64_t size = ember_input_size(in);
    fprintf(stderr, "\r\033[K%s: %s: %.0f MB", cli_command_name(), ember_input_name(in), mb);
    if (size > 0)
        fprintf(stderr, " of %.0f MB (%.0f%%)", (double)size / 1e6,
                100.0 * mb * 1e6 / (double)size);
    fprintf(stderr, ", %.0f MB/s", mb / t);
    pr->shown = true;
}

void cli_progress_done(struct cli_progress *pr)
{
    if (pr->shown)
        fprintf(stderr, "\r\033[K");
    pr->shown = false;
}
