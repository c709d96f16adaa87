/*
 * ember/record.h - the sampler: records a command, running processes or the
 * whole system with perf_event_open into a perf.data file that perf script,
 * perf report, hotspot and ember's own perf.data reader read.
 *
 * One sampling event per CPU (cycles where the hardware counts them, else
 * cpu-clock), inherited by every thread and child, each CPU's records in one
 * ring that is copied into the file's data section as it fills. Off-CPU
 * recording adds a second event per CPU, context-switches sampled at every
 * switch, whose switch-out and switch-in records (PERF_RECORD_SWITCH) time
 * how long each thread was away, as `perf record -e cpu-clock -e
 * context-switches/period=1/ --switch-events -g` does. The file is
 * written through a descriptor the caller opened (a regular file: the
 * header is rewritten at the end); nothing is printed, errors are negative
 * errno values with a struct ember_diag saying what failed.
 *
 * Use: ember_recorder_new (opens the events; a command is forked and waits),
 * ember_recorder_start (the command execs, or the events are enabled),
 * ember_recorder_poll until it returns 0 (the command or every process
 * ended) or the caller decides to stop (a signal, a duration),
 * ember_recorder_stop (the file is complete), ember_recorder_free.
 */
#ifndef EMBER_RECORD_H
#define EMBER_RECORD_H

#include "ember/base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum {
    EMBER_RECORD_FREQ_DEFAULT = 4000,
    EMBER_RECORD_STACK_DEFAULT = 8192,
    EMBER_RECORD_KILL_AFTER_MS_DEFAULT = 2000
};

struct ember_record_opts {
    unsigned freq;       /* samples per second and CPU; 0: 4000, perf's default */
    bool dwarf;          /* the user stack and registers with each sample (--call-graph dwarf) */
    unsigned stack_size; /* bytes of user stack copied in dwarf mode; 0: 8192 */
    unsigned fp_stack;   /* fp mode: bytes of user stack (and IP, SP, BP) with each sample,
                            where a frameless leaf's return address is; 0: none */
    const pid_t *pids;   /* -p: running processes, every thread of each */
    size_t npids;
    bool system_wide;         /* -a */
    bool off_cpu;             /* also every context switch with its stack, and the
                                 switches themselves, for off-CPU time; sampling is
                                 then cpu-clock, so that on- and off-CPU add up to time */
    char *const *argv;        /* the command (NULL-terminated), or NULL; with pids or
                                 system_wide, recording lasts as long as it runs */
    char *const *cmdline;     /* what the file says recorded it (HEADER_CMDLINE) */
    unsigned kill_after_ms;   /* a command still running at stop gets SIGTERM, then
                                 SIGKILL when it has not ended this long after;
                                 0: EMBER_RECORD_KILL_AFTER_MS_DEFAULT */
    const char *tool_version; /* HEADER_VERSION, e.g. "ember 0.1.0" */
};

struct ember_record_stats {
    uint64_t samples;     /* samples of the sampling event written */
    uint64_t switches;    /* off_cpu: context switches recorded with their stacks */
    uint64_t lost;        /* samples the kernel could not write (ring full) */
    uint64_t duration_ns; /* from start to stop */
    uint64_t data_bytes;  /* the data section */
    const char *event;    /* "cycles", "cpu-clock" or "cpu-clock:u" */
    bool event_fallback;  /* cycles were asked for and are not counted here */
    bool kernel_excluded; /* not permitted: user-space samples only */
    bool cmd_ended;       /* the command was waited for: cmd_status is valid */
    bool cmd_killed;      /* it did not end at SIGTERM: SIGKILL ended it */
    int cmd_status;       /* its wait status (waitpid) */
    int exec_errno;       /* why the command could not run (0: it ran) */
    pid_t pid;            /* the command's process (from ember_recorder_new), -1: none */
};

struct ember_recorder;

/* Opens the events (a command is forked, stopped before exec) and writes
 * the start of the file into fd. */
EMBER_API int ember_recorder_new(struct ember_recorder **out, const struct ember_record_opts *o,
                                 int fd, struct ember_diag *d);
/* Lets the command exec (its events enable on exec), or enables the events
 * on the processes (after their threads and maps are written). A command
 * that cannot run is -ENOENT, -EACCES... with stats' exec_errno set. */
EMBER_API int ember_recorder_start(struct ember_recorder *r, struct ember_diag *d);
/* Waits up to timeout_ms for records and copies them to the file. Returns
 * 1 while there is something to record, 0 when the command (or every
 * process of -p) has ended, or a negative errno. Interrupted by a signal,
 * it returns 1 at once. */
EMBER_API int ember_recorder_poll(struct ember_recorder *r, int timeout_ms, struct ember_diag *d);
/* Stops sampling, ends a command still running (SIGTERM, as perf does; then
 * SIGKILL if it is still running kill_after_ms later: stats' cmd_killed) and
 * waits for it, copies the last records, writes the feature sections and
 * the header: the file is complete. */
EMBER_API int ember_recorder_stop(struct ember_recorder *r, struct ember_diag *d);
EMBER_API void ember_recorder_stats(const struct ember_recorder *r, struct ember_record_stats *s);
/* Closes everything; a command never started is killed and reaped. */
EMBER_API void ember_recorder_free(struct ember_recorder *r);

/*
 * Heap recordings (`ember record --heap`): the allocation recorder
 * preloaded into a command (libember-heap.so) writes one file per process
 * image, heap.PID.N, into a directory (EMBER_HEAP_DIR); this makes them
 * one recording, the files back to back in the order their processes
 * started, each its header's size (lib/wire/heap_format.h). A file without
 * a whole header (a process killed as it began) is left out.
 */
struct ember_heap_archive_stats {
    unsigned processes;
    uint64_t events; /* allocations and frees recorded (the sequence counters) */
    uint64_t bytes;  /* the archive's size */
};
/* Writes dir's recordings at out_fd's position: 0, or a negative errno
 * with d naming the file that failed. */
EMBER_API int ember_heap_archive(const char *dir, int out_fd, struct ember_heap_archive_stats *st,
                                 struct ember_diag *d);

#endif
