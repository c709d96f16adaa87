"""The serial share of reading a perf.data with -j N, per thread and phase,
from a profile of ember itself:

  perf record -F 4000 --call-graph dwarf,16384 -o self.data -- \\
      ember collapse -j 2 RECORDING -o /dev/null
  ember collapse --tid self.data > self.folded
  python3 bench/perfdata_phases.py self.folded [one.folded]

With one.folded, a profile of the same read with -j 1, the serial part is
also given as a share of one thread's work (Amdahl's serial fraction):
with more threads the whole costs more CPU (waking, merging, overlays),
which the share of the -j N profile hides.

Build ember for it with frame pointers and symbols (cmake
-DCMAKE_C_FLAGS="-fno-omit-frame-pointer -g", Release). Weights are
nanoseconds where perf records cpu-clock (a VM); each sample goes to the
first phase whose text is in its stack (Release builds inline much: the
names are those left after LTO, the unwinder inside pd_raw_sample). The caller's
thread is the serial part: with -j N (2 and more) the file is read on
N - 1 threads of their own, 4 at most (perf_data_ahead.c), each chunk's
records framed there too, its rounds of records sorted on as many
(perf_data_rounds.c; the caller's thread only copies the frames, and sorts
a round no thread has taken, counted serial), /proc/kallsyms on another
(perf_data_names.c), libdwfl's debuginfod client loaded on another
(perf_data.c: libdwfl loads it once, where a debug file is missing),
samples' records are decoded, unwound, built and weighed on the caller's
thread and j - 1 workers (perf_data_records.c;
DWARF samples decoded on the caller's where records cannot be taken,
perf_data_jobs.c), then merged in order: where they can be, on worker 1
while the others build the next batch (merge_behind), else on the
caller's (the threads' weights added up at the end), the files' symbol
tables (and with --inline their DWARF) are read on as many before naming
(symbol/prepare.c), the raw nodes are named and placed on the caller's
thread and j - 1 others, each into a profile of its own
(perf_data_place_threads.c), the profiles' frames and nodes merged on
as many (but the steps of the caller alone, counted serial) and their
modules on the caller's (model/profile_merge.c), and everything else is
the caller's.

What the command does once the profile is read (collapse's writer,
freeing at exit) is shown, and left out of the serial part and of the
-j 1 read's work: it is not the reader's.

Of the serial part, what the caller does while the workers build the
batch before (it fills the next: the records handed over) is given apart:
it adds to the read's time only where it outlasts the building; the rest
is the caller's alone, the workers idle. The merge behind on worker 1 is
serial too, beside the building, and given apart.
"""
import collections
import sys

# a module's DWARF read ahead (LTO may inline prepare_main into its caller),
# not by the first address resolved in it
PREPARED = "ember_symbol_module_inlines;"

# What the command does with the profile once read (collapse's writer,
# freeing it at exit): not the reader's, left out of both shares.
WRITER = "the output written, the profile freed (after the read)"

# Rounds the sorting threads did not take, sorted on the caller's
# (perf_data_rounds.c): serial, beside the building.
SORTED_HERE = "records: rounds sorted on the caller's thread (none took them)"

# The batch before merged in order on worker 1, while the others build
# the next (perf_data_jobs.c's merge_behind): serial, beside the building.
MERGED_BEHIND = "records: the batch before merged in order (worker 1, while the next builds)"

PHASES = [(WRITER, ["ember_write_", "ember_profile_free", "cli_reader_release"]),
          ("waiting (condition variables)", ["pthread_cond_wait", "futex_wait"]),
          ("read() of the file, its records framed",
           ["pd_stream_read", "ember_input_read_chunk", "ahead_main"]),
          ("the kernel's symbols, read ahead", ["kernel_main"]),
          ("libdwfl's debuginfod client loaded, ahead", ["debuginfod_main"]),
          ("raw nodes named and placed (every thread's share)", ["placer_main", "place_pieces"]),
          ("placing: the merges' steps of the caller alone (the others waiting)",
           ["plan_frames", "plan_nodes", "seed_nodes", "size_table"]),
          ("placing: the threads' profiles' frames and nodes merged (every thread's share)",
           ["ember_profile_merge_pieces;run", "ember_crew_run", "ember_merge_frames", "ember_merge_nodes",
            "helper_main"]),
          ("placing: the threads' profiles' modules merged, what is left of frames and nodes",
           ["ember_profile_merge_pieces"]),
          (MERGED_BEHIND, ["merge_behind"]),
          ("samples unwound, stacks built (every thread's share)",
           ["take_piece", "worker_main"]),
          ("rounds of records sorted (every thread's share)", ["sorter_main"]),
          # rounds no thread took, sorted on the caller's (a DWARF
          # recording's small ones, all of them): its ordering, serial
          (SORTED_HERE, ["sort_taken"]),
          ("files' symbols, --inline's DWARF, read ahead (every thread's share)",
           ["prepare_main", "ember_symbol_modules_prepare", "ember_symbol_modules_read_symbols",
            "prepare.lto_priv", PREPARED]),
          ("samples: stacks merged in order, weighed",
           ["merge_pieces", "finish_piece", "pd_raw_merge", "pd_raw_weigh", "pd_records_finish",
            "pd_jobs_finish"]),
          ("samples: unwound, raw stacks built", ["pd_raw_sample", "ember_unwind_frames"]),
          ("placing: names, kallsyms, DWARF (after the records)",
           ["place_nodes", "pd_place_profile", "pd_names"]),
          ("drains: a batch built at once (a record that changes threads or maps)",
           ["pd_records_drain", "pd_jobs_drain"]),
          ("records let go (a batch landed), while the next is built", ["let_go"]),
          ("a batch launched: the workers woken", ["send.", "pd_jobs_launch"]),
          ("records: ordering, parsing, tasks", ["perf_data_read", "pd_reader_run", "pd_queue"])]

# The records' reading set up and torn down (perf_data.c's reader_init and
# reader_release, the threads the header starts, the input's readers and
# the workers stopped): the caller's alone, the workers idle. First: their
# stacks hold the records' phases' names too.
SET_UP = ("records' reading set up and torn down (threads made and joined, tables made and "
          "freed)")
PHASES.insert(2, (SET_UP, ["reader_init", "reader_release", "on_header", "pd_ahead_stop",
                           "pd_jobs_free"]))


def sampled(path):
    """The CPU time a profile sampled, in ns, less the writer's."""
    total = 0.0
    for line in open(path, errors="replace"):
        stack, _, weight = line.rstrip("\n").rpartition(" ")
        if phase_of(";".join(stack.split(";")[1:]) + ";") != WRITER:
            total += float(weight)
    return total


def phase_of(body):
    """The phase of a stack (its frames, each followed by ";")."""
    return next((n for n, keys in PHASES if any(k in body for k in keys) and
                 not (PREPARED in keys and "ember_symbolizer_resolve" in body)), "other")


def main(path, one=None):
    per = collections.defaultdict(collections.Counter)
    total = 0.0
    for line in open(path, errors="replace"):
        stack, _, weight = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        body = ";".join(frames[1:]) + ";"
        total += float(weight)
        per[frames[0]][phase_of(body)] += float(weight)
    print("%.3f s of CPU sampled" % (total / 1e9))
    for thread, phases in sorted(per.items(), key=lambda t: -sum(t[1].values())):
        print("%-28s %5.1f%%" % (thread, 100 * sum(phases.values()) / total))
        for name, w in phases.most_common():
            print("    %5.1f%%  %s" % (100 * w / total, name))
    print_serial(per, total, sampled(one) if one else None)


# The caller's work while the workers build a batch (where samples'
# records are handed over, perf_data_records.c): it lets the batch before
# go and fills the next meanwhile (worker 1 merges the one before), so
# that work adds to the read's time only where it outlasts the building
# (few cores: never; many: about as long).
BESIDE = ("records: ordering, parsing, tasks", SORTED_HERE, "read() of the file", "records let go")


def is_caller(thread):
    """Whether "comm-PID/TID" is the process's first thread, the caller's."""
    pid, _, tid = thread.rpartition("-")[2].partition("/")
    return pid == tid


def print_serial(per, total, one):
    """The serial part: the caller's thread, less its share of the work
    every thread does and its waiting; and the largest piece another
    thread does alone (the file read on one thread, kallsyms, one file's
    DWARF)."""
    shared = ("samples unwound, stacks built", "rounds of records sorted", "files' symbols",
              "waiting", "raw nodes named and placed", "placing: the threads' profiles' frames",
              WRITER)
    for thread, phases in per.items():
        if is_caller(thread):
            own = sum(w for n, w in phases.items() if not n.startswith(shared))
            beside = sum(w for n, w in phases.items() if n.startswith(BESIDE))
            print("serial part (the caller's own work): %.1f%%" % (100 * own / total))
            if one:
                print("  %.1f ms, %.1f%% of the -j 1 read's %.3f s" % (own / 1e6, 100 * own / one,
                                                                     one / 1e9))
            print("  of which beside the workers' building (records handed over): %.1f ms"
                  % (beside / 1e6))
            print("  alone (the workers idle): %.1f ms%s" %
                  ((own - beside) / 1e6,
                   ", %.1f%% of the -j 1 read" % (100 * (own - beside) / one) if one else ""))
    behind = sum(ph[MERGED_BEHIND] for t, ph in per.items() if not is_caller(t))
    if behind:
        print("the batch before merged behind, on worker 1 (serial, beside the building): "
              "%.1f ms%s" % (behind / 1e6,
                             ", %.1f%% of the -j 1 read" % (100 * behind / one) if one else ""))
    others = [(sum(w for n, w in ph.items() if n != "waiting (condition variables)"), t)
              for t, ph in per.items() if not is_caller(t)]
    if others:
        work, thread = max(others)
        print("largest other thread: %.1f%% (%s)" % (100 * work / total, thread))


if __name__ == "__main__":
    main(*sys.argv[1:3])
