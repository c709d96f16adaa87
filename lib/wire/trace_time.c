/*
 * trace_time.c - see trace_time.h.
 */
#include "wire/trace_time.h"

#include <math.h>

double ember_trace_fitted_dur(double ts, double limit)
{
    /* ts + (limit - ts) can round above limit, and no dur may give limit
     * exactly: step down a few ulps */
    double dur = limit - ts;
    for (int i = 0; i < 64 && dur > 0 && ts + dur > limit; i++)
        dur = nextafter(dur, -INFINITY);
    return dur > 0 ? dur : 0;
}
