/*
 * perf_data_values.c - which of a perf.data file's events the profile
 * keeps, and the values its samples weigh: the choice perf script text
 * leaves to stackcollapse-perf.pl (the event asked for, else the first one
 * sampled), made the same way.
 *
 * A sample weighs its period (pd_sample: the period field, or the event's
 * fixed period where samples carry none, as perf reads them), in the
 * event's unit: nanoseconds of "cpu" for the clocks, known from the
 * attribute whatever the event is named ("cpu-clock:ppp",
 * "cpu-clock/period=100000/", a name= term), a count of the event
 * otherwise; without periods, samples alone. Off-CPU intervals (context
 * switches and their switch records) add off-CPU time and, beside a
 * clock, wall time (cpu + off-cpu). A recording whose threads only waited
 * is a profile too: its first event other than the context switches is
 * kept though it sampled nothing, so that it has cpu (0), off-CPU and
 * wall time like any other.
 * Invariants: keep[] marks every event of the kept one's name and, with
 * off-CPU time shown, the context switches, whose samples give the
 * intervals their stacks (their own weights never count then).
 */
#include "read/perf/perf_data.h"
#include "read/perf/perf_names.h"

#include <stdio.h>

static bool same_event(const char *a, const char *b)
{
    return ember_perf_same_event(a, strlen(a), b, strlen(b));
}

/* The event kept: the one asked for, else the first sampled (with
 * off-CPU intervals, the first sampled but the context switches, which
 * give the intervals their stacks, and when none was, the file's first
 * other event). */
static const char *kept_event(const struct pd_file *f, const struct pd_seen *seen,
                              const char *filter, bool intervals)
{
    if (filter)
        return filter;
    uint64_t first = UINT64_MAX;
    const char *kept = NULL, *unsampled = NULL;
    for (size_t a = 0; a < f->nattrs; a++) {
        if (intervals && pd_offcpu_is_switches(&f->attrs[a]))
            continue;
        if (!unsampled)
            unsampled = f->attrs[a].name;
        if (!seen[a].first || seen[a].first > first)
            continue;
        first = seen[a].first;
        kept = f->attrs[a].name;
    }
    return kept ? kept : intervals ? unsampled : NULL;
}

/* Off-CPU time is shown when intervals were measured and the context
 * switches are not themselves the event asked for (then they count as
 * samples, as perf script shows them). */
static bool shows_offcpu(const struct pd_file *f, const char *kept, bool intervals)
{
    if (!intervals)
        return false;
    for (size_t a = 0; kept && a < f->nattrs; a++)
        if (pd_offcpu_is_switches(&f->attrs[a]) && same_event(f->attrs[a].name, kept))
            return false;
    return true;
}

static void count_kept(const struct pd_file *f, const struct pd_seen *seen, const char *kept,
                       bool offcpu, struct ember_read_stats *st, bool *keep)
{
    uint64_t other = UINT64_MAX;
    for (size_t a = 0; a < f->nattrs; a++) {
        keep[a] = (kept && same_event(f->attrs[a].name, kept)) ||
                  (offcpu && pd_offcpu_is_switches(&f->attrs[a]));
        if (keep[a])
            continue;
        st->filtered += seen[a].samples;
        if (seen[a].first && seen[a].first < other) {
            other = seen[a].first;
            snprintf(st->other_event, sizeof(st->other_event), "%s", f->attrs[a].name);
        }
    }
    if (kept)
        snprintf(st->kept_event, sizeof(st->kept_event), "%s", kept);
}

static bool is_clock(const struct pd_attr *a)
{
    return a->type == PERF_TYPE_SOFTWARE &&
           (a->config == PERF_COUNT_SW_CPU_CLOCK || a->config == PERF_COUNT_SW_TASK_CLOCK);
}

/* Whether the kept event's samples weigh their periods (as for perf script
 * text: some sample had one; an event that sampled nothing has them when
 * its attribute says its samples would), and its first attribute. */
static bool weighed(const struct pd_file *f, const struct pd_seen *seen, const char *kept,
                    const struct pd_attr **first)
{
    bool any = false;
    *first = NULL;
    for (size_t a = 0; a < f->nattrs; a++) {
        const struct pd_attr *at = &f->attrs[a];
        if (!same_event(at->name, kept))
            continue;
        if (!*first)
            *first = at;
        any |= seen[a].samples
                   ? seen[a].weighed
                   : (at->sample_type & PERF_SAMPLE_PERIOD) || (!at->freq && at->sample_period > 0);
    }
    return any;
}

/* The values: samples, and the periods' sum in the kept event's unit,
 * shown; without periods, samples alone. With off-CPU time, wall time
 * is shown (off-CPU time alone when no clock was kept beside it). */
static int add_values(struct ember_profile *p, const struct pd_file *f, const struct pd_seen *seen,
                      const char *kept, struct pd_values *v)
{
    int err = ember_profile_value(p, "samples", "count", &v->samples);
    unsigned shown = v->period = v->samples;
    const char *unit = NULL;
    const struct pd_attr *ka;
    if (!err && kept && weighed(f, seen, kept, &ka)) {
        char type[EMBER_UNIT_MAX];
        ember_perf_period_value(kept, strlen(kept), type, sizeof(type), &unit);
        if (is_clock(ka)) {
            snprintf(type, sizeof(type), "cpu");
            unit = "nanoseconds";
        }
        err = ember_profile_value(p, type, unit, &v->period);
        shown = v->period;
        snprintf(v->period_type, sizeof(v->period_type), "%s", type);
        v->period_unit = unit;
        v->period_attr = ka;
    }
    if (!err && v->offcpu)
        err = ember_profile_value(p, "off-cpu", "nanoseconds", &v->off);
    if (!err && v->offcpu && unit && strcmp(unit, "nanoseconds") == 0)
        err = ember_profile_value(p, "wall", "nanoseconds", &v->wall);
    if (v->offcpu)
        shown = v->wall != PD_NO_VALUE ? v->wall : !kept ? v->off : shown;
    if (!err)
        ember_profile_select_index(p, shown);
    return err;
}

int pd_values_set(struct ember_profile *p, const struct pd_file *f, const struct pd_seen *seen,
                  const char *filter, bool intervals, struct ember_read_stats *st, bool *keep,
                  struct pd_values *v)
{
    const char *kept = kept_event(f, seen, filter, intervals);
    *v = (struct pd_values){.off = PD_NO_VALUE, .wall = PD_NO_VALUE};
    v->offcpu = shows_offcpu(f, kept, intervals);
    count_kept(f, seen, kept, v->offcpu, st, keep);
    return add_values(p, f, seen, kept, v);
}
