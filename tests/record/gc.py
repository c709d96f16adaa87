"""`ember record` and OCaml 5's GC phases on one time axis (issue 11, item 5).

- clock: the samples are stamped with CLOCK_MONOTONIC, the clock of OCaml's
  runtime events; perf reads the file without a word, says "clockid:
  monotonic" in its header, and its sample times fall between two readings
  of CLOCK_MONOTONIC taken around the recording; perf script -F tod gives
  wall-clock times within seconds of ours (HEADER_CLOCK_DATA).

Skips (77) without perf or where perf_event_open is not permitted; the parts
that run the OCaml fixture skip without it.

usage: gc.py SOURCE_DIR WORKDIR
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402

SKIP = 77
FIXTURE = os.path.join(golden.CORPUS, "ocaml5", "bin", "fixture")


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


def record(work, args, env=None):
    """ember record ARGS in WORK: (exit code, stderr)."""
    p = subprocess.run([golden.EMBER, "record"] + args, capture_output=True, text=True,
                       cwd=work, env=env)
    return p.returncode, p.stderr


def perf(args):
    """perf ARGS: stdout; fails on a warning or error on stderr."""
    p = subprocess.run(["perf"] + args, capture_output=True, text=True)
    if p.returncode != 0 or p.stderr.strip():
        golden.fail("perf %s: exit %d, stderr %r" % (" ".join(args), p.returncode,
                                                     p.stderr[:2000]))
    return p.stdout


def check_probe(work):
    rc, err = record(work, ["-o", "probe.data", "--", "true"])
    if rc != 0 and ("perf_event_paranoid" in err or "not permitted" in err):
        skip("perf_event_open is not permitted here: " + err.strip())
    if rc != 0:
        golden.fail("ember record -- true: exit %d, %r" % (rc, err))


def test_clock(work):
    """Sample times are CLOCK_MONOTONIC ns, and perf says so."""
    data = os.path.join(work, "clock.data")
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    wall = time.time()
    rc, err = record(work, ["-o", data, "--", "sh", "-c", "i=0; while [ $i -lt 30000 ]; do "
                            "i=$((i+1)); done"])
    after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    if rc != 0:
        golden.fail("ember record: exit %d, %r" % (rc, err))
    header = perf(["report", "-i", data, "--header-only"])
    if "clockid: monotonic (1)" not in header or "use_clockid = 1" not in header:
        golden.fail("perf report --header: no 'clockid: monotonic (1)' / use_clockid:\n" +
                    "\n".join(line for line in header.splitlines() if "event" in line))
    times = [round(float(t) * 1e9) for t in
             re.findall(r"^\s*(\d+\.\d+):", perf(["script", "-i", data, "-F", "time", "--ns"]),
                        re.M)]
    if not times:
        golden.fail("perf script: no sample times")
    if min(times) < before or max(times) > after:
        golden.fail("sample times %d..%d ns are not within CLOCK_MONOTONIC's %d..%d around "
                    "the recording" % (min(times), max(times), before, after))
    tods = re.findall(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)",
                      perf(["script", "-i", data, "-F", "tod,time"]))
    first = time.mktime(time.strptime(tods[0].split(".")[0], "%Y-%m-%d %H:%M:%S")) \
        if tods else None
    if first is None or abs(first - wall) > 5:
        golden.fail("perf script -F tod: %r, expected about %s" %
                    (tods[:1], time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(wall))))
    return len(times)


def main():
    src, work = sys.argv[1:3]
    del src
    if not shutil.which("perf"):
        skip("no perf here to read the files")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    check_probe(work)
    n = test_clock(work)
    print("ok: clock: %d samples on CLOCK_MONOTONIC, perf reads the clock's sections" % n)


if __name__ == "__main__":
    main()
