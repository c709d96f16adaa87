/*
 * registry.c - the table of formats, and choosing one for an input.
 *
 * Adding a format is adding its file and one row here. Probing order
 * matters where formats overlap: perf script text is tried before folded
 * stacks, DTrace last (its lines are the least distinctive).
 */
#include "formats_impl.h"
#include "util/diag.h"

#include <errno.h>
#include <string.h>

static const struct ember_format *const table[] = {
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

int ember_format_detect(struct ember_input *in, const struct ember_format **fmt,
                        struct ember_diag *d)
{
    const char *data;
    size_t len;
    int err = ember_input_peek(in, &data, &len, d);
    if (err)
        return err;
    if (len == 0)
        return ember_diag_set(d, -ENODATA, ember_input_name(in), 0, "the input is empty");
    const struct ember_format *maybe = NULL;
    for (size_t i = 0; i < NFORMATS; i++) {
        enum ember_probe r = table[i]->probe(data, len);
        if (r == EMBER_PROBE_YES) {
            *fmt = table[i];
            return 0;
        }
        if (r == EMBER_PROBE_MAYBE && !maybe)
            maybe = table[i];
    }
    if (maybe) {
        *fmt = maybe;
        return 0;
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
    char q[160];
    ember_quote(q, sizeof(q), data + at, n, 100);
    return ember_diag_set(d, -EINVAL, ember_input_name(in), line,
                          "unknown profile format: \"%s\" is none of the formats ember reads "
                          "(use --format to say which it is; --help lists them)",
                          q);
}
