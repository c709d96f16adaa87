"""Golden test: the perf.data reader's callback interface (perf_reader.h)
hands its clients every record, once: perf_records (its second client,
after the profile builder) counts the records it receives by type, and the
counts equal `perf report -D`'s "Aggregated stats", type by type and in
total, on recordings made here: perf record -g (fp call graphs), perf
record --call-graph dwarf, perf record -g to a pipe (pipe mode), ember
record, and ember record --off-cpu (context switch records).

Which types are compared: all of them. perf report -D counts every record
of the data section as it reads it, perf's own (types from 64) included:
FINISHED_ROUND, ID_INDEX, THREAD_MAP, CPU_MAP, FINISHED_INIT, and in pipe
mode the records that describe the file (HEADER_ATTR, HEADER_FEATURE,
EVENT_UPDATE...), which the reader takes itself and then delivers (attr
and user callbacks). So nothing is left out; what differs is names alone:
perf prints its HEADER_* records without "HEADER_" (ATTR, FEATURE,
BUILD_ID, TRACING_DATA, EVENT_TYPE), mapped here. Not covered, and
documented so: perf report -D also counts the records inside COMPRESSED
ones (perf record -z), which ember refuses; and the per-event blocks after
the aggregated one ("cpu-clock:ppp stats:"), which split samples by event.

Each recording is also read with --order at 1 and 3 threads: the reader
delivers the same records in the same order (each printed as its type,
file offset, size, misc and a sum of its bytes), whether one thread orders the records or rounds are sorted
on threads and samples handed over in runs (perf_data_rounds.c); and says
the file is about to change ("changes") just before each of perf's own
records but FINISHED_ROUND, and nowhere else.

usage: perf_records.py CC SOURCE_DIR WORKDIR PERF_RECORDS
(skips, exit 77, as perfdata.py where perf cannot record)
"""
import os
import re
import subprocess
import sys

import golden
import perfdata
from perfdata import build, record

case, run_cases = golden.cases()
COUNTER = None

# perf's names of its own records where they differ from ember's
PERF_NAMES = {"HEADER_ATTR": "ATTR", "HEADER_EVENT_TYPE": "EVENT_TYPE",
              "HEADER_TRACING_DATA": "TRACING_DATA", "HEADER_BUILD_ID": "BUILD_ID",
              "HEADER_FEATURE": "FEATURE"}


def perf_counts(data):
    """{type name: count} of perf report -D's aggregated stats, TOTAL
    included."""
    p = subprocess.run(["perf", "report", "-D", "-i", data], capture_output=True, text=True,
                       errors="replace")
    counts, inside = {}, False
    for line in p.stdout.splitlines():
        if line.startswith("Aggregated stats"):
            inside = True
        elif inside and line.rstrip().endswith(" stats:"):
            break
        elif inside:
            m = re.match(r"\s*(\S+) events:\s+(\d+)", line)
            if m:
                counts[m.group(1)] = int(m.group(2))
    if not counts:
        golden.fail("perf report -D %s printed no aggregated stats: %s" % (data, p.stderr[-300:]))
    return counts


def ember_counts(data):
    """{type name: count} of the records perf_records's callbacks received."""
    p = subprocess.run([COUNTER, data], capture_output=True, text=True)
    if p.returncode != 0:
        golden.fail("perf_records %s exited %d: %s" % (data, p.returncode, p.stderr))
    counts = {}
    for line in p.stdout.splitlines():
        name, n = line.split()
        counts[PERF_NAMES.get(name, name)] = int(n)
    return counts


def order(data, threads):
    """The records perf_records --order delivered, one line each."""
    p = subprocess.run([COUNTER, "--order", str(threads), data], capture_output=True, text=True)
    if p.returncode != 0:
        golden.fail("perf_records --order %d %s exited %d: %s" % (threads, data, p.returncode,
                                                                  p.stderr))
    return p.stdout.splitlines()


def check_order(data, what):
    one, three = order(data, 1), order(data, 3)
    if one != three:
        at = next((i for i, (a, b) in enumerate(zip(one, three)) if a != b), min(len(one),
                                                                              len(three)))
        golden.fail("%s: 3 threads deliver otherwise than one, from record %d (of %d and %d): "
                    "%s against %s" % (what, at + 1, len(one), len(three),
                                       three[at] if at < len(three) else "the end",
                                       one[at] if at < len(one) else "the end"))
    check_changes(one, what)
    print("ok: %s: %d records delivered in the same order by 3 threads" % (what, len(one)))


def check_changes(lines, what):
    """"changes" just before each of perf's own records but FINISHED_ROUND
    (types from 64, but 68), and nowhere else: the reader says the file is
    about to change before it takes such a record, so that a client's
    threads reading the file's events finish first."""
    def own(line):
        return line != "changes" and int(line.split()[0]) >= 64 and line.split()[0] != "68"
    for i, line in enumerate(lines):
        said = i > 0 and lines[i - 1] == "changes"
        if line == "changes" and (i + 1 == len(lines) or not own(lines[i + 1])):
            golden.fail("%s: \"changes\" at line %d, not before one of perf's own records"
                        % (what, i + 1))
        if own(line) and not said:
            golden.fail("%s: record %d (%s), perf's own, without \"changes\" before it"
                        % (what, i + 1, line))


def check(data, what, must=("SAMPLE", "MMAP2", "COMM", "FORK", "EXIT")):
    check_order(data, what)
    got, want = ember_counts(data), perf_counts(data)
    if got != want:
        diff = ["%s: perf_records %s, perf report -D %s" % (k, got.get(k), want.get(k))
                for k in sorted(set(got) | set(want)) if got.get(k) != want.get(k)]
        golden.fail("%s: record counts differ:\n  %s" % (what, "\n  ".join(diff)))
    missing = [k for k in must if not got.get(k)]
    if missing:
        golden.fail("%s: no %s records (the recording should have them): %s"
                    % (what, ", ".join(missing), got))
    print("ok: %s: %d records, %d types, as perf report -D counts them"
          % (what, got["TOTAL"], len(got) - 1))


def prog(work):
    return build("perfdata_prog.c", os.path.join(work, "prog"))


@case
def fp(work):
    check(record(work, "fp", [prog(work), "exec", "2"]), "perf record -g")


@case
def dwarf(work):
    check(record(work, "dwarf", [prog(work), "2"], extra=("--call-graph", "dwarf")),
          "perf record --call-graph dwarf")


@case
def pipe(work):
    data = os.path.join(work, "pipe.data")
    with open(data, "wb") as f:
        p = subprocess.run(["perf", "record", "-q", "-g", "-o", "-", prog(work), "2"], stdout=f,
                           stderr=subprocess.PIPE, cwd=work)
    if p.returncode != 0:
        golden.fail("perf record -o - failed: %s" % p.stderr.decode()[-300:])
    check(data, "perf record -g -o - (pipe mode)",
          ("SAMPLE", "ATTR", "FEATURE", "FINISHED_ROUND"))


@case
def ember_record(work):
    data = os.path.join(work, "ember.data")
    golden.run(["record", "-o", data, "--", prog(work), "exec", "2"])
    check(data, "ember record")


@case
def ember_offcpu(work):
    data = os.path.join(work, "offcpu.data")
    golden.run(["record", "--off-cpu", "-o", data, "--", prog(work), "2"])
    check(data, "ember record --off-cpu", ("SAMPLE", "SWITCH"))


if __name__ == "__main__":
    COUNTER = sys.argv.pop(4)
    perfdata.run_main(run_cases)
