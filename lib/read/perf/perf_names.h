/*
 * perf_names.h - perf's symbols named as stackcollapse-perf.pl names them:
 * the rules both perf readers share (perf_script.c reads perf script's
 * text, perf_data*.c perf.data itself), so that the two give the same
 * stacks (library-internal).
 */
#ifndef EMBER_READ_PERF_NAMES_H
#define EMBER_READ_PERF_NAMES_H

#include "ember/read.h"
#include "ember/model.h"
#include "read/perf/perf_opts.h"
#include "symbol/frame.h"

#include <stdbool.h>
#include <stddef.h>

/* The script skips a symbol that starts with '(', meant for entries that
 * are only a module or a process in parentheses: "(/usr/lib/x.so)". A real
 * name may start with one too, "(anonymous namespace)::Matrix::operator*",
 * and must never be dropped (its time would go to its caller): only a
 * symbol that is one parenthesized group, nothing after it, is skipped. */
bool ember_perf_parenthesized_only(const char *s, size_t n);

/* An event's name without perf's modifier suffix ("cycles:u", "cpu-clock:pppH"
 * are cycles and cpu-clock, as inferno compares them), so that one event
 * printed with and without its modifiers is not split; a tracepoint's
 * "sched:sched_switch" keeps its second part, which is not modifiers. */
size_t ember_perf_event_base_len(const char *name, size_t n);
/* Whether two names, as perf names events (NAME[/TERMS/][[:]MODIFIERS]),
 * are one event, for --event-filter and the first event seen: the same
 * NAME; the same modifiers where both have some ("cycles:u" is "cycles",
 * as inferno compares them, not "cycles:k"); the same value of each term
 * both have, and a term only one has is a setting of the sampling
 * (period=, freq=, call-graph=...), not part of which event it is:
 * "task-clock" is "task-clock/freq=1000/", "cpu" is not "cpu/event=0x3c/"
 * and "task-clock/freq=99/" not "task-clock/freq=1000/". (Both
 * stackcollapse-perf.pl and perf's own evsel lookup compare names as
 * printed, whole.) */
bool ember_perf_same_event(const char *a, size_t alen, const char *b, size_t blen);
/* The value the periods of an event add up to, in pprof's words: the
 * clocks' nanoseconds are "cpu" time, other events count themselves
 * ("cycles"; perf's "samples" event is "events"). type holds cap bytes. */
void ember_perf_period_value(const char *event, size_t len, char *type, size_t cap,
                             const char **unit);

/* One piece of a symbol (FlameGraph's steps 4 to 7) into buf, which holds
 * plen + mod_len + pc_len + 16 bytes: "[unknown]" becomes "[module]" (with
 * " <pc>" for --addrs; *unknown when perf knew no module either), the rest
 * is tidied (generic, Rust, Java for a java process); returns the length.
 * *ann is the kind the script annotates it with (inlined pieces after the
 * first, kernel with --kernel, JIT with --jit; USER: none): views spell it
 * from the frame's record ("f_[k]"), the name never carries it. */
size_t ember_perf_name_piece(char *buf, const char *piece, size_t plen, const char *mod,
                             size_t mod_len, const char *pc, size_t pc_len, bool inlined, bool java,
                             const struct ember_perf_opts *po, bool *unknown,
                             enum ember_frame_kind *ann);

/* A stack's root as both perf readers make it without --pid or --tid:
 * the command, spaces as '_' (or "comm-PID/TID" text, ids that are no
 * numbers), marked a process (thread: a thread) so that reports know it is
 * no function; views spell it by its name alone. */
int ember_perf_intern_root(struct ember_profile *p, const char *name, size_t len, bool thread,
                           uint32_t *id);

/* A frame of an inline chain (--inline) as a record: its function, file,
 * line and column, inlined into the next one of the chain; with --context,
 * views spell it "func:file:line", and a function without a file gets that
 * spelling in its name, written in *buf (grown as needed). The caller sets
 * where it is (address, module). 0 or -ENOMEM. */
int ember_perf_inline_frame(const struct ember_symbol_frame *sf, bool context, char **buf,
                            size_t *cap, struct ember_frame *rec);

/* Telling perf script's text (perf_probe.c): is the line an event line,
 * a frame line, as the reader takes them (perf_script.c)? */
bool ember_perf_probe_event(const char *s, size_t n);
bool ember_perf_probe_frame(const char *s, size_t n);
enum ember_probe ember_perf_probe(const char *data, size_t len);

#endif
