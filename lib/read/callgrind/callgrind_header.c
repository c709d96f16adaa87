/*
 * callgrind_header.c - callgrind's header lines ("key: value"): "events:"
 * and "positions:" set the layout of the cost lines of the part that
 * follows, "totals:" and "summary:" close a part and are checked against
 * its cost lines, "creator:" and "desc:" tell which line must close it.
 *
 * Invariants: every event is a value of the profile, at most
 * EMBER_MAX_VALUES (the one shown never dropped); events of one name in
 * several parts are one.
 */
#include "read/callgrind/callgrind_read.h"
#include "base/vec.h"

#include <stdio.h>
#include <stdlib.h>

static bool starts_with(const char *s, size_t n, const char *prefix)
{
    size_t len = strlen(prefix);
    return n >= len && memcmp(s, prefix, len) == 0;
}

/* The name of event column c of this part, for messages. */
static void event_name(const struct cg_reader *r, unsigned c, char *out, size_t size)
{
    size_t i = 0, start, len = 0, n = strlen(r->events);
    for (unsigned k = 0; k <= c; k++)
        len = ember_callgrind_next_word(r->events, n, &i, &start);
    snprintf(out, size, "%.*s", (int)len, r->events + start);
}

/* A new part (its "events:" line): the one before it must have closed. */
static int start_part(struct cg_reader *r)
{
    if (r->closing && r->in_part && r->costs_in_part)
        return ember_callgrind_error(
            r,
            "a new part starts before the part from line %llu ended (expected its "
            "\"%s\" line first: valgrind ends every part with one)",
            (unsigned long long)r->part_line, r->closing);
    memset(r->sums, 0, sizeof(r->sums));
    r->in_part = true;
    r->costs_in_part = false;
    r->part_line = r->line;
    return 0;
}

/* The counts of a "totals:" or "summary:" line, one per event of the part
 * (missing ones are 0, as on cost lines). */
static int closing_counts(struct cg_reader *r, const char *key, const char *s, size_t n, int64_t *v)
{
    unsigned k = 0;
    size_t i = 0, start, len;
    memset(v, 0, MAX_COLUMNS * sizeof(*v));
    while ((len = ember_callgrind_next_word(s, n, &i, &start)) > 0) {
        uint64_t u;
        if (k >= r->nevents)
            return ember_callgrind_error(
                r, "\"%s\" line with more than %u counts (expected one per event)", key,
                r->nevents);
        if (!ember_callgrind_parse_u64(s + start, len, &u) || u > INT64_MAX)
            return ember_callgrind_error(r, "bad \"%s\" count %u: \"%.*s\" (expected a number)",
                                         key, k + 1, (int)(len > 40 ? 40 : len), s + start);
        v[k++] = (int64_t)u;
    }
    return 0;
}

/* "totals:": the sum of the part's cost lines (the spec: "to allow for a
 * consistency check"); it closes the part. */
static int totals_line(struct cg_reader *r, const char *s, size_t n)
{
    int64_t v[MAX_COLUMNS];
    int err = r->have_events ? closing_counts(r, "totals:", s, n, v) : 0;
    for (unsigned c = 0; c < r->nevents && !err; c++)
        if (v[c] != r->sums[c]) {
            char name[64];
            event_name(r, c, name, sizeof(name));
            err = ember_callgrind_error(
                r,
                "\"totals:\" gives %lld %s, the part's cost lines (from line %llu) "
                "sum to %lld (expected equal: is the file damaged or cut short?)",
                (long long)v[c], name, (unsigned long long)r->part_line, (long long)r->sums[c]);
        }
    r->in_part = r->costs_in_part = false;
    return err;
}

/* "summary:": in a header (callgrind), what the run cost, which may exceed
 * the cost lines; after them (cachegrind), the line that closes the file,
 * which cg_annotate requires with every event. */
static int summary_line(struct cg_reader *r, const char *s, size_t n)
{
    if (!r->costs_in_part || !r->closing || strcmp(r->closing, "summary:") != 0)
        return 0;
    int64_t v[MAX_COLUMNS];
    int err = closing_counts(r, "summary:", s, n, v);
    size_t i = 0, start, count = 0;
    while (!err && ember_callgrind_next_word(s, n, &i, &start) > 0)
        count++;
    if (!err && count != r->nevents)
        err = ember_callgrind_error(
            r,
            "\"summary:\" line with %zu counts (expected %u, one per event: is it "
            "cut short?)",
            count, r->nevents);
    for (unsigned c = 0; c < r->nevents && !err; c++)
        if (v[c] < r->sums[c]) {
            char name[64];
            event_name(r, c, name, sizeof(name));
            err = ember_callgrind_error(
                r,
                "\"summary:\" gives %lld %s, less than the cost lines' %lld "
                "(expected at least their sum: is the file damaged or cut short?)",
                (long long)v[c], name, (long long)r->sums[c]);
        }
    r->in_part = r->costs_in_part = false;
    return err;
}

/* Lays every cost array out with room for n events per function and edge
 * (a later part may name events the first did not). */
static int restride(struct cg_graph *g, unsigned n)
{
    int64_t **arrays[] = {&g->self, &g->total, &g->incoming, &g->cost};
    size_t *caps[] = {&g->scap, &g->tcap, &g->icap, &g->ccap};
    for (int a = 0; a < 4; a++) {
        size_t rows = a < 3 ? g->nfuncs : g->nedges;
        int64_t *dst = calloc(rows ? rows * n : 1, sizeof(*dst));
        if (!dst)
            return -ENOMEM;
        for (size_t i = 0; i < rows; i++)
            memcpy(dst + i * n, *arrays[a] + i * g->stride, g->stride * sizeof(*dst));
        free(*arrays[a]);
        *arrays[a] = dst;
        *caps[a] = rows ? rows * n : 1;
    }
    g->stride = n;
    return 0;
}

/* The event called name[0..len): its index, added when new; CG_NONE when
 * EMBER_MAX_VALUES are kept already (one place stays for the event shown
 * until a part has it). */
static unsigned event_index(struct cg_reader *r, const char *name, size_t len, bool shown)
{
    for (unsigned e = 0; e < r->nev; e++)
        if (strlen(r->evname[e]) == len && memcmp(r->evname[e], name, len) == 0)
            return e;
    unsigned room = EMBER_MAX_VALUES - (r->sel == CG_NONE && !shown);
    if (r->nev >= room) {
        ember_callgrind_warn(r, "event %.*s not kept (ember keeps %d events of a profile)",
                             (int)(len > 60 ? 60 : len), name, EMBER_MAX_VALUES);
        return CG_NONE;
    }
    memcpy(r->evname[r->nev], name, len);
    r->evname[r->nev][len] = '\0';
    return r->nev++;
}

/* "events: A B C": the columns of this part, each an event of the profile
 * by its name; the one shown is --event's, else the first of the first
 * part. */
static int events_line(struct cg_reader *r, const char *s, size_t n)
{
    char *kept = r->st->kept_event;
    size_t i = 0, start, len;
    int err = start_part(r);
    if (err)
        return err;
    snprintf(r->events, sizeof(r->events), "%.*s", (int)(n > 250 ? 250 : n), s);
    if (!r->events_line) {
        r->events_line = r->line;
        snprintf(r->first_events, sizeof(r->first_events), "%.*s", (int)(n > 200 ? 200 : n), s);
        if (r->o->value)
            snprintf(kept, sizeof(r->st->kept_event), "%s", r->o->value);
        else if ((len = ember_callgrind_next_word(s, n, &i, &start)) > 0)
            snprintf(kept, sizeof(r->st->kept_event), "%.*s", (int)len, s + start);
        i = 0;
    }
    unsigned count = 0;
    size_t klen = strlen(kept);
    while ((len = ember_callgrind_next_word(s, n, &i, &start)) > 0) {
        if (count >= MAX_COLUMNS - 3)
            return ember_callgrind_error(
                r,
                "\"events:\" line with more than %u names (expected 1 to %u event "
                "names)",
                MAX_COLUMNS - 3, MAX_COLUMNS - 3);
        if (len >= EMBER_UNIT_MAX)
            return ember_callgrind_error(
                r, "event name \"%.40s...\" of %zu bytes (expected at most %d)", s + start, len,
                EMBER_UNIT_MAX - 1);
        bool shown = len == klen && memcmp(s + start, kept, len) == 0;
        unsigned e = event_index(r, s + start, len, shown);
        if (shown && e != CG_NONE)
            r->sel = e;
        r->colmap[count++] = e;
    }
    if (count == 0)
        return ember_callgrind_error(
            r, "\"events:\" line with no names (expected 1 to %u event names)", MAX_COLUMNS - 3);
    r->nevents = count;
    r->have_events = true;
    memset(r->prev, 0, sizeof(r->prev));
    return r->nev > r->g.stride ? restride(&r->g, r->nev) : 0;
}

/* "positions: instr line": how many position columns start a cost line. */
static int positions_line(struct cg_reader *r, const char *s, size_t n)
{
    unsigned count = 0;
    size_t i = 0, start;
    while (ember_callgrind_next_word(s, n, &i, &start) > 0)
        count++;
    if (count == 0 || count > 3)
        return ember_callgrind_error(
            r,
            "\"positions:\" line with %u names (expected one to three of instr, "
            "bb, line)",
            count);
    r->npos = count;
    memset(r->prev, 0, sizeof(r->prev));
    return 0;
}

/* "key: value" (header line) or "key=value" (position name); the length of
 * the key, or 0 if the line is neither. */
int ember_callgrind_header(struct cg_reader *r, const char *s, size_t klen, const char *v,
                           size_t vn)
{
    while (vn > 0 && is_blank(*v))
        v++, vn--;
    if (key_is(s, klen, "events"))
        return events_line(r, v, vn);
    if (key_is(s, klen, "positions"))
        return positions_line(r, v, vn);
    if (key_is(s, klen, "totals"))
        return totals_line(r, v, vn);
    if (key_is(s, klen, "summary"))
        return summary_line(r, v, vn);
    if (key_is(s, klen, "creator") && starts_with(v, vn, "callgrind"))
        r->closing = "totals:";
    else if (key_is(s, klen, "desc") && starts_with(v, vn, "I1 cache:") && !r->closing)
        r->closing = "summary:"; /* cachegrind's header (callgrind's says creator: first) */
    return 0;                    /* version, cmd, pid, part, event ... */
}
