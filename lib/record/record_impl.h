/*
 * record_impl.h - the sampler's parts (see ember/record.h): the events and
 * their rings (events.c), records copied from the rings or made from /proc
 * (rings.c, synth.c), the perf.data layout around them (perf_data_write.c)
 * and the life of a recording (recorder.c).
 *
 * Invariants: the output is written in order - header placeholder, ids,
 * attrs, data records as they come - and only the header is rewritten (by
 * offset) at the end; every record written went through rec_note, so the
 * counts and the files needing build-ids are the data section's.
 */
#ifndef EMBER_RECORD_RECORD_IMPL_H
#define EMBER_RECORD_RECORD_IMPL_H

#include "ember/record.h"
#include "base/strmap.h"

#include <linux/perf_event.h>
#include <stdint.h>

/* One ring per CPU: the first event opened on that CPU owns it, the others
 * write into it (PERF_EVENT_IOC_SET_OUTPUT). */
struct rec_ring {
    int fd;
    void *base; /* the metadata page, then the data pages */
    size_t len;
    bool hup; /* its event's task ended: drained, no longer polled */
};

/* The file's events: the sampling one, and context switches (off-CPU). */
enum { REC_SAMPLING = 0, REC_SWITCHES = 1, REC_MAX_ATTRS = 2 };

/* An open event: its CPU (an index into cpus), which of the file's events
 * it is (REC_SAMPLING...) and its id in the file. */
struct rec_event {
    int fd;
    unsigned cpu;
    unsigned attr;
    uint64_t id;
};

/* A file the data section maps, for HEADER_BUILD_ID. */
struct rec_dso {
    unsigned char build_id[20];
    unsigned char size; /* 0: not known yet (read from the file at the end) */
    bool kernel;
};

struct ember_recorder {
    struct ember_record_opts o;
    struct perf_event_attr attr;    /* REC_SAMPLING's */
    struct perf_event_attr cs_attr; /* REC_SWITCHES', with off_cpu */
    unsigned nattrs;
    const char *event;
    bool event_fallback;
    uint64_t *cs_ids; /* REC_SWITCHES' ids, sorted: its samples are not counted as samples */
    size_t ncs_ids;
    int *cpus;
    size_t ncpus;
    struct rec_event *ev; /* one per (thread, CPU) */
    size_t nev, evcap;
    struct rec_ring *rings; /* one per CPU, in cpus' order */

    pid_t child;     /* the command, -1 without one */
    int child_pidfd; /* readable once it ends: polled beside the rings; -1 without */
    int go_fd;       /* written to let the child exec */
    int exec_fd;     /* the child's exec errno, or EOF once it exec'd */
    int *pidfds;     /* -p: one per process still running, -1 once ended */
    size_t alive;
    bool cmd_ended;
    bool cmd_killed; /* it outlived SIGTERM by o.kill_after_ms: SIGKILL */
    int cmd_status;
    int exec_errno;
    bool started, stopped;

    int out;                          /* the perf.data file */
    uint64_t data_offset;             /* where the data section starts */
    uint64_t data_size;               /* bytes of records written */
    uint64_t samples, switches, lost; /* counted from the records written */
    uint64_t first_time, last_time;
    struct ember_strmap dsos; /* file name -> struct rec_dso */
    unsigned char *buf;       /* a record that wraps around a ring's end, put together */
    uint64_t t0, t1;          /* CLOCK_MONOTONIC ns at start and stop */
};

/* events.c */
bool rec_command_only(const struct ember_recorder *r);
/* The attr of event i (REC_SAMPLING...) and its name. */
const struct perf_event_attr *rec_attr(const struct ember_recorder *r, unsigned i);
const char *rec_attr_name(const struct ember_recorder *r, unsigned i);
int rec_online_cpus(struct ember_recorder *r, struct ember_diag *d);
int rec_open_events(struct ember_recorder *r, struct ember_diag *d);
int rec_map_rings(struct ember_recorder *r, struct ember_diag *d);
int rec_enable(struct ember_recorder *r, bool on);

/* rings.c: copying records into the data section */
int rec_write(struct ember_recorder *r, const void *buf, size_t len, struct ember_diag *d);
int rec_emit(struct ember_recorder *r, const void *rec, size_t len, struct ember_diag *d);
int rec_drain(struct ember_recorder *r, struct ember_diag *d);
int rec_finished_round(struct ember_recorder *r, struct ember_diag *d);
/* A mapped file, once, for HEADER_BUILD_ID: its build-id when known. */
int rec_note_dso(struct ember_recorder *r, const char *name, size_t len, const unsigned char *id,
                 unsigned idsize, bool kernel);

/* synth.c: what perf synthesizes for what existed before the recording */
int rec_synth_kernel(struct ember_recorder *r, struct ember_diag *d);
int rec_synth_process(struct ember_recorder *r, pid_t pid, struct ember_diag *d);
int rec_synth_all(struct ember_recorder *r, struct ember_diag *d);
/* The bytes of the sample_id trailer of a synthesized record (zeros, as perf). */
size_t rec_id_trailer_size(const struct ember_recorder *r);

/* perf_data_write.c */
int rec_write_head(struct ember_recorder *r, struct ember_diag *d);
int rec_write_tail(struct ember_recorder *r, struct ember_diag *d);

#endif
