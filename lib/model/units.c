/*
 * units.c - a profile's values as people read them: times as times
 * ("1.23 s", "450 us"), bytes as bytes ("12.5 MiB"), and for counts the
 * word that says what was counted ("samples", "cycles", "Ir").
 *
 * Units are pprof's words ("nanoseconds", "bytes", "count"). A scaled value
 * is shown with at most two decimals, trailing zeros dropped, in the largest
 * unit in which it is at least 1 (as go tool pprof prints them).
 */
#include "model/profile_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct scale {
    const char *name;
    double factor; /* in the unit's base: seconds, or bytes */
};

static const struct scale times[] = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
static const struct scale sizes[] = {
    {"TiB", 1099511627776.0}, {"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024.0}, {"B", 1}};

/* The factor that turns a value in unit into seconds (or bytes); 0 when
 * unit is neither a time nor a size. */
static double base_factor(const char *unit, bool *time)
{
    static const struct {
        const char *unit;
        double factor;
        bool time;
    } units[] = {
        {"nanoseconds", 1e-9, true},    {"microseconds", 1e-6, true}, {"milliseconds", 1e-3, true},
        {"seconds", 1, true},           {"bytes", 1, false},          {"kilobytes", 1024, false},
        {"megabytes", 1048576.0, false}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(unit, units[i].unit) == 0) {
            *time = units[i].time;
            return units[i].factor;
        }
    return 0;
}

bool ember_unit_scales(const char *unit)
{
    bool time;
    return unit && base_factor(unit, &time) != 0;
}

size_t ember_unit_format(char *buf, size_t cap, double value, const char *unit)
{
    bool time = false;
    double f = unit ? base_factor(unit, &time) : 0;
    if (f == 0 || cap < 2)
        return 0;
    const struct scale *sc = time ? times : sizes;
    size_t n = time ? sizeof(times) / sizeof(times[0]) : sizeof(sizes) / sizeof(sizes[0]);
    double base = value * f;
    size_t k = 0;
    while (k + 1 < n && fabs(base) < sc[k].factor)
        k++;
    int len = snprintf(buf, cap, "%.2f", base / sc[k].factor);
    if (len < 0 || (size_t)len >= cap)
        return 0;
    while (len > 0 && buf[len - 1] == '0')
        len--;
    if (len > 0 && buf[len - 1] == '.')
        len--;
    int m = snprintf(buf + len, cap - (size_t)len, " %s", sc[k].name);
    return m < 0 || (size_t)m >= cap - (size_t)len ? 0 : (size_t)(len + m);
}

const char *ember_profile_count_word(const struct ember_profile *p)
{
    return ember_unit_scales(ember_profile_unit(p)) ? NULL : ember_profile_sample_type(p);
}
