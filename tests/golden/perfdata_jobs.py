"""Golden test: a perf.data read with several threads (-j N: the file's
chunks read ahead on a thread of their own, perf_data_ahead.c) gives the
output of one thread (-j 1), byte for byte, on recordings made here: DWARF
call graphs (unwound on every thread, perf_data_jobs.c) of the C program
(threads, a fork that execs a shell), of several processes at once (the C
program, python3 and xz -T2), of python3 alone, of xz -T2, and of a signal
handler (whose samples libdwfl unwinds); fp call graphs (-g) of the same
programs. Each is
compared as folded stacks (the profile), and as speedscope JSON and pprof,
whose frames, locations and functions are numbered in the order samples
first show them, so that records delivered out of order show even where
the folded sums do not. Cut and corrupt files fail at -j 4 as at -j 1: the
same message, no output.

usage: perfdata_jobs.py CC SOURCE_DIR WORKDIR (perfdata.py's setup; skips,
exit 77, where perf cannot record)
"""
import os
import shutil
import struct

import golden
import perfdata

case, run_cases = golden.cases()
OPTIONS = [[], ["--tid"], ["--addrs"], ["--inline"]]
THREADS = ["2", "4"]


def same_as_one_thread(data, what, options=OPTIONS):
    """Every option's collapse, speedscope's and pprof's bytes, at -j 2 and
    -j 4 equal -j 1's, and so do the warnings (the kernel's symbols are
    read on a thread of their own: what is said of them is said in
    order)."""
    for opts in options:
        want, want_err, _ = golden.run(["collapse", "-j", "1"] + opts + [data])
        if not want:
            golden.fail("%s %s: no stacks at -j 1" % (what, " ".join(opts)))
        for j in THREADS:
            got, err, _ = golden.run(["collapse", "-j", j] + opts + [data])
            golden.first_difference(got, want, "%s -j %s %s" % (what, j, " ".join(opts)))
            golden.first_difference(err.encode(), want_err.encode(),
                                    "%s -j %s %s, its warnings" % (what, j, " ".join(opts)))
    for to in ("speedscope", "pprof"):
        want, _, _ = golden.run(["convert", "-j", "1", "--to", to, data])
        for j in THREADS:
            got, _, _ = golden.run(["convert", "-j", j, "--to", to, data])
            golden.first_difference(got, want, "%s -j %s, as %s (numbered in sample order)"
                                    % (what, j, to))


def programs(work):
    """The C program's argv, and python3's and xz's where they are."""
    prog = perfdata.build("perfdata_prog.c", os.path.join(work, "prog"))
    text = os.path.join(work, "input.txt")
    with open(text, "w") as f:
        for i in range(150000):
            f.write("%d %x %s\n" % (i, i * 2654435761 % 2 ** 32, "abcdefgh"[i % 8] * (i % 13)))
    out = {"c": [prog, "exec", "4"]}
    if os.access("/usr/bin/python3", os.X_OK):
        code = "import json\ns=0\nfor i in range(60000): s+=len(json.dumps({'a':i,'b':[i]}))\n"
        out["python3"] = ["/usr/bin/python3", "-c", code]
    if shutil.which("xz"):
        out["xz"] = ["xz", "-T2", "-k", "-f", "-6", text]
    return out


def together(progs):
    """One shell running every program at once."""
    quoted = [" ".join("'%s'" % a for a in argv) for argv in progs.values()]
    return ["/bin/sh", "-c", " & ".join(quoted) + " & wait"]


@case
def dwarf(work):
    progs = programs(work)
    data = perfdata.record(work, "together", together(progs), perfdata.DWARF)
    same_as_one_thread(data, "DWARF, the programs at once")
    for name, argv in progs.items():
        data = perfdata.record(work, name, argv, perfdata.DWARF)
        same_as_one_thread(data, "DWARF " + name, OPTIONS if name == "c" else [[]])
    # a signal handler's samples, which libdwfl unwinds (through glibc's
    # __restore_rt) while the compiled rows walk the others on every thread
    sig = perfdata.build("perfdata_signal.c", os.path.join(work, "signal"))
    data = perfdata.record(work, "signal", [sig, "300"], perfdata.DWARF)
    same_as_one_thread(data, "DWARF, a signal handler", [[]])
    got, _, _ = golden.run(["collapse", "-j", "4", data])
    if b";main_loop;__restore_rt;in_handler " not in got:
        golden.fail("-j 4: the handler's stacks should unwind through __restore_rt: %r" % got[-600:])


@case
def bad_dwarf(work):
    """A DWARF recording cut inside a late sample, and one with a late
    record's size corrupt: with jobs queued, -j 4 fails as -j 1 does,
    the same message, no output."""
    prog = perfdata.build("perfdata_prog.c", os.path.join(work, "prog"))
    data = perfdata.record(work, "prog", [prog, "1"], perfdata.DWARF)
    blob, recs = perfdata.records(data)
    samples = [r for r in recs if r[1] == 9]  # PERF_RECORD_SAMPLE
    late = samples[len(samples) * 3 // 4]
    cut = os.path.join(work, "cut.data")
    with open(cut, "wb") as f:
        f.write(blob[:late[0] + 100])
    bad = bytearray(blob)
    struct.pack_into("<H", bad, late[0] + 6, 4)  # less than its header
    corrupt = os.path.join(work, "corrupt.data")
    with open(corrupt, "wb") as f:
        f.write(bad)
    for path, needle in ((cut, "truncated input"), (corrupt, "corrupt perf.data")):
        want = golden.run(["collapse", "-j", "1", path], check=False)
        if want[2] == 0 or want[0] or needle not in want[1]:
            golden.fail("-j 1 on %s: exit %d, %r" % (path, want[2], want[1]))
        for j in THREADS:
            got = golden.run(["collapse", "-j", j, path], check=False)
            if got != want:
                golden.fail("-j %s on %s: %r, -j 1: %r" % (j, path, got, want))


@case
def files_said(work):
    """--inline at -j 4 opens every file naming will read before naming,
    to read their DWARF on every thread: a program rebuilt since the
    recording and one deleted are said as -j 1 says them, in its order."""
    home = os.environ["HOME"]
    os.environ["HOME"] = os.path.join(work, "home")  # no cached copy (perf record -N)
    try:
        progs = {name: [perfdata.build("perfdata_prog.c", os.path.join(work, name)), "1"]
                 for name in ("first", "second")}
        data = perfdata.record(work, "two", together(progs), perfdata.DWARF + ["-N"])
        perfdata.build("perfdata_prog.c", progs["first"][0], "-O1")
        os.unlink(progs["second"][0])
        _, err, _ = golden.run(["collapse", "-j", "1", "--inline", data])
        if err.count("build-id mismatch") != 1 or progs["second"][0] not in err:
            golden.fail("-j 1 should say the rebuilt and the deleted program: %r" % err)
        same_as_one_thread(data, "DWARF, a rebuilt and a deleted program", [[], ["--inline"]])
    finally:
        os.environ["HOME"] = home


@case
def events(work):
    """Five events at once (the clocks and faults; not context switches,
    whose samples are read in order for off-CPU time): each piece of a
    batch lists the events in the order they first come in it, and the
    caller numbers them in piece order, which decides the event a profile
    shows when none is chosen (here a fault, whose stacks and counts are
    the other fault's: the warning that names it tells them apart)."""
    prog = perfdata.build("perfdata_prog.c", os.path.join(work, "prog"))
    events = ["cpu-clock", "task-clock", "page-faults/period=1/", "minor-faults/period=1/",
              "cpu-migrations/period=1/"]
    data = perfdata.record(work, "events", [prog, "1"],
                           ["-g"] + [a for e in events for a in ("-e", e)])
    same_as_one_thread(data, "five events", [[], ["--event-filter", "cpu-clock"]])


@case
def fp(work):
    progs = programs(work)
    data = perfdata.record(work, "together", together(progs))
    same_as_one_thread(data, "fp, the programs at once")


if __name__ == "__main__":
    perfdata.run_main(run_cases)
