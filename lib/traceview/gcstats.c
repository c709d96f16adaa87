/*
 * gcstats.c - `ember trace gc-stats` and the GC pauses of `ember trace
 * latency`: what olly (tarides/runtime_events_tools) computes from an OCaml
 * 5 program's runtime events, by the same rules, with exact numbers and
 * without its failures:
 *
 * - wall time: ring 0's ring_start to its ring_stop; domain time (olly's
 *   "CPU time", which it is not: a blocked domain lives on): the sum of
 *   the domains' lifetimes (ring 0: ring_start to ring_stop; another ring:
 *   each domain_spawn to its domain_terminate: a ring reused by a later
 *   domain adds that domain's lifetime too, where olly kept the last);
 * - a GC pause: per domain, the outermost of the phases major, stw_leader
 *   and interrupt_remote (the first to begin while none is open, until
 *   that phase ends); GC time per domain is their sum, while the domain is
 *   alive (ring 0's teardown after ring_stop is not the program's);
 *   percentiles by nearest rank, exact (base/percentile.h);
 * - minor, major (major_gc_stw), forced (explicit_gc_major, _full_major)
 *   collections and compactions: begins on ring 0; allocations: the sums
 *   of the minor_allocated and minor_promoted counters, bytes / 8.
 *
 * A program that died without ring_stop (SIGKILL, OOM, a crash) ends at
 * the trace's last timestamp, and so do its domains still alive and the
 * pauses still open, each flagged; a ring whose start was overwritten
 * starts at its first event, flagged. Words lost on a ring drop the pause
 * open there (its end may be among them), counted. No division by zero
 * is printed: a ratio without a denominator is "-" (null in JSON).
 */
#include "ember/traceview.h"
#include "base/writer.h"
#include "traceview/latency.h"
#include "base/diag.h"
#include "base/percentile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a site is to gc-stats, by site id (0: not yet looked at). */
enum {
    C_UNSEEN = 0,
    C_OTHER,
    C_PAUSE, /* major, stw_leader, interrupt_remote: begin or end */
    C_MINOR,
    C_MAJOR_STW,
    C_FORCED,
    C_COMPACTION,
    C_ALLOCATED,
    C_PROMOTED,
    C_RING_START,
    C_RING_STOP,
    C_SPAWN,
    C_TERMINATE,
};

struct gc_ring {
    bool seen, started, alive;
    int64_t first, last, since, life, gc;
    int pause_id; /* the open pause's phase id, -1 none */
    int64_t pause_at;
    uint64_t pauses;
    bool start_assumed, end_assumed;
};

struct gc {
    struct ember_trace *t;
    struct gc_ring *rings;
    unsigned nrings;
    unsigned char *class; /* by site id */
    size_t nclass;
    struct ember_values pauses; /* ns */
    uint64_t minor, major, forced, compactions, minor_words, promoted_words;
    bool any, ring_start, ring_stop;
    int64_t wall_start, wall_end, first, last;
    uint64_t cut, open_at_end, lost_words;
    int err; /* -ENOMEM once a pause could not be kept */
};

static unsigned char classify(const struct ember_trace_site *s)
{
    static const struct {
        int type;
        const char *name;
        unsigned char class;
    } rules[] = {
        {EMBER_OCAML_BEGIN, "major", C_PAUSE},
        {EMBER_OCAML_BEGIN, "stw_leader", C_PAUSE},
        {EMBER_OCAML_BEGIN, "interrupt_remote", C_PAUSE},
        {EMBER_OCAML_EXIT, "major", C_PAUSE},
        {EMBER_OCAML_EXIT, "stw_leader", C_PAUSE},
        {EMBER_OCAML_EXIT, "interrupt_remote", C_PAUSE},
        {EMBER_OCAML_BEGIN, "minor", C_MINOR},
        {EMBER_OCAML_BEGIN, "major_gc_stw", C_MAJOR_STW},
        {EMBER_OCAML_BEGIN, "explicit_gc_major", C_FORCED},
        {EMBER_OCAML_BEGIN, "explicit_gc_full_major", C_FORCED},
        {EMBER_OCAML_BEGIN, "compaction", C_COMPACTION},
        {EMBER_OCAML_COUNTER, "minor_allocated", C_ALLOCATED},
        {EMBER_OCAML_COUNTER, "minor_promoted", C_PROMOTED},
        {EMBER_OCAML_LIFECYCLE, "ring_start", C_RING_START},
        {EMBER_OCAML_LIFECYCLE, "ring_stop", C_RING_STOP},
        {EMBER_OCAML_LIFECYCLE, "domain_spawn", C_SPAWN},
        {EMBER_OCAML_LIFECYCLE, "domain_terminate", C_TERMINATE},
    };
    if (s->origin != EMBER_ORIGIN_OCAML_RUNTIME)
        return C_OTHER;
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
        if (rules[i].type == s->raw_type && strcmp(rules[i].name, s->name) == 0)
            return rules[i].class;
    return C_OTHER;
}

static __attribute__((noinline)) int class_new(struct gc *g, const struct ember_trace_site *s,
                                               unsigned char *c)
{
    if (s->id >= g->nclass) {
        size_t n = (size_t)s->id * 2 + 64;
        unsigned char *cl = realloc(g->class, n);
        if (!cl)
            return -ENOMEM;
        memset(cl + g->nclass, 0, n - g->nclass);
        g->class = cl;
        g->nclass = n;
    }
    if (!g->class[s->id])
        g->class[s->id] = classify(s);
    *c = g->class[s->id];
    return 0;
}

/* A site's class: looked up on every event, made once. */
static inline int class_of(struct gc *g, const struct ember_trace_site *s, unsigned char *c)
{
    if (s->id < g->nclass && g->class[s->id]) {
        *c = g->class[s->id];
        return 0;
    }
    return class_new(g, s, c);
}

static __attribute__((noinline)) struct gc_ring *ring_new(struct gc *g, unsigned i)
{
    struct gc_ring *r = realloc(g->rings, (size_t)(i + 1) * sizeof(*r));
    if (!r)
        return NULL;
    memset(r + g->nrings, 0, (size_t)(i + 1 - g->nrings) * sizeof(*r));
    for (unsigned k = g->nrings; k <= i; k++)
        r[k].pause_id = -1;
    g->rings = r;
    g->nrings = i + 1;
    return &g->rings[i];
}

static inline struct gc_ring *ring_of(struct gc *g, unsigned i)
{
    return i < g->nrings ? &g->rings[i] : ring_new(g, i);
}

static void pause_end(struct gc *g, struct gc_ring *r, int64_t at)
{
    int64_t d = at > r->pause_at ? at - r->pause_at : 0;
    r->gc += d;
    r->pauses++;
    r->pause_id = -1;
    if (ember_values_add(&g->pauses, d) < 0)
        g->err = -ENOMEM;
}

/* A domain's lifetime: its start and end lifecycle events. */
static void lifecycle(struct gc *g, struct gc_ring *r, unsigned ring, unsigned char c, int64_t ns)
{
    if (c == C_RING_START || c == C_SPAWN) {
        if (!r->alive)
            r->since = ns;
        r->alive = r->started = true;
        if (c == C_RING_START && ring == 0 && !g->ring_start)
            g->ring_start = true, g->wall_start = ns;
    } else if (r->alive) {
        r->life += ns - r->since;
        r->alive = false;
        if (r->pause_id >= 0)
            pause_end(g, r, ns);
        if (c == C_RING_STOP && ring == 0)
            g->ring_stop = true, g->wall_end = ns;
    }
}

static void phase(struct gc *g, struct gc_ring *r, const struct ember_trace_event *e,
                  unsigned char c, unsigned ring)
{
    bool begin = e->site->raw_type == EMBER_OCAML_BEGIN;
    if (begin && ring == 0)
        g->minor += c == C_MINOR, g->major += c == C_MAJOR_STW, g->forced += c == C_FORCED,
            g->compactions += c == C_COMPACTION;
    if (c != C_PAUSE || !r->alive)
        return;
    if (begin && r->pause_id < 0) {
        r->pause_id = e->site->raw_id;
        r->pause_at = e->ns;
    } else if (!begin && r->pause_id == e->site->raw_id) {
        pause_end(g, r, e->ns);
    }
}

static int on_event(void *ctx, const struct ember_trace_event *e)
{
    struct gc *g = ctx;
    unsigned char c;
    if (class_of(g, e->site, &c) < 0)
        return -ENOMEM;
    struct gc_ring *r = ring_of(g, e->ring);
    if (!r)
        return -ENOMEM;
    if (!g->any)
        g->first = e->ns, g->any = true;
    g->last = e->ns > g->last ? e->ns : g->last;
    if (!r->seen)
        r->first = e->ns, r->seen = true;
    r->last = e->ns;
    if (e->site->origin != EMBER_ORIGIN_OCAML_RUNTIME)
        return 0;
    /* a ring whose start is not in the trace (overwritten, or read from
     * its middle) is alive from its first event */
    if (!r->started && c != C_RING_START && c != C_SPAWN) {
        r->started = r->alive = r->start_assumed = true;
        r->since = e->ns;
    }
    if (c >= C_RING_START)
        lifecycle(g, r, e->ring, c, e->ns);
    else if (c == C_ALLOCATED)
        g->minor_words += (uint64_t)e->v[0].i / 8;
    else if (c == C_PROMOTED)
        g->promoted_words += (uint64_t)e->v[0].i / 8;
    else if (c != C_OTHER)
        phase(g, r, e, c, e->ring);
    return g->err;
}

static int on_lost(void *ctx, unsigned ring, uint64_t events, uint64_t words)
{
    struct gc *g = ctx;
    struct gc_ring *r = ring_of(g, ring);
    if (!r)
        return -ENOMEM;
    g->lost_words += words;
    (void)events;
    if (r->pause_id >= 0) { /* its end may have been lost */
        r->pause_id = -1;
        g->cut++;
    }
    return 0;
}

/* What is still alive or open at the end ends with the trace; the
 * pauses are then sorted. */
static int finish(struct gc *g)
{
    for (unsigned i = 0; i < g->nrings; i++) {
        struct gc_ring *r = &g->rings[i];
        if (r->pause_id >= 0) {
            pause_end(g, r, g->last);
            g->open_at_end++;
        }
        if (r->alive) {
            r->life += g->last - r->since;
            r->alive = false;
            r->end_assumed = true;
        }
    }
    if (!g->ring_start)
        g->wall_start = g->first;
    if (!g->ring_stop)
        g->wall_end = g->last;
    ember_values_sort(&g->pauses);
    return g->err;
}

static int compute(struct ember_trace *t, struct gc *g, struct ember_diag *d)
{
    memset(g, 0, sizeof(*g));
    g->t = t;
    struct ember_trace_visitor v = {on_event, on_lost, g, false};
    int err = ember_trace_visit(t, &v);
    if (err)
        return err;
    bool ocaml = false;
    for (unsigned i = 0; i < ember_trace_site_count(t) && !ocaml; i++)
        ocaml = ember_trace_site_at(t, i)->origin == EMBER_ORIGIN_OCAML_RUNTIME;
    if (!ocaml)
        return ember_diag_set(d, -ENODATA, NULL, 0,
                              "no OCaml runtime events in the trace (gc-stats reads OCaml 5 "
                              "programs' runtime_events)");
    return finish(g);
}

static void release(struct gc *g)
{
    ember_values_release(&g->pauses);
    free(g->rings);
    free(g->class);
}

/* ---- printing ------------------------------------------------------------ */

/* olly's percentiles, in units of 1/10000 percent: exact fractions */
static const uint32_t percentiles[] = {250000, 500000, 600000, 700000, 750000, 800000,
                                       850000, 900000, 950000, 960000, 970000, 980000,
                                       990000, 999000, 999900, 999990, 999999, 1000000};
enum { NPERCENTILES = sizeof(percentiles) / sizeof(percentiles[0]) };

#define PERCENT(p) ((double)(p) / 10000.0)

/* What both outputs print, computed once. */
struct summary {
    int64_t wall, domain, gc;                  /* ns */
    double mean, stddev, min, max;             /* pause latencies, ms */
    double at[NPERCENTILES];                   /* ms, at each of percentiles */
    unsigned long long total_heap, minor_heap; /* words */
};

static void summarize(const struct gc *g, struct summary *s)
{
    int64_t wall = g->wall_end - g->wall_start;
    const struct ember_values *p = &g->pauses;
    s->wall = wall > 0 ? wall : 0;
    s->domain = s->gc = 0;
    for (unsigned i = 0; i < g->nrings; i++)
        s->domain += g->rings[i].life, s->gc += g->rings[i].gc;
    s->mean = ember_values_mean(p) / 1e6;
    s->stddev = ember_values_stddev(p) / 1e6;
    s->min = p->n ? (double)ember_values_min(p) / 1e6 : 0.0;
    s->max = p->n ? (double)ember_values_max(p) / 1e6 : 0.0;
    for (int i = 0; i < NPERCENTILES; i++) {
        struct ember_percent at = {percentiles[i], 10000};
        s->at[i] = p->n ? (double)ember_percentile(p, at) / 1e6 : 0.0;
    }
    s->minor_heap = g->minor_words;
    s->total_heap = g->minor_words > g->promoted_words ? g->minor_words - g->promoted_words : 0;
}

static void seconds(struct ember_writer *w, int64_t ns)
{
    ember_writer_printf(w, "%lld.%09lld", (long long)(ns / 1000000000),
                        (long long)(ns % 1000000000));
}

/* part / whole in percent, or "-" (null in JSON) without a whole. */
static void percent(struct ember_writer *w, double part, double whole, bool json)
{
    if (whole > 0)
        ember_writer_printf(w, "%.2f", 100.0 * part / whole);
    else
        ember_writer_puts(w, json ? "null" : "-");
}

static void notes(const struct gc *g, struct ember_writer *w, bool json)
{
    const char *sep = "";
    char line[200];
    for (int k = 0; k < 6; k++) {
        line[0] = '\0';
        if (k == 0 && !g->ring_stop)
            snprintf(line, sizeof(line),
                     "the program did not stop cleanly: no ring_stop event (killed, or it "
                     "crashed); times end at the trace's last event");
        else if (k == 1 && !g->ring_start)
            snprintf(line, sizeof(line),
                     "ring_start is not in the trace (overwritten): times start at its first "
                     "event");
        else if (k == 2 && g->open_at_end)
            snprintf(line, sizeof(line),
                     "%llu GC pause%s still open at the end, closed at the trace's last event",
                     (unsigned long long)g->open_at_end, g->open_at_end == 1 ? "" : "s");
        else if (k == 3 && g->cut)
            snprintf(
                line, sizeof(line), "%llu GC pause%s not counted: %s end was among the words lost",
                (unsigned long long)g->cut, g->cut == 1 ? "" : "s", g->cut == 1 ? "its" : "their");
        else if (k == 4 && g->lost_words)
            snprintf(line, sizeof(line),
                     "%llu words of events were lost (overwritten before they were read): "
                     "counts are of the events kept",
                     (unsigned long long)g->lost_words);
        else if (k == 5)
            for (unsigned i = 0; i < g->nrings; i++)
                if (g->rings[i].end_assumed && i > 0) {
                    snprintf(line, sizeof(line),
                             "domain %u (and maybe others) never terminated: its lifetime ends "
                             "at the trace's last event",
                             i);
                    break;
                }
        if (!line[0])
            continue;
        if (json)
            ember_writer_printf(w, "%s\"%s\"", sep, line);
        else
            ember_writer_printf(w, "Note: %s.\n", line);
        sep = ", ";
    }
}

/* A time measured when ember ran the program, or "-" (null). */
static void measured(struct ember_writer *w, int64_t v, bool json, bool ns)
{
    if (v >= 0 && ns)
        seconds(w, v);
    else if (v >= 0)
        ember_writer_printf(w, "%lld", (long long)v);
    else
        ember_writer_puts(w, json ? "null" : "- (not measured: the program was not run by ember)");
}

/* The times both outputs begin with, after text labels or JSON keys: the
 * domains' lifetimes are not CPU time, which is measured or not said. */
static void print_times(const struct summary *s, struct ember_writer *w,
                        const struct ember_gc_options *o)
{
    static const char *const before[2][7] = {
        {"Execution times:\nWall time (s):\t", "\nDomain time (s):\t", "\nGC time (s):\t",
         "\nGC overhead (% of domain time):\t", "%\nCPU time (s):\t", "\nMax RSS (kB):\t", "\n"},
        {"{\"version\": 3, \"wall_time\": ", ", \"domain_time\": ", ", \"gc_time\": ",
         ", \"gc_overhead\": ", ", \"cpu_time\": ", ", \"max_rss_kb\": ", ""},
    };
    const char *const *b = before[o->json];
    const int64_t ns[3] = {s->wall, s->domain, s->gc};
    for (int i = 0; i < 3; i++) {
        ember_writer_puts(w, b[i]);
        seconds(w, ns[i]);
    }
    ember_writer_puts(w, b[3]);
    percent(w, (double)s->gc, (double)s->domain, o->json);
    ember_writer_puts(w, b[4]);
    measured(w, o->cpu_ns, o->json, true);
    ember_writer_puts(w, b[5]);
    measured(w, o->max_rss_kb, o->json, false);
    ember_writer_puts(w, b[6]);
}

static void print_text(const struct gc *g, const struct summary *s, struct ember_writer *w,
                       const struct ember_gc_options *o)
{
    print_times(s, w, o);
    ember_writer_printf(w, "\nPer domain stats:\n%-8s %-14s %-14s %s\n", "Domain", "Wall (s)",
                        "GC (s)", "GC (%)");
    for (unsigned i = 0; i < g->nrings; i++) {
        const struct gc_ring *r = &g->rings[i];
        if (!r->seen)
            continue;
        ember_writer_printf(w, "%-8u ", i);
        seconds(w, r->life);
        ember_writer_puts(w, "    ");
        seconds(w, r->gc);
        ember_writer_puts(w, "    ");
        percent(w, (double)r->gc, (double)r->life, false);
        ember_writer_puts(w, "\n");
    }
    ember_writer_printf(w, "\nGC latency profile (%lld pauses):\n", (long long)g->pauses.n);
    ember_writer_printf(w, "#[Mean (ms):\t%.6f,\t Stddev (ms):\t%.6f]\n", s->mean, s->stddev);
    ember_writer_printf(w, "#[Min (ms):\t%.6f,\t max (ms):\t%.6f]\n", s->min, s->max);
    ember_writer_puts(w, "\nPercentile \t Latency (ms)\n");
    for (int i = 0; i < NPERCENTILES; i++)
        ember_writer_printf(w, "%.4f \t %.6f\n", PERCENT(percentiles[i]), s->at[i]);
    ember_writer_printf(w, "\nGC allocations (in words):\nTotal heap:\t %llu\nMinor heap:\t %llu\n",
                        s->total_heap, s->minor_heap);
    ember_writer_printf(w, "Promoted words:\t %llu (", (unsigned long long)g->promoted_words);
    percent(w, (double)g->promoted_words, (double)g->minor_words, false);
    ember_writer_printf(w,
                        "%%)\n\nMinor Gen: %llu collections\n"
                        "Major Gen: %llu collections %llu forced collections\n"
                        "Compactions: %llu\n",
                        (unsigned long long)g->minor, (unsigned long long)g->major,
                        (unsigned long long)g->forced, (unsigned long long)g->compactions);
    if (!g->ring_stop || !g->ring_start || g->open_at_end || g->cut || g->lost_words)
        ember_writer_puts(w, "\n");
    notes(g, w, false);
}

static void json_seconds(struct ember_writer *w, const char *key, int64_t ns)
{
    ember_writer_printf(w, "\"%s\": ", key);
    seconds(w, ns);
}

static void print_json(const struct gc *g, const struct summary *s, struct ember_writer *w,
                       const struct ember_gc_options *o)
{
    print_times(s, w, o);
    ember_writer_puts(w, ", \"domain_stats\": {");
    const char *sep = "";
    for (unsigned i = 0; i < g->nrings; i++) {
        const struct gc_ring *r = &g->rings[i];
        if (!r->seen)
            continue;
        ember_writer_printf(w, "%s\"%u\": {", sep, i);
        json_seconds(w, "wall_time", r->life);
        ember_writer_puts(w, ", ");
        json_seconds(w, "gc_time", r->gc);
        ember_writer_puts(w, ", \"gc_overhead\": ");
        percent(w, (double)r->gc, (double)r->life, true);
        ember_writer_printf(w, ", \"gc_pauses\": %llu}", (unsigned long long)r->pauses);
        sep = ", ";
    }
    ember_writer_printf(w,
                        "}, \"pauses\": %lld, \"mean_latency\": %.6f, \"stddev_latency\": %.6f, "
                        "\"min_latency\": %.6f, \"max_latency\": %.6f, \"distr_latency\": {",
                        (long long)g->pauses.n, s->mean, s->stddev, s->min, s->max);
    for (int i = 0; i < NPERCENTILES; i++)
        ember_writer_printf(w, "%s\"%.4f\": %.6f", i ? ", " : "", PERCENT(percentiles[i]),
                            s->at[i]);
    ember_writer_printf(w,
                        "}, \"allocations\": {\"total_heap\": %llu, \"minor_heap\": %llu, "
                        "\"promoted_words\": %llu, \"promoted_pct\": ",
                        s->total_heap, s->minor_heap, (unsigned long long)g->promoted_words);
    percent(w, (double)g->promoted_words, (double)g->minor_words, true);
    ember_writer_printf(w,
                        "}, \"collections\": {\"minor\": %llu, \"major\": %llu, \"forced_major\": "
                        "%llu, \"compactions\": %llu}, \"clean_stop\": %s, \"lost_words\": %llu, "
                        "\"notes\": [",
                        (unsigned long long)g->minor, (unsigned long long)g->major,
                        (unsigned long long)g->forced, (unsigned long long)g->compactions,
                        g->ring_stop ? "true" : "false", (unsigned long long)g->lost_words);
    notes(g, w, true);
    ember_writer_puts(w, "]}\n");
}

/* Computes the trace's GC figures and prints them with print; with
 * pauses, a trace without any is an error. */
static int compute_and_print(
    struct ember_trace *t, const struct ember_sink *out, struct ember_diag *d, bool pauses,
    void (*print)(const struct gc *g, struct ember_writer *w, const void *ctx), const void *ctx)
{
    struct gc *g = calloc(1, sizeof(*g)); /* zeroed: released even if never computed */
    struct ember_writer *w = malloc(sizeof(*w));
    int err = g && w ? compute(t, g, d) : -ENOMEM;
    if (!err && pauses && !g->pauses.n)
        err = ember_diag_set(d, -ENODATA, NULL, 0, "no GC pause in the trace");
    if (!err) {
        ember_writer_init(w, out);
        print(g, w, ctx);
        err = ember_writer_flush(w);
    }
    if (g)
        release(g);
    free(g);
    free(w);
    return err;
}

static void print_stats(const struct gc *g, struct ember_writer *w, const void *ctx)
{
    const struct ember_gc_options *o = ctx;
    struct summary s;
    summarize(g, &s);
    if (o->json)
        print_json(g, &s, w, o);
    else
        print_text(g, &s, w, o);
}

static void print_latency(const struct gc *g, struct ember_writer *w, const void *ctx)
{
    (void)ctx;
    ember_writer_printf(w,
                        "# GC pauses (per domain, the outermost of major, stw_leader and "
                        "interrupt_remote): %lld pauses",
                        (long long)g->pauses.n);
    if (g->open_at_end)
        ember_writer_printf(w, " (%llu still open at the end, closed there)",
                            (unsigned long long)g->open_at_end);
    ember_writer_puts(w, ", durations in microseconds\n");
    ember_latency_table(w, &g->pauses);
    ember_latency_chart(w, &g->pauses);
    if (g->cut || g->lost_words || !g->ring_stop)
        ember_writer_puts(w, "\n");
    notes(g, w, false);
}

int ember_trace_gc_stats(struct ember_trace *t, const struct ember_gc_options *o,
                         const struct ember_sink *out, struct ember_diag *d)
{
    return compute_and_print(t, out, d, false, print_stats, o);
}

int ember_trace_gc_latency(struct ember_trace *t, const struct ember_sink *out,
                           struct ember_diag *d)
{
    return compute_and_print(t, out, d, true, print_latency, NULL);
}
