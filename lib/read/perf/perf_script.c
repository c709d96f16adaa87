/*
 * perf_script.c - `perf script` text into a profile, by the rules of
 * FlameGraph's stackcollapse-perf.pl (see notes in perf_tidy.c for where
 * ember departs from them on purpose).
 *
 * The input is samples: an event line at column 0 ("comm pid/tid [cpu]
 * time: period event:"), frame lines (indented "pc symbol (module)", leaf
 * first) and a blank line. Differences from the script, all deliberate:
 * - a sample not followed by a blank line (end of file, or the next event
 *   line) is kept, not dropped or glued to the next one;
 * - a one-character comm is an ordinary comm;
 * - an event line that carries its only frame ("comm pid time: 1 cycles:
 *   ffff sym (mod)", as perf prints without -g) is a one-frame sample.
 *
 * Speed: a frame line's name depends only on the text after its address
 * (and on whether the process is Java), so results are cached by that text:
 * most lines cost a hash and a memcmp. Memory grows with distinct frame
 * lines and distinct stacks, not with the input.
 *
 * This file drives the reading (chunks to lines, lines to samples); the
 * other parts are perf_script_lines.c, _frames.c, _samples.c and
 * _threads.c, with what they share in perf_script_impl.h.
 */
#include "read/read_impl.h"
#include "read/perf/perf_names.h"
#include "read/perf/perf_script_impl.h"
#include "symbol/symbolizer.h"
#include "base/diag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t ember_perf_line(const struct perf_parser *ps)
{
    return ps->line + (ps->lines_before ? ps->lines_before(ps->lines_ctx, ps->origin) : 0);
}

void ember_perf_warn_line(struct perf_parser *ps, const char *s, size_t n, const char *what)
{
    ps->st->skipped++;
    if (!ps->o->warn)
        return;
    struct ember_diag d;
    char q[200];
    ember_quote(q, sizeof(q), s, n, 120);
    ember_diag_set(&d, 0, ps->file, ember_perf_line(ps), "%s: \"%s\"", what, q);
    ps->o->warn(ps->o->warn_ctx, &d);
}

static int on_frame(struct perf_parser *ps, const char *s, size_t n)
{
    size_t i, j;
    ember_perf_scan_address(s, n, &i, &j);
    return ember_perf_on_frame_at(ps, s, n, i, j);
}

static int on_other_line(struct perf_parser *ps, const char *s, size_t n, size_t i, size_t j,
                         bool address);

static int on_line(struct perf_parser *ps, const char *s, size_t n)
{
    if (n > 0 && s[n - 1] == '\r')
        n--;
    if (ps->pend.active) {
        if (n > 0 && !(n > 0 && s[0] == '#'))
            return ember_perf_finish_pending(ps, s, n);
        int err = ember_perf_finish_pending(ps, "", 0);
        if (err)
            return err;
    }
    if (n > 0 && s[0] == '#')
        return 0;
    if (n == 0)
        return ember_perf_end_sample(ps);
    /* An indented line whose first word is an address is a frame (the usual
     * case, decided without looking further); any other line may be an event. */
    size_t i = 0, j;
    while (i < n && is_ws((unsigned char)s[i]))
        i++;
    for (j = i; j < n && is_word((unsigned char)s[j]); j++)
        if (!is_lower_hex((unsigned char)s[j]))
            break;
    bool address = i > 0 && j > i && (j == n || is_ws((unsigned char)s[j]));
    if (address && ps->in_sample)
        return ember_perf_on_frame_at(ps, s, n, i, j);
    return on_other_line(ps, s, n, i, j, address);
}

/* Is s, from its indentation `lead` on, an event line? *frame: where a
 * combined line's frame starts (NULL: none). */
static bool event_line(const char *s, size_t n, size_t lead, struct event_head *ev,
                       const char **frame)
{
    *frame = NULL;
    if (lead >= n || !ember_perf_event_head(s + lead, n - lead, ev))
        return false;
    const char *e;
    size_t el;
    int64_t per;
    bool named = ember_perf_event_name(s, n, &e, &el, &per);
    *frame = named ? NULL : ember_perf_combined_split(ev);
    return named || *frame || (lead == 0 && ember_perf_bare_event_rest(ev->rest, ev->rest_len));
}

bool ember_perf_starts_sample(const char *s, size_t n)
{
    if (n > 0 && s[n - 1] == '\r')
        n--;
    struct event_head ev;
    const char *frame;
    /* on_line's way to an event line at column 0 */
    return n > 0 && s[0] != '#' && !is_ws((unsigned char)s[0]) && event_line(s, n, 0, &ev, &frame);
}

/* Event lines, and the rarer lines that are neither an event nor a frame
 * in a sample: out of the hot loop, which then stays small. */
static __attribute__((noinline)) int on_other_line(struct perf_parser *ps, const char *s, size_t n,
                                                   size_t i, size_t j, bool address)
{
    while (j < n && is_word((unsigned char)s[j]))
        j++;
    struct event_head ev;
    const char *frame;
    if (event_line(s, n, address ? n : i, &ev, &frame)) {
        /* a combined line's event and period are before its frame:
         * one rule for every sample, weighed by its period */
        int err = ember_perf_start_sample(ps, &ev, s, frame ? (size_t)(frame - s) : n);
        if (!err && ps->keep && frame)
            err = on_frame(ps, frame, (size_t)(s + n - frame));
        return err;
    }
    if (!ps->in_sample) {
        /* frames outside a sample: after a filtered or missing event line */
        struct frame_line f;
        if (!ember_perf_parse_frame(s, n, &f))
            ember_perf_warn_line(ps, s, n,
                                 "unrecognized line (expected an event line such as "
                                 "\"comm 123 [000] 1.000: 1000 cycles:\")");
        return 0;
    }
    return ember_perf_on_frame_at(ps, s, n, i, j);
}

int ember_perf_parse_chunk(struct perf_parser *ps, const struct ember_chunk *c)
{
    const char *p = c->data, *end = c->data + c->len;
    ps->line = c->first_line;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        /* perf script ends every line: a last line without one was cut
         * (chunks end at line ends, so only the input's end has none) */
        if (!nl && p[0] != '#' && (n > 1 || (n == 1 && p[0] != '\r')))
            return ember_diag_set(ps->d, -EINVAL, ps->file, ember_perf_line(ps),
                                  "truncated input: the last line has no line end (the input "
                                  "ends inside %s)",
                                  ps->in_sample ? "a sample's stack" : "an event line");
        int err = on_line(ps, p, n);
        if (err)
            return err;
        ps->line++;
        p += n + 1;
    }
    return 0;
}

int ember_perf_parser_init(struct perf_parser *ps, struct ember_profile *p,
                           const struct ember_read_opts *o, struct ember_read_stats *st,
                           const char *file, struct ember_diag *d)
{
    memset(ps, 0, sizeof(*ps));
    ps->o = o;
    ps->p = p;
    ps->st = st;
    ps->file = file;
    ps->d = d;
    ps->po = ember_perf_opts_of(o);
    if (ps->po.event_filter) {
        ember_perf_copy_name(ps->filter, sizeof(ps->filter), ps->po.event_filter,
                             strlen(ps->po.event_filter));
        ps->filter_len = strlen(ps->filter);
        ps->have_filter = true;
        ember_perf_copy_name(st->kept_event, sizeof(st->kept_event), ps->filter, ps->filter_len);
    }
    /* named for what they are at the end (ember_perf_set_unit) */
    int err = ember_profile_value(p, "samples", "count", &ps->vsamples);
    if (!err)
        err = ember_profile_value(p, PERIOD_VALUE, "count", &ps->vperiod);
    if (!err)
        err = ember_perf_cache_init(&ps->cache);
    if (!err && ps->po.inline_frames)
        err = ember_symbolizer_new(&ps->sym);
    return err;
}

void ember_perf_parser_release(struct perf_parser *ps)
{
    ember_perf_cache_release(&ps->cache);
    free(ps->pend.ids);
    free(ps->pend.join);
    free(ps->stack);
    free(ps->buf);
    free(ps->fr);
    ember_symbolizer_free(ps->sym);
}

int ember_perf_parser_finish(struct perf_parser *ps)
{
    int err = 0;
    if (ps->pend.active)
        err = ember_perf_finish_pending(ps, "", 0);
    return err ? err : ember_perf_end_sample(ps);
}

/* The values: samples (a count), and the periods' sum, shown. A sample's
 * period is the event's count since the last sample, nanoseconds for the
 * clock events, which pprof calls cpu time. Without periods, each sample
 * counts one: samples alone. */
void ember_perf_set_unit(struct ember_profile *p, const char *event, bool weighed)
{
    char base[128];
    unsigned vp, vs;
    if (ember_profile_value(p, PERIOD_VALUE, "count", &vp) < 0 ||
        ember_profile_value(p, "samples", "count", &vs) < 0)
        return;
    ember_perf_copy_name(base, sizeof(base), event,
                         ember_perf_event_base_len(event, strlen(event)));
    if (!weighed || !base[0]) {
        ember_profile_select_index(p, vs);
        ember_profile_value_drop(p, vp);
        return;
    }
    char type[EMBER_UNIT_MAX];
    const char *unit;
    ember_perf_period_value(event, strlen(event), type, sizeof(type), &unit);
    ember_profile_value_rename(p, vp, type, unit);
    ember_profile_select_index(p, vp);
}

static int perf_read(struct ember_profile *p, struct ember_input *in,
                     const struct ember_read_opts *o, struct ember_read_stats *st,
                     struct ember_diag *d)
{
    char filter[128];
    struct ember_perf_opts po = ember_perf_opts_of(o);
    if (o->threads > 1 && !po.srcline && !ember_profile_has_sequence(p)) {
        if (po.event_filter)
            return ember_perf_read_threaded(p, in, o, st, d, po.event_filter, PERF_SCRIPT_RANGE);
        if (ember_perf_first_event(in, filter, sizeof(filter), d))
            return ember_perf_read_threaded(p, in, o, st, d, filter, PERF_SCRIPT_RANGE);
    }
    struct perf_parser ps;
    struct ember_chunk c = {0};
    int err = ember_perf_parser_init(&ps, p, o, st, ember_input_name(in), d);
    while (!err) {
        int r = ember_input_read_chunk(in, &c, EMBER_CUT_LINE, d);
        if (r <= 0) {
            err = r;
            break;
        }
        err = ember_perf_parse_chunk(&ps, &c);
        if (o->progress)
            o->progress(o->progress_ctx, in);
    }
    if (!err)
        err = ember_perf_parser_finish(&ps);
    ember_perf_set_unit(p, st->kept_event, ps.weighed);
    ember_perf_parser_release(&ps);
    ember_chunk_release(&c);
    return err;
}

const struct ember_format ember_format_perf = {
    .name = "perf",
    .description = "`perf script` text (stackcollapse-perf.pl's input)",
    .options = ember_perf_options,
    .options_heading = EMBER_PERF_OPTIONS_HEADING,
    .probe = ember_perf_probe,
    .read = perf_read,
};
