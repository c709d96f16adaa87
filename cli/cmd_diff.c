/*
 * cmd_diff.c - `ember diff BEFORE AFTER`: a differential flame graph (red
 * grew, blue shrank; frames sized by AFTER), or the "stack before after"
 * lines of FlameGraph's difffolded.pl.
 *
 * A graph sized by AFTER cannot show what AFTER no longer does: FlameGraph's
 * known blind spot. ember says how much of BEFORE vanished, and --vanished
 * FILE draws the second pass FlameGraph's author recommends: sized by
 * BEFORE, hues negated, so the vanished stacks are there in blue.
 *
 * Two folded inputs with no transform need no profile each: their lines
 * are merged by stack (ember_stack_diff), the same bytes in a fraction of
 * the time and memory; the graph is drawn from the one profile built of
 * them (but --vanished, which needs both inputs as profiles).
 */
#include "cli.h"
#include "commands.h"
#include "ember/write.h"
#include "ember/base.h"
#include "ember/transform.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char usage[] = "ember diff [options] BEFORE AFTER";
static const char description[] =
    "Compares two profiles (any input ember reads, each transformed by the same options)\n"
    "and draws a differential flame graph: frames are sized by AFTER and coloured red where\n"
    "they grew, blue where they shrank. --folded prints the 'stack before after' lines of\n"
    "difffolded.pl instead. Stacks gone from AFTER are invisible in a graph sized by AFTER:\n"
    "--vanished FILE draws them (sized by BEFORE, hues negated).";

struct diff_args {
    const char *out, *vanished, *title;
    bool folded;
    struct ember_diff_opts d;
};

static int read_side(struct cli_reader *r, char *file, struct ember_profile **p)
{
    if (!(*p = ember_profile_new())) {
        cli_error("out of memory");
        return 1;
    }
    return cli_read_profile(r, *p, &file, 1);
}

/* Is path folded stacks? Detection opens files again, so standard input
 * is only when --format says so. */
static bool is_folded(const struct cli_reader *r, const char *path)
{
    if (strcmp(r->format, "folded") == 0)
        return true;
    if (strcmp(r->format, "auto") != 0 || !path || strcmp(path, "-") == 0)
        return false;
    struct ember_input *in;
    struct ember_diag d;
    const struct ember_format *fmt = NULL;
    ember_diag_clear(&d);
    if (ember_input_open(&in, path, &d) != 0)
        return false; /* the reading that follows says why */
    bool folded = ember_format_detect(in, &fmt, &d) == 0 && strcmp(fmt->name, "folded") == 0;
    ember_input_close(in);
    return folded;
}

/* Both inputs into sd (the second read while the first is merged). */
static int read_folded(struct cli_reader *r, struct ember_stack_diff *sd, char **files)
{
    struct ember_diag d;
    struct ember_input *in[2] = {NULL, NULL};
    struct ember_read_stats st[2];
    memset(st, 0, sizeof(st));
    ember_diag_clear(&d);
    int err = ember_input_open(&in[0], files[0], &d);
    if (!err)
        err = ember_input_open(&in[1], files[1], &d);
    if (!err) {
        err = ember_stack_diff_read(sd, in, &r->ro, st, &d);
        cli_progress_done(&r->progress);
        cli_warnings_flush(&r->warnings);
    }
    for (unsigned i = 0; i < 2; i++)
        if (in[i])
            ember_input_close(in[i]);
    if (err)
        cli_diag_error(&d, err);
    return err ? 1 : 0;
}

/* Says how much of BEFORE is in stacks AFTER does not have. */
static void report_vanished(const struct ember_profile *d, bool drawn)
{
    int64_t gone = 0, before = ember_profile_total(d, 0);
    uint32_t stacks = 0;
    for (uint32_t n = 1; n < ember_profile_node_count(d); n++)
        if (ember_profile_self(d, n, 0) > 0 && ember_profile_self(d, n, 1) == 0) {
            gone += ember_profile_self(d, n, 0);
            stacks++;
        }
    if (stacks && !drawn)
        cli_warning("%u stacks (%.1f%% of BEFORE) are gone from AFTER and cannot show in a graph "
                    "sized by AFTER: --vanished FILE draws them",
                    stacks, before ? 100.0 * (double)gone / (double)before : 0.0);
}

static int draw(const struct diff_args *a, const struct ember_profile *before,
                const struct ember_profile *after, const struct ember_profile *d)
{
    struct ember_flame_opts fo;
    char title[EMBER_UNIT_MAX + 48];
    ember_flame_opts_default(&fo);
    /* the title says when sizes are bytes, and which value they are */
    snprintf(title, sizeof(title), "Differential Memory Flame Graph: %s",
             ember_profile_sample_type(d));
    fo.title = a->title                                      ? a->title
               : strcmp(ember_profile_unit(d), "bytes") == 0 ? title
                                                             : "Differential Flame Graph";
    int ret = cli_render_flame(d, &fo, a->out);
    if (ret || !a->vanished)
        return ret;
    struct ember_profile *swapped;
    int err = ember_profile_diff(after, before, &a->d, &swapped);
    if (err) {
        cli_error("cannot compare the profiles: %s", strerror(-err));
        return 1;
    }
    fo.negate = true;
    fo.title = "Differential Flame Graph: sized by BEFORE (blue: gone or shrunk)";
    ret = cli_render_flame(swapped, &fo, a->vanished);
    ember_profile_free(swapped);
    return ret;
}

/* Two folded inputs: their lines merged by stack, no profile read. The
 * lines are written as they are; the graph is drawn from one profile built
 * of them. */
static int merged_diff(struct cli_reader *r, const struct diff_args *a, char **files)
{
    struct ember_stack_diff *sd;
    struct ember_profile *d = NULL;
    if (ember_stack_diff_new(&sd, &a->d) < 0) {
        cli_error("out of memory");
        return 1;
    }
    r->ro.warn = cli_warn_cb;
    r->ro.warn_ctx = &r->warnings;
    cli_progress_init(&r->progress);
    r->ro.progress = cli_progress_cb;
    r->ro.progress_ctx = &r->progress;
    if (!r->ro.threads) /* a thread reads while this one merges */
        r->ro.threads = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 2 : 1;
    int ret = read_folded(r, sd, files);
    int err = ret ? 0 : a->folded ? ember_stack_diff_prepare(sd) : ember_stack_diff_profile(sd, &d);
    if (err) {
        cli_error("cannot compare the profiles: %s", strerror(-err));
        ret = 1;
    }
    struct cli_output o;
    if (!ret && a->folded && cli_output_open(&o, a->out) < 0)
        ret = 1;
    if (!ret && a->folded) {
        struct ember_sink sink = cli_output_sink(&o);
        ret = cli_output_finish(&o, ember_stack_diff_write(sd, &sink), NULL);
    }
    ember_stack_diff_free(sd);
    if (!ret && d) {
        report_vanished(d, false);
        ret = draw(a, NULL, NULL, d);
    }
    ember_profile_free(d);
    return ret;
}

int cmd_diff(int argc, char **argv)
{
    struct cli_reader r;
    struct diff_args a = {.title = NULL};
    cli_reader_init(&r);
    const struct option opts[] = {
        {OPT_STRING, "output", 'o', &a.out, "FILE", "write to FILE (atomically)", "stdout", NULL,
         false},
        {OPT_FLAG, "folded", 0, &a.folded, NULL, "print 'stack before after' lines (difffolded)",
         NULL, NULL, false},
        {OPT_FLAG, "normalize", 'n', &a.d.normalize, NULL, "scale BEFORE to AFTER's total", NULL,
         NULL, false},
        {OPT_FLAG, "strip-hex", 's', &a.d.strip_hex, NULL, "compare hex addresses as 0x...", NULL,
         NULL, false},
        {OPT_STRING, "vanished", 0, &a.vanished, "FILE",
         "also draw the graph sized by BEFORE, where vanished stacks show", NULL, NULL, false},
        {OPT_STRING, "title", 0, &a.title, "TEXT", "the graph's title",
         "Differential Flame Graph (\"Differential Memory Flame Graph: VALUE\" for sizes)", NULL,
         false},
        CLI_READ_OPTIONS(r),
        OPT_END_(),
    };
    int nfiles = parse_options(argc, argv, opts, usage, description);
    if (nfiles != 2) {
        if (nfiles >= 0)
            cli_error("expected two profiles, BEFORE and AFTER (got %d)", nfiles);
        cli_reader_release(&r);
        return nfiles == -2 ? 0 : EXIT_USAGE;
    }
    if ((a.folded || !a.vanished) && !r.transform && is_folded(&r, argv[0]) &&
        is_folded(&r, argv[1])) {
        int ret = merged_diff(&r, &a, argv);
        cli_reader_release(&r);
        return ret;
    }
    struct ember_profile *before = NULL, *after = NULL, *d = NULL;
    r.verb = "compare";
    int ret = read_side(&r, argv[0], &before);
    if (!ret)
        ret = read_side(&r, argv[1], &after);
    if (!ret)
        cli_check_units(ember_profile_sample_type(before), ember_profile_unit(before), argv[0],
                        after, argv[1], "comparing them is meaningless");
    int err = 0;
    if (!ret) {
        /* BEFORE becomes the differential profile where it can: one tree less */
        err = a.vanished ? -EINVAL : ember_profile_diff_into(before, after, &a.d);
        if (!err) {
            d = before;
            before = NULL;
            ember_profile_free(after);
            after = NULL;
        } else if (err == -EINVAL) {
            err = ember_profile_diff(before, after, &a.d, &d);
        }
    }
    if (err) {
        cli_error("cannot compare the profiles: %s", strerror(-err));
        ret = 1;
    }
    if (!ret && a.folded) {
        ret = cli_write_folded(d, a.out);
    } else if (!ret) {
        report_vanished(d, a.vanished != NULL);
        ret = draw(&a, before, after, d);
    }
    ember_profile_free(before);
    ember_profile_free(after);
    ember_profile_free(d);
    cli_reader_release(&r);
    return ret;
}
