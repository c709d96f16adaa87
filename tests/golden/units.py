"""Units: what a profile's numbers measure is shown, never called "samples"
when it is not: perf's clock periods are nanoseconds (shown as times),
other events count themselves (cycles, page-faults), a .cpuprofile is
microseconds, callgrind counts its event (Ir); folded input counts samples,
or what --countname says. The flame graph's titles, `report`'s header and
columns, and the pprof export (go tool pprof) all say so.

usage: units.py WORKDIR
"""
import os
import re
import shutil
import subprocess

import golden

case, main = golden.cases()
C = golden.CORPUS
FG_TEST = os.path.join(C, "flamegraph", "test")
HERE = os.path.dirname(os.path.abspath(__file__))


def root_title(path, extra=()):
    out, _, _ = golden.run(["flamegraph"] + list(extra) + [path])
    m = re.search(rb"<title>all \(([^)]*)\)</title>", out)
    if not m:
        golden.fail("%s: no root title in the SVG" % path)
    return m.group(1).decode()


def report_header(path):
    out, _, _ = golden.run(["report", "--top", "1", path])
    return out.decode().splitlines()[0]


def periods(path, event):
    total = 0
    for line in open(path, errors="replace"):
        m = re.match(r"\S.*?:\s+(\d+)\s+" + re.escape(event) + r"\S*:\s*$", line)
        if m:
            total += int(m.group(1))
    return total


def seconds_text(ns):
    """ember's rendering of a time: two decimals at most, in the largest
    unit where it is at least 1."""
    for name, f in (("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1)):
        if ns >= f or name == "ns":
            return ("%.2f" % (ns / f)).rstrip("0").rstrip(".") + " " + name


@case
def perf_clock_is_time(d):
    path = os.path.join(C, "ocaml5", "perf", "alloc-fp.perf.txt")
    ns = periods(path, "cpu-clock")
    want = seconds_text(ns)
    got = root_title(path)
    if got != want + ", 100%":
        golden.fail("cpu-clock periods are nanoseconds: root title %r, expected %r" %
                    (got, want + ", 100%"))
    head = report_header(path)
    if not head.endswith("total %s of cpu" % want):
        golden.fail("report header should give the total as a time: %r" % head)
    if shutil.which("go"):
        pb = os.path.join(d, "p.pb.gz")
        golden.run(["convert", "--to", "pprof", path, "-o", pb])
        env = dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "cache"))
        top = subprocess.run(["go", "tool", "pprof", "-top", pb], capture_output=True,
                             text=True, env=env, check=True).stdout
        if "Type: cpu" not in top or not re.search(r"of [\d.]+m?s total", top):
            golden.fail("go tool pprof -top of a perf cpu-clock profile should print cpu "
                        "time in seconds:\n" + top[:600])
    ss, _, _ = golden.run(["convert", "--to", "speedscope", path])
    if b'"unit":"nanoseconds"' not in ss:
        golden.fail("speedscope export of cpu-clock periods should be in nanoseconds")


@case
def perf_event_counts_itself(d):
    path = os.path.join(FG_TEST, "perf-java-faults-01.txt")
    got = root_title(path)
    n = periods(path, "page-faults")
    if got != "{:,} page-faults, 100%".format(n):
        golden.fail("page-faults periods count page faults: %r, expected %d page-faults" %
                    (got, n))


@case
def no_periods_are_samples(d):
    path = os.path.join(FG_TEST, "perf-cycles-instructions-01.txt")
    got = root_title(path)
    if not got.endswith(" samples, 100%"):
        golden.fail("events without periods count samples: %r" % got)


@case
def folded_and_countname(d):
    path = os.path.join(d, "in.folded")
    with open(path, "w") as f:
        f.write("main;a 3000\nmain;b 1000\n")
    if root_title(path) != "4,000 samples, 100%":
        golden.fail("folded input counts samples: %r" % root_title(path))
    if root_title(path, ["--countname", "bytes"]) != "4,000 bytes, 100%":
        golden.fail("--countname names the counts: %r" % root_title(path, ["--countname", "bytes"]))


@case
def callgrind_counts_its_event(d):
    path = os.path.join(HERE, "..", "data", "callgrind", "two-parts.callgrind")
    got = root_title(path)
    if not got.endswith(" Ir, 100%"):
        golden.fail("callgrind's Ir counts instructions read: %r" % got)
    head = report_header(path)
    if not head.endswith(" Ir"):
        golden.fail("report header should name the event: %r" % head)


@case
def cpuprofile_is_time(d):
    path = os.path.join(C, "speedscope", "sample", "profiles", "Chrome", "65", "simple.cpuprofile")
    got = root_title(path)
    if not re.match(r"^[\d.]+ (s|ms|us), 100%$", got):
        golden.fail(".cpuprofile weights are microseconds: root title %r" % got)



@case
def mixed_units_warn(d):
    """Adding or diffing profiles that measure different things says so."""
    clock = os.path.join(C, "ocaml5", "perf", "alloc-fp.perf.txt")
    faults = os.path.join(FG_TEST, "perf-java-faults-01.txt")
    for cmd in (["collapse", clock, faults], ["diff", "--folded", clock, faults]):
        _, err, _ = golden.run(cmd)
        if "meaningless" not in err or "page-faults" not in err:
            golden.fail("ember %s: no warning that cpu time and page faults do not add up:\n%s" %
                        (" ".join(cmd[:1]), err))
    _, err, _ = golden.run(["collapse", clock, os.path.join(C, "ocaml5", "perf",
                                                           "domains-fp.perf.txt")])
    if "meaningless" in err:
        golden.fail("two cpu-clock recordings should add up without a warning:\n" + err)


if __name__ == "__main__":
    main()
