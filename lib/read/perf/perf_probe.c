/*
 * perf_probe.c - telling `perf script` text from the first bytes of an
 * input.
 *
 * The evidence is an event line ("comm 123 [000] 1.000: 1000 cycles:")
 * followed by a frame line, a blank line or another event line, as perf
 * script prints them; comments (perf's header) are passed over. Where the
 * first line after the comments is an event line and the next one fits,
 * that is enough. A line that is none of these, a stray line of some other
 * output, is skipped with a warning by the reader wherever it is, so it
 * does not refuse the input here either: before the first event line, or
 * between an event and the line that confirms it, the input is still perf
 * script when the window holds no more such lines than event and frame
 * lines (folded stacks and DTrace's output are neither, line after line).
 * Invariant: the lines looked at are classified as the reader takes them
 * (ember_perf_probe_event, ember_perf_probe_frame).
 */
#include "read/perf/perf_names.h"

#include <stdint.h>
#include <string.h>

enum kind { BLANK, EVENT, FRAME, OTHER };

static enum kind kind_of(const char *s, size_t n)
{
    if (n == 0)
        return BLANK;
    if (ember_perf_probe_event(s, n))
        return EVENT;
    return ember_perf_probe_frame(s, n) ? FRAME : OTHER;
}

/* What the window holds: event and frame lines, other lines (whole ones),
 * and whether an event line was confirmed (on a whole line), with no other
 * line before. */
struct tally {
    uint64_t known, other;
    bool after_event, confirmed, clean, cut;
};

static void tally_line(struct tally *t, enum kind k, bool whole)
{
    if (k == OTHER) {
        t->other += whole;
        return;
    }
    t->known += k != BLANK;
    if (t->after_event && !t->confirmed) {
        t->confirmed = true;
        t->clean = t->other == 0;
        t->cut = !whole;
    }
    t->after_event = k == EVENT;
}

enum ember_probe ember_perf_probe(const char *data, size_t len)
{
    struct tally t = {0};
    for (const char *p = data, *end = data + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n > 0 && p[n - 1] == '\r')
            n--;
        if (n == 0 || p[0] != '#') /* not one of perf's header comments */
            tally_line(&t, kind_of(p, n), nl != NULL);
        if (!nl || (t.confirmed && t.clean))
            break;
        p = nl + 1;
    }
    if (!t.confirmed) /* the window ends after an event line: perhaps */
        return t.after_event && t.other == 0 ? EMBER_PROBE_MAYBE : EMBER_PROBE_NO;
    if (t.other > t.known)
        return EMBER_PROBE_NO;
    return t.cut ? EMBER_PROBE_MAYBE : EMBER_PROBE_YES;
}
