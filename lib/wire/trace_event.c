/*
 * trace_event.c - Trace Event JSON objects (see trace_event.h).
 */
#include "wire/trace_event.h"
#include "base/escape.h"

#include <stdio.h>

void ember_trace_event_open(struct ember_writer *w, const char *sep, const char *ph)
{
    ember_writer_puts(w, sep);
    ember_writer_puts(w, "{\"ph\":\"");
    ember_writer_puts(w, ph);
    ember_writer_puts(w, "\"");
}

void ember_trace_event_cat(struct ember_writer *w, const char *cat)
{
    ember_writer_puts(w, ",\"cat\":\"");
    ember_writer_puts(w, cat);
    ember_writer_puts(w, "\"");
}

void ember_trace_event_ids(struct ember_writer *w, uint32_t pid, uint32_t tid)
{
    ember_writer_printf(w, ",\"pid\":%u,\"tid\":%u", pid, tid);
}

void ember_trace_event_ts(struct ember_writer *w, const char *ts)
{
    ember_writer_puts(w, ",\"ts\":");
    ember_writer_puts(w, ts);
}

void ember_trace_event_dur(struct ember_writer *w, const char *dur)
{
    ember_writer_puts(w, ",\"dur\":");
    ember_writer_puts(w, dur);
}

void ember_trace_event_name(struct ember_writer *w, const char *s, size_t n, const char *suffix,
                            unsigned json_flags)
{
    ember_writer_puts(w, ",\"name\":\"");
    ember_escape_json(w, s, n, json_flags);
    ember_writer_puts(w, suffix);
    ember_writer_puts(w, "\"");
}

void ember_trace_event_thread_scope(struct ember_writer *w)
{
    ember_writer_puts(w, ",\"s\":\"t\"");
}

void ember_trace_event_meta(struct ember_writer *w, const char *what)
{
    ember_writer_puts(w, ",\"name\":\"");
    ember_writer_puts(w, what);
    ember_writer_puts(w, "\"");
}

void ember_trace_event_meta_name(struct ember_writer *w, const char *s, size_t n,
                                 unsigned json_flags)
{
    ember_writer_puts(w, ",\"args\":{\"name\":\"");
    ember_escape_json(w, s, n, json_flags);
    ember_writer_puts(w, "\"}}");
}

void ember_trace_event_counter(struct ember_writer *w, const char *key, size_t n, int64_t v,
                               unsigned json_flags)
{
    ember_writer_puts(w, ",\"args\":{\"");
    ember_escape_json(w, key, n, json_flags);
    ember_writer_printf(w, "\":%lld}}", (long long)v);
}

void ember_trace_event_close(struct ember_writer *w)
{
    ember_writer_puts(w, "}");
}

size_t ember_trace_event_time(char *buf, uint64_t ns, bool negative)
{
    int n = snprintf(buf, EMBER_TRACE_EVENT_TIME_MAX, "%s%llu.%03llu", negative && ns ? "-" : "",
                     (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
    return n > 0 ? (size_t)n : 0;
}
