/*
 * perf_data_meta.c - what a perf.data recording says of itself, for the
 * profile's meta (ember/model.h), which the pprof writer gives as
 * PeriodType, Period and the first Mapping:
 * - the period: the kept event's sample_period when it was fixed (-c N,
 *   event/period=N/), in its value's type and unit ("cpu" nanoseconds for
 *   the clocks, else the event's count); in frequency mode a clock's
 *   period is the one the kernel's timer takes for it (1e9 / frequency ns,
 *   as Go's profiles say 1e9 / hz), and other events have none to say (the
 *   kernel adjusts it as it goes);
 * - the main module: the executable of the process with the most samples
 *   (pprof's first mapping, go tool pprof's "File:"), added when none of
 *   its code was sampled.
 */
#include "read/perf/perf_data.h"

#include <string.h>

/* The period of the kept event's samples, in the type and unit of the
 * value they weigh (perf_data_values.c: a clock is "cpu" nanoseconds by
 * its attributes, whatever its name); none when they weigh none. */
static int set_period(struct ember_profile *p, const struct pd_values *v)
{
    const struct pd_attr *a = v->period_attr;
    if (!a)
        return 0;
    struct ember_profile_meta m = *ember_profile_meta(p);
    bool clock = strcmp(v->period_unit, "nanoseconds") == 0;
    m.period_type = v->period_type;
    m.period_unit = v->period_unit;
    m.period = !a->freq                    ? (int64_t)a->sample_period
               : clock && a->sample_period ? (int64_t)(1000000000 / a->sample_period)
                                           : 0;
    return ember_profile_set_meta(p, &m);
}

int pd_profile_meta(struct ember_profile *p, struct pd_names *n, const struct pd_tasks *t,
                    const struct pd_values *v)
{
    int err = set_period(p, v);
    struct pd_map exe;
    if (err || !pd_tasks_main_exe(t, &exe))
        return err;
    struct pd_frame_src src = {exe.dso, exe.start, exe.end, exe.pgoff, exe.start, exe.pgoff};
    uint32_t module;
    err = pd_names_module(n, &src, &module);
    if (!err && module != EMBER_NO_MODULE)
        ember_profile_set_main_module(p, module);
    return err;
}
