/*
 * perf_opts.c - stackcollapse-perf.pl's options (see perf_opts.h).
 */
#include "read/perf/perf_opts.h"

#include <stddef.h>

const struct ember_format_option ember_perf_options[] = {
    {"pid", EMBER_OPTION_FLAG, NULL, NULL, "include PID with process names"},
    {"tid", EMBER_OPTION_FLAG, NULL, NULL, "include TID and PID with process names"},
    {"kernel", EMBER_OPTION_FLAG, NULL, NULL, "annotate kernel functions with _[k]"},
    {"jit", EMBER_OPTION_FLAG, NULL, NULL, "annotate JIT functions with _[j]"},
    {"all", EMBER_OPTION_FLAG, NULL, NULL, "all annotations (--kernel --jit)"},
    {"addrs", EMBER_OPTION_FLAG, NULL, NULL, "include raw addresses where symbols can't be found"},
    {"event-filter", EMBER_OPTION_STRING, "EVENT", "the first event seen",
     "keep only samples of EVENT (task-clock: also task-clock:u and task-clock/freq=1000/; "
     "modifiers and terms given must be the event's)"},
    {"inline", EMBER_OPTION_FLAG, NULL, NULL, "expand inlined functions from DWARF (elfutils)"},
    {"context", EMBER_OPTION_FLAG, NULL, NULL, "with --inline: add source file:line"},
    {"srcline", EMBER_OPTION_FLAG, NULL, NULL,
     "input is from 'perf script -F+srcline': add source lines"},
    {NULL, 0, NULL, NULL, NULL},
};

struct ember_perf_opts ember_perf_opts_of(const struct ember_read_opts *o)
{
    bool all = ember_read_opts_flag(o, "all");
    struct ember_perf_opts po = {
        .include_pid = ember_read_opts_flag(o, "pid"),
        .include_tid = ember_read_opts_flag(o, "tid"),
        .annotate_kernel = all || ember_read_opts_flag(o, "kernel"),
        .annotate_jit = all || ember_read_opts_flag(o, "jit"),
        .include_addrs = ember_read_opts_flag(o, "addrs"),
        .event_filter = ember_read_opts_string(o, "event-filter"),
        .srcline = ember_read_opts_flag(o, "srcline"),
        .context = ember_read_opts_flag(o, "context"),
    };
    po.inline_frames = po.context || ember_read_opts_flag(o, "inline");
    return po;
}
