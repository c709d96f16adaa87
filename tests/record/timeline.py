"""A recording on its time axis (issue 17, item 11): `ember convert --to
chrome` of a perf.data file (with or without --time-order) and `ember record
-o X.json` of a C program draw every thread on a track of its own, on the
time the samples were taken, as the Perfetto export does; before, all the
threads shared one track (pid 1, tid 1) whose time was the running sum of
the weights.

threads.c runs three threads at once (main, "alpha", "beta"). Recorded by
`perf record -g` and by `ember record`, and compared with `perf script`:
  - one track (pid, tid) per thread that perf script shows samples of, named
    (thread_name) as perf script names the thread's last sample, its
    process named (process_name) as its main thread;
  - the times are the samples': every span begins at a sample time of its
    own thread (perf script's, to the microsecond), and every sample lies
    inside a root span of its thread's track;
  - the three tracks overlap in time (the threads ran at once), which a
    chart of summed weights cannot show;
  - with --focus worker, alpha's and beta's tracks alone, at their samples'
    times (the samples left out shift nothing);
  - what Perfetto's JSON importer needs: dur >= 0, spans of a track nested;
  - the Perfetto export (protoc decodes it) has the same tracks, named the
    same, and `convert --to speedscope --time-order` an evented profile per
    thread, its frames opening at the thread's samples' times.

Skips (77) without cc or perf, or where perf_event_open is not permitted.

usage: timeline.py SOURCE_DIR WORKDIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "trace"))
import golden  # noqa: E402
import speedscope_chrome  # noqa: E402
from recording import compile_c, perf, skip  # noqa: E402

NAMES = {"threads", "alpha", "beta"}


def perf_samples(data):
    """perf script's samples: ({(pid, tid): [time in us]}, {(pid, tid): comm
    of its last sample})."""
    times, comms = {}, {}
    for line in perf(["script", "-i", data, "-F", "comm,pid,tid,time"]).splitlines():
        m = re.match(r"^\s*(.*?)\s+(\d+)/(\d+)\s+(\d+)\.(\d{6}):\s*$", line)
        if not m:
            golden.fail("perf script: unexpected line %r" % line)
        key = (int(m.group(2)), int(m.group(3)))
        times.setdefault(key, []).append(int(m.group(4)) * 1000000 + int(m.group(5)))
        comms[key] = m.group(1)
    return times, comms


def tracks_of(path):
    """The Chrome trace at path: ({(pid, tid): [(ts, end, name)] in ts
    order, outer first}, thread names, process names)."""
    with open(path) as f:
        doc = json.load(f)
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    tracks, threads, processes = {}, {}, {}
    for e in ev:
        if e["ph"] == "X":
            if e["dur"] < 0:
                golden.fail("%s: negative dur %r" % (path, e))
            tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"],
                                                                e["name"]))
        elif e["ph"] == "M" and e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "process_name":
            processes[e["pid"]] = e["args"]["name"]
    for spans in tracks.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
    return tracks, threads, processes


def roots(path, key, spans):
    """The outermost spans of a track, checking that the others nest (times
    are microseconds with 3 decimals: 0.0015 absorbs the doubles' error)."""
    out, stack = [], []
    for s in spans:
        while stack and stack[-1][1] <= s[0] + 0.0015:
            stack.pop()
        if stack and s[1] > stack[-1][1] + 0.0015:
            golden.fail("%s: track %r: %r overlaps %r without nesting" % (path, key, s, stack[-1]))
        if not stack:
            out.append(s)
        stack.append(s)
    return out


def check_overlap(path, tracks):
    """Every two tracks overlap in time: the threads ran at once."""
    ranges = {k: (v[0][0], max(s[1] for s in v)) for k, v in tracks.items()}
    for a in ranges:
        for b in ranges:
            if max(ranges[a][0], ranges[b][0]) >= min(ranges[a][1], ranges[b][1]):
                golden.fail("%s: tracks %r and %r do not overlap in time: %r" %
                            (path, a, b, ranges))


def check_structure(path):
    """A track per thread of threads.c, named, nested, overlapping, and
    balanced as speedscope imports it."""
    tracks, threads, processes = tracks_of(path)
    names = sorted(threads.get(k, "?") for k in tracks)
    if len(tracks) != 3 or set(names) != NAMES or len({k[0] for k in tracks}) != 1:
        golden.fail("%s: expected one track per thread (threads, alpha, beta) of one process, "
                    "got %r named %r" % (path, sorted(tracks), names))
    if list(processes.values()) != ["threads"]:
        golden.fail("%s: process names %r" % (path, processes))
    for k, v in tracks.items():
        roots(path, k, v)
    check_overlap(path, tracks)
    with open(path) as f:
        doc = json.load(f)
    warned = speedscope_chrome.warnings(doc["traceEvents"] if isinstance(doc, dict) else doc)
    if warned:
        golden.fail("%s: speedscope would unbalance it: %s" % (path, warned[:3]))
    return tracks, threads, processes


def check_against_perf(path, data):
    """The Chrome trace at path against perf script's samples of data."""
    times, comms = perf_samples(data)
    tracks, threads, processes = check_structure(path)
    if set(tracks) != set(times):
        golden.fail("%s: tracks %r, perf script has samples of %r" % (path, sorted(tracks),
                                                                     sorted(times)))
    for key, spans in tracks.items():
        if threads[key] != comms[key] or processes[key[0]] != comms.get((key[0], key[0])):
            golden.fail("%s: track %r named %r (process %r), perf script says %r" %
                        (path, key, threads[key], processes[key[0]], comms[key]))
        at = set(times[key])
        off = [s for s in spans if int(s[0]) not in at]
        if off:
            golden.fail("%s: track %r: %d spans begin at no sample time of the thread, e.g. %r" %
                        (path, key, len(off), off[:3]))
        outer = roots(path, key, spans)
        for t in times[key]:
            if not any(r[0] < t + 1 and t < r[1] for r in outer):
                golden.fail("%s: track %r: the sample at %d us lies in no root span" %
                            (path, key, t))
    return sum(len(v) for v in times.values())


def check_focus(data, work):
    """--focus worker: the samples of the two threads that run worker(), on
    their tracks at their times (the samples left out do not shift the
    others' times)."""
    out = os.path.join(work, "focus.json")
    golden.run(["convert", "--to", "chrome", "--focus", "worker", data, "-o", out])
    times, _ = perf_samples(data)
    tracks, threads, _ = tracks_of(out)
    if sorted(threads.get(k, "?") for k in tracks) != ["alpha", "beta"]:
        golden.fail("%s: tracks %r, expected alpha's and beta's" % (out, threads))
    for key, spans in tracks.items():
        roots(out, key, spans)
        off = [s for s in spans if int(s[0]) not in set(times[key])]
        if off:
            golden.fail("%s: track %r: spans at no sample time of the thread: %r" %
                        (out, key, off[:3]))


def check_speedscope(data, work):
    """convert --to speedscope --time-order: an evented profile per thread,
    named as the Chrome trace names its track, its spans opening at its
    samples' times (nanoseconds from the first sample: perf script's times
    to the microsecond), opened and closed in order."""
    out = os.path.join(work, "t.speedscope.json")
    golden.run(["convert", "--to", "speedscope", "--time-order", data, "-o", out])
    times, comms = perf_samples(data)
    t0 = min(min(v) for v in times.values())
    with open(out) as f:
        doc = json.load(f)
    got = {}
    for prof in doc["profiles"]:
        m = re.match(r"^(.*) \(pid (\d+), tid (\d+)\)$", prof["name"])
        key = (int(m.group(2)), int(m.group(3))) if m else None
        if not m or prof["type"] != "evented" or m.group(1) != comms.get(key):
            golden.fail("%s: profile %r, perf script has %r" % (out, prof["name"], comms))
        got[key] = prof
        stack, last = [], 0
        for e in prof["events"]:
            if e["at"] < last or (e["type"] == "C" and (not stack or stack.pop() != e["frame"])):
                golden.fail("%s: %s: events out of order at %r" % (out, prof["name"], e))
            last = e["at"]
            if e["type"] == "O":
                stack.append(e["frame"])
                t = t0 + e["at"] / 1000.0
                if not any(abs(x - t) <= 1 for x in times[key]):
                    golden.fail("%s: %s opens a frame at %.3f us, no sample of the thread then" %
                                (out, prof["name"], t))
        if stack:
            golden.fail("%s: %s: frames left open" % (out, prof["name"]))
    if set(got) != set(times):
        golden.fail("%s: profiles of %r, perf script has samples of %r" % (out, sorted(got),
                                                                         sorted(times)))


def check_perfetto(data, path, work):
    """The Perfetto export of data: the tracks of the Chrome trace at path."""
    if not shutil.which("protoc"):
        print("note: no protoc: the Perfetto export not decoded")
        return
    import gc_phases
    pf = os.path.join(work, "t.pftrace")
    golden.run(["convert", "--to", "perfetto", data, "-o", pf])
    with open(pf, "rb") as f:
        got = gc_phases.perfetto_slices(f.read(), os.path.join(os.path.dirname(__file__), "..",
                                                                 "trace"))
    _, threads, _ = tracks_of(path)
    if sorted(got) != sorted(threads.values()):
        golden.fail("Perfetto's tracks %r, Chrome's %r" % (sorted(got), sorted(threads.values())))


def main():
    src, work = sys.argv[1], sys.argv[2]
    if not shutil.which("perf"):
        skip("no perf")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.environ["HOME"] = work  # perf's build-id cache: the test's own
    prog = compile_c(os.path.join(src, "threads.c"), os.path.join(work, "threads"),
                     ["-O2", "-fno-omit-frame-pointer", "-pthread"])
    data = os.path.join(work, "perf.data")
    p = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "1000", "-g", "-o", data,
                        "--", prog], capture_output=True, text=True)
    if p.returncode != 0:
        skip("perf record cannot record here: " + p.stderr.strip()[:300])
    for args in ([], ["--time-order"]):
        out = os.path.join(work, "perf%s.json" % "".join(a.strip("-") for a in args))
        golden.run(["convert", "--to", "chrome"] + args + [data, "-o", out])
        n = check_against_perf(out, data)
    print("ok perf record: convert --to chrome: %d samples on 3 tracks, at their times" % n)
    check_focus(data, work)
    print("ok perf record: --focus worker keeps alpha's and beta's samples, at their times")
    check_perfetto(data, out, work)
    print("ok perf record: the Perfetto export has the same tracks")
    check_speedscope(data, work)
    print("ok perf record: convert --to speedscope --time-order: a profile per thread, in time")
    p = subprocess.run([golden.EMBER, "record", "-F", "1000", "-o", "rec.data", "--", prog],
                       capture_output=True, text=True, cwd=work)
    if p.returncode != 0 and "not permitted" in p.stderr:
        skip("perf_event_open is not permitted here: " + p.stderr.strip())
    if p.returncode != 0:
        golden.fail("ember record -o rec.data: exit %d: %r" % (p.returncode, p.stderr))
    out = os.path.join(work, "rec.json")
    golden.run(["convert", "--to", "chrome", os.path.join(work, "rec.data"), "-o", out])
    n = check_against_perf(out, os.path.join(work, "rec.data"))
    p = subprocess.run([golden.EMBER, "record", "-F", "1000", "-o", "direct.json", "--", prog],
                       capture_output=True, text=True, cwd=work)
    if p.returncode != 0:
        golden.fail("ember record -o direct.json: exit %d: %r" % (p.returncode, p.stderr))
    check_structure(os.path.join(work, "direct.json"))
    print("ok ember record: %d samples on 3 tracks at their times; -o X.json the same" % n)


if __name__ == "__main__":
    main()
