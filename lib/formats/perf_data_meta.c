/*
 * perf_data_meta.c - what a perf.data recording says of itself, for the
 * profile's meta (ember/profile.h), which the pprof writer gives as
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
#include "perf_data.h"
#include "perf_names.h"

#include <string.h>

/* The kept event's attributes: the first of that name (NULL: none). */
static const struct pd_attr *kept_attr(const struct pd_file *f, const char *kept)
{
    for (size_t a = 0; kept && a < f->nattrs; a++)
        if (ember_perf_same_event(f->attrs[a].name, strlen(f->attrs[a].name), kept, strlen(kept)))
            return &f->attrs[a];
    return NULL;
}

static int set_period(struct ember_profile *p, const struct pd_file *f, const char *kept)
{
    const struct pd_attr *a = kept_attr(f, kept);
    if (!a)
        return 0;
    char type[EMBER_UNIT_MAX];
    const char *unit;
    ember_perf_period_value(kept, strlen(kept), type, sizeof(type), &unit);
    struct ember_profile_meta m = *ember_profile_meta(p);
    bool clock = strcmp(unit, "nanoseconds") == 0;
    m.period_type = type;
    m.period_unit = unit;
    m.period = !a->freq                    ? (int64_t)a->sample_period
               : clock && a->sample_period ? (int64_t)(1000000000 / a->sample_period)
                                           : 0;
    return ember_profile_set_meta(p, &m);
}

int pd_profile_meta(struct ember_profile *p, struct pd_names *n, const struct pd_file *f,
                    const struct pd_tasks *t, const char *kept)
{
    int err = set_period(p, f, kept);
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
