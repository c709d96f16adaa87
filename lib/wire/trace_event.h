/*
 * trace_event.h - the one writer of Chrome's Trace Event JSON objects
 * (library-internal), for the profile converter (write/chrome_trace.c),
 * the trace export (traceview/chrome.c) and the GC timeline
 * (traceview/gc_timeline.c).
 *
 * An event is written as its keys come: open (its "ph"), then the keys in
 * the order the writer's output has always had them, then close. Each key
 * is spelled here once; strings go through base/escape.h with the writer's
 * JSON flags. The writers frame the file ("traceEvents", "otherData")
 * themselves.
 */
#ifndef EMBER_WIRE_TRACE_EVENT_H
#define EMBER_WIRE_TRACE_EVENT_H

#include "base/writer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for a time from ember_trace_event_time. */
enum { EMBER_TRACE_EVENT_TIME_MAX = 32 };

/* sep (what separates it from the event before), then {"ph":"<ph>". */
void ember_trace_event_open(struct ember_writer *w, const char *sep, const char *ph);

/* ,"cat":"<cat>" (a category needs no escaping). */
void ember_trace_event_cat(struct ember_writer *w, const char *cat);

/* ,"pid":<pid>,"tid":<tid> */
void ember_trace_event_ids(struct ember_writer *w, uint32_t pid, uint32_t tid);

/* ,"ts":<ts> and ,"dur":<dur>, numbers already spelled. */
void ember_trace_event_ts(struct ember_writer *w, const char *ts);
void ember_trace_event_dur(struct ember_writer *w, const char *dur);

/* ,"name":"<n bytes of s escaped><suffix>" (suffix is not escaped). */
void ember_trace_event_name(struct ember_writer *w, const char *s, size_t n, const char *suffix,
                            unsigned json_flags);

/* ,"s":"t": an instant event scoped to its thread. */
void ember_trace_event_thread_scope(struct ember_writer *w);

/* A metadata event's kind: ,"name":"<what>" (process_name, thread_name). */
void ember_trace_event_meta(struct ember_writer *w, const char *what);

/* A metadata event's value and its end: ,"args":{"name":"<s escaped>"}} */
void ember_trace_event_meta_name(struct ember_writer *w, const char *s, size_t n,
                                 unsigned json_flags);

/* A counter event's ("C") value and its end: ,"args":{"<key escaped>":<v>}}
 * (viewers draw a series per key: the counter's unit). */
void ember_trace_event_counter(struct ember_writer *w, const char *key, size_t n, int64_t v,
                               unsigned json_flags);

/* The end of an event: } */
void ember_trace_event_close(struct ember_writer *w);

/* ns nanoseconds as microseconds to the nanosecond ("12.345", "-0.250")
 * into buf (EMBER_TRACE_EVENT_TIME_MAX bytes), from its magnitude and
 * sign. Returns the length. */
size_t ember_trace_event_time(char *buf, uint64_t ns, bool negative);

#endif
