/*
 * perf_reader.h - the perf.data reader's records, one by one, to a table
 * of callbacks (library-internal), as perf delivers them to its tools
 * (struct perf_tool in tools/perf/util/tool.h): building a profile is one
 * client (perf_data.c), counting records by type another (the tests).
 *
 * The reader reads the file once, front to back: the header, the data
 * section's records, then the feature sections after it. Kernel records
 * with a time are delivered in perf's time order (perf_data_order.c),
 * those without one (synthesized) at once, as perf script sees them;
 * perf's own records (types from 64) describe the file and are delivered
 * as read, after the reader has taken what they say.
 * Invariants: a record is delivered whole (its header's size bytes) and
 * only while the callback runs (the bytes are the reader's), unless the
 * callback holds it (pd_reader_hold) or takes it in a run (sample_records);
 * a callback
 * left NULL ignores its records; a negative return stops the reading with
 * that error, which the reader returns as is (its ember_diag the
 * callback's to set).
 */
#ifndef EMBER_READ_PERF_READER_H
#define EMBER_READ_PERF_READER_H

#include "read/perf/perf_order.h"

/* Records delivered between two calls of progress. */
enum { PD_READER_PROGRESS_EVERY = 1 << 14 };

/* What a kernel record other than a sample says of itself in its
 * sample_id trailer (events with sample_id_all), as perf hands its tools
 * a perf_sample with such records. */
struct pd_sample_id {
    int attr;      /* the file's event it belongs to; -1: none known */
    uint64_t time; /* 0: none */
    bool has_tid;  /* pid and tid known */
    uint32_t pid, tid;
};

typedef int (*pd_record_cb)(void *ctx, const struct pd_record *r, const struct pd_sample_id *id);

/* The callbacks, each optional; every one is handed the record (its type,
 * misc and size, and its bytes, header included), a sample decoded, a
 * kernel record with its sample_id; MMAP, COMM, FORK... are read by the
 * client from the bytes, as perf's tools read union perf_event. */
struct pd_reader_tool {
    /* The header was read: a file's events are known (a pipe's come as
     * HEADER_ATTR records). */
    int (*header)(void *ctx, const struct pd_file *f);
    /* An event described by a HEADER_ATTR record (pipe mode): the file's
     * attrs[attr]. */
    int (*attr)(void *ctx, const struct pd_record *r, size_t attr);
    /* A sample, decoded, of the file's event attrs[attr]; attr -1 (and s
     * NULL): its id is none of the file's events. */
    int (*sample)(void *ctx, const struct pd_record *r, int attr, const struct pd_sample *s);
    /* A sample before it is decoded, first offered here: 1, the client took
     * it (it decodes it itself, pd_file_attr_of and pd_file_parse_sample,
     * maybe on another thread, and holds it as long: pd_reader_hold); 0,
     * it goes to sample, decoded. So samples can leave the reading thread
     * as they are. */
    int (*sample_record)(void *ctx, const struct pd_record *r);
    /* Samples' records in a run, in order, before sample_record, where the
     * data's rounds are sorted on threads (pd_reader_threads): 1, the
     * client took them all, and their holds (pd_reader_let_go); 0, each
     * goes to sample_record (and this is not asked again). */
    int (*sample_records)(void *ctx, const struct pd_held_record *recs, size_t n);
    pd_record_cb mmap; /* MMAP and MMAP2 */
    pd_record_cb comm;
    pd_record_cb fork;
    pd_record_cb exit;
    pd_record_cb context_switch; /* SWITCH and SWITCH_CPU_WIDE */
    pd_record_cb lost;
    pd_record_cb throttle; /* THROTTLE and UNTHROTTLE */
    pd_record_cb other;    /* any other kernel record (KSYMBOL, AUX, ...) */
    /* perf's own records but HEADER_ATTR (FINISHED_ROUND, ...) */
    int (*user)(void *ctx, const struct pd_record *r);
    /* One of perf's own records but FINISHED_ROUND is about to be taken,
     * which may change the file's events (struct pd_file): a client whose
     * threads read them lets those finish first. */
    int (*file_changes)(void *ctx);
    /* The data section read and every record delivered, before the
     * feature sections are: a client that holds samples back finishes
     * them here, as one thread reading each as it comes does (event names
     * then are still the attributes' own, not the features'). */
    int (*data_end)(void *ctx);
    /* Every PD_READER_PROGRESS_EVERY records read; with the input read
     * ahead, after each chunk, in order, on the thread that runs the
     * reader. */
    void (*progress)(void *ctx);
};

struct pd_reader;

/* A reader of the perf.data in: 0 or -ENOMEM. */
int pd_reader_new(struct pd_reader **out, struct ember_input *in);
void pd_reader_free(struct pd_reader *rd);
/* With threads (-j) above 1, the data read ahead on threads - 1 threads
 * of their own (pd_stream_read_ahead: up to 4), from the first record to
 * the run's end, and a file's rounds of records sorted on as many
 * (perf_data_rounds.c: up to 4). */
void pd_reader_threads(struct pd_reader *rd, unsigned threads);
/* Reads the whole file, its records to tool's callbacks (ctx theirs):
 * 0, a callback's error, or the file's (set in d). */
int pd_reader_run(struct pd_reader *rd, const struct pd_reader_tool *tool, void *ctx,
                  struct ember_diag *d);
/* What the file says of itself: its events, build-ids, names (complete
 * once run has returned 0; the events from the header callback on). */
const struct pd_file *pd_reader_file(const struct pd_reader *rd);
/* Keeps the record being delivered where it is, after its callback has
 * returned, until pd_reader_let_go(*hold): true; false where it cannot be
 * kept (its bytes were gathered or copied). A sample decoded from it
 * stays valid as long. */
bool pd_reader_hold(struct pd_reader *rd, const struct pd_record *r, uint64_t *hold);
/* n holds on the same bytes let go. */
void pd_reader_let_go(struct pd_reader *rd, uint64_t hold, size_t n);
/* The latest time of a timed record read so far (0: none). */
uint64_t pd_reader_last_time(const struct pd_reader *rd);

#endif
