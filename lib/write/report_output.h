/*
 * report_output.h - how the text reports write what they show
 * (library-internal; report_output.c).
 */
#ifndef EMBER_WRITE_REPORT_OUTPUT_H
#define EMBER_WRITE_REPORT_OUTPUT_H

#include "ember/model.h"
#include "ember/write.h"
#include "base/writer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline double ember_report_percent(int64_t v, int64_t total)
{
    return total ? 100.0 * (double)v / (double)total : 0.0;
}

/* A weight in a text column: times and sizes in their units ("42.5 ms"),
 * counts exact, right-aligned in width. */
void ember_report_put_weight(struct ember_writer *w, const struct ember_profile *p, int64_t v,
                             int width);
/* A total in a sentence: "75 ms of cpu", "2303 samples" (buf: cap bytes). */
void ember_report_total_text(char *buf, size_t cap, const struct ember_profile *p, int64_t v);
/* "peak heap 12.5 MiB at 1.234 s\n" for each counter over time: its
 * highest point and when it was first reached. */
void ember_report_peaks(struct ember_writer *w, const struct ember_profile *p);
/* A name as a CSV field (quoted when it must be) or a TSV one. */
void ember_report_put_field(struct ember_writer *w, enum ember_table fmt, const char *s, size_t n);
/* Numbers of a CSV/TSV row: ",weight,percent". */
void ember_report_put_cells(struct ember_writer *w, const struct ember_profile *p,
                            enum ember_table fmt, int64_t v, int64_t total);

static inline const char *ember_report_name_of(const struct ember_profile *p, uint32_t f,
                                               size_t *len)
{
    return ember_profile_frame_name(p, f, len);
}

/* Whether function f is named name. */
bool ember_report_name_is(const struct ember_profile *p, uint32_t f, const char *name);

#endif
