/*
 * registry.c - the table of formats, choosing one for an input, and the
 * rules every reader keeps.
 *
 * Adding a format is adding its file and one row here. Probing order
 * matters where formats overlap: perf script text is tried before folded
 * stacks, DTrace last (its lines are the least distinctive).
 *
 * Probes see the first 64 KiB; a probe that needs a whole first line
 * (EMBER_PROBE_MORE) is shown more, up to that line's end, so that a valid
 * first line longer than the window is never "unknown". Every reader's
 * result goes through ember_format_read: an input without a sample, or a
 * profile whose samples all weigh nothing, is an error, whatever its
 * format; and a reader that finds its input cut short says so in one
 * wording (ember_format_truncated).
 */
#include "read/read_impl.h"
#include "base/chunk.h"
#include "base/diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { PROBE_WINDOW = 64 << 10 };

/* The rows, each defined in its format's file: adding a format is its file
 * and a line here and in the table (docs/adding-a-format.md). */
extern const struct ember_format ember_format_perf, ember_format_folded, ember_format_dtrace,
    ember_format_sample, ember_format_pprof_raw, ember_format_xctrace, ember_format_instruments,
    ember_format_pprof, ember_format_callgrind, ember_format_chrome, ember_format_speedscope,
    ember_format_perf_data, ember_format_heap, ember_format_memtrace;

static const struct ember_format *const table[] = {
    &ember_format_perf_data,   /* binary: "PERFILE2" */
    &ember_format_heap,        /* binary: "EMBHEAP1" */
    &ember_format_memtrace,    /* binary: a CTF packet's magic, v1-3, trace-info first */
    &ember_format_sample,      /* distinctive headers: tried before perf */
    &ember_format_pprof_raw,   /* "Samples:" after pprof's header lines */
    &ember_format_xctrace,     /* "<?xml" and <trace-query-result> */
    &ember_format_instruments, /* a tab-separated header with "Symbol Name" */
    &ember_format_pprof,       /* binary, and its probe parses: never text */
    &ember_format_callgrind,   /* "# callgrind format" or "events:" before any body line */
    &ember_format_chrome,      /* JSON: '[', or '{' with "traceEvents" or a .cpuprofile's keys */
    &ember_format_speedscope,  /* JSON: '{' with speedscope's "$schema" or "profiles" */
    &ember_format_perf,        &ember_format_folded, &ember_format_dtrace, NULL,
};

enum { NFORMATS = sizeof(table) / sizeof(table[0]) - 1 };

const struct ember_format *const *ember_formats(void)
{
    return table;
}

const struct ember_format *ember_format_find(const char *name)
{
    for (size_t i = 0; i < NFORMATS; i++)
        if (strcmp(table[i]->name, name) == 0)
            return table[i];
    return NULL;
}

int ember_read_opts_set(struct ember_read_opts *o, const char *name, const char *value)
{
    for (unsigned i = 0; i < o->nsettings; i++)
        if (strcmp(o->settings[i].name, name) == 0) {
            o->settings[i].value = value;
            return 0;
        }
    if (o->nsettings == EMBER_READ_SETTINGS)
        return -ENOSPC;
    o->settings[o->nsettings].name = name;
    o->settings[o->nsettings++].value = value;
    return 0;
}

const char *ember_read_opts_string(const struct ember_read_opts *o, const char *name)
{
    for (unsigned i = 0; o && i < o->nsettings; i++)
        if (strcmp(o->settings[i].name, name) == 0)
            return o->settings[i].value;
    return NULL;
}

bool ember_read_opts_flag(const struct ember_read_opts *o, const char *name)
{
    const char *v = ember_read_opts_string(o, name);
    return v && strcmp(v, "0") != 0;
}

/* The format the probes choose in data: the first that says yes (*sure),
 * else the first that says maybe, else NULL; *more says a probe could tell
 * from more bytes. */
static const struct ember_format *probe_all(const char *data, size_t len, bool *sure, bool *more)
{
    const struct ember_format *maybe = NULL;
    *more = *sure = false;
    for (size_t i = 0; i < NFORMATS; i++) {
        enum ember_probe r = table[i]->probe(data, len);
        if (r == EMBER_PROBE_YES) {
            *sure = true;
            return table[i];
        }
        if (r == EMBER_PROBE_MAYBE && !maybe)
            maybe = table[i];
        *more |= r == EMBER_PROBE_MORE;
    }
    return maybe;
}

/* The error of an input no probe takes. Where some lines are folded
 * stacks, too few of them, it quotes the first that is not one (never a
 * valid line); else the first line that is not blank or a comment. */
static int unknown(struct ember_input *in, const char *data, size_t len, struct ember_diag *d)
{
    struct ember_folded_census c;
    char q[160];
    ember_folded_census(data, len, &c);
    if (c.good > 0) {
        ember_quote(q, sizeof(q), c.bad_text, c.bad_len, 100);
        return ember_diag_set(d, -EINVAL, ember_input_name(in), c.first_bad,
                              "unknown profile format: \"%s\" is none of the formats ember "
                              "reads, and only %llu of the first %llu lines are folded stacks "
                              "(\"frame;frame COUNT\"; use --format to say which it is)",
                              q, (unsigned long long)c.good, (unsigned long long)(c.good + c.bad));
    }
    /* Quote the first line that is not blank or a comment. */
    size_t at = 0, n;
    uint64_t line = 1;
    for (;; line++) {
        const char *nl = memchr(data + at, '\n', len - at);
        n = nl ? (size_t)(nl - (data + at)) : len - at;
        if (!nl || (n > 0 && data[at] != '#'))
            break;
        at += n + 1;
    }
    ember_quote(q, sizeof(q), data + at, n, 100);
    return ember_diag_set(d, -EINVAL, ember_input_name(in), line,
                          "unknown profile format: \"%s\" is none of the formats ember reads "
                          "(use --format to say which it is; --help lists them)",
                          q);
}

int ember_format_detect(struct ember_input *in, const struct ember_format **fmt,
                        struct ember_diag *d)
{
    const char *data;
    size_t len, want = PROBE_WINDOW;
    int err = ember_input_peek_at_least(in, want, &data, &len, d);
    if (err)
        return err;
    if (len == 0)
        return ember_diag_set(d, -ENODATA, ember_input_name(in), 0, "the input is empty");
    bool sure, more;
    const struct ember_format *found = probe_all(data, len, &sure, &more);
    /* a first line longer than the window: four times more each round, so
     * that probing costs a few passes over it */
    while (!sure && more && len == want && want < EMBER_MAX_LINE) {
        want *= 4;
        if ((err = ember_input_peek_at_least(in, want, &data, &len, d)) < 0)
            return err;
        found = probe_all(data, len, &sure, &more);
    }
    if (found) {
        *fmt = found;
        return 0;
    }
    return unknown(in, data, len, d);
}

/* Does p hold no weight at all (every sample read weighed 0)? */
static bool weighs_nothing(const struct ember_profile *p)
{
    for (unsigned m = 0; m < ember_profile_values(p); m++)
        if (ember_profile_total(p, m) != 0)
            return false;
    return true;
}

int ember_format_check_samples(const struct ember_format *fmt, const char *file,
                               const struct ember_read_stats *st, bool weightless,
                               struct ember_diag *d)
{
    if (st->samples > 0 && weightless)
        return ember_diag_set(d, -ENODATA, "", 0,
                              "no samples in %s: the %llu it has all weigh 0 (read as %s)", file,
                              (unsigned long long)st->samples, fmt->name);
    if (st->samples > 0)
        return 0;
    if (st->filtered)
        return ember_diag_set(d, -ENODATA, "", 0,
                              "no samples of event '%s' in %s (its %llu samples are of other "
                              "events, such as '%s')",
                              st->kept_event, file, (unsigned long long)st->filtered,
                              st->other_event);
    return ember_diag_set(d, -ENODATA, "", 0, "no samples in %s (read as %s: %s)", file, fmt->name,
                          fmt->description);
}

int ember_format_read(const struct ember_format *fmt, struct ember_profile *p,
                      struct ember_input *in, const struct ember_read_opts *o,
                      struct ember_read_stats *st, struct ember_diag *d)
{
    if ((o->from_ns || o->to_ns) && !fmt->window)
        return ember_diag_set(d, -ENOTSUP, ember_input_name(in), 0,
                              "--from/--to: %s input has no times to cut a window from (heap "
                              "recordings and memtrace traces have)",
                              fmt->name);
    int err = fmt->read(p, in, o, st, d);
    return err ? err
               : ember_format_check_samples(fmt, ember_input_name(in), st, weighs_nothing(p), d);
}

int ember_format_truncated(struct ember_diag *d, const char *file, uint64_t line,
                           const char *inside, const char *expected, ...)
{
    char what[300];
    va_list ap;
    va_start(ap, expected);
    vsnprintf(what, sizeof(what), expected, ap);
    va_end(ap);
    return ember_diag_set(d, -EINVAL, file, line,
                          "truncated input: expected %s (the input ends inside %s)", what, inside);
}

void ember_read_warn(const struct ember_read_opts *o, const char *file, const char *fmt, ...)
{
    if (!o->warn)
        return;
    struct ember_diag d;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ember_diag_set(&d, 0, file, 0, "%s", msg);
    o->warn(o->warn_ctx, &d);
}
