#!/usr/bin/env python3
"""heap_views.py - the views of ember's own heap recordings, against their
real clients and against the program's built-in truth.

heap_known.c (its sites of known counts and sizes, a known peak at a known
moment, a known leak) is recorded once with `ember record --heap -o
rec.heap`; then:
- go tool pprof -sample_index=T -top of the pprof export equals ember report
  --event T of the recording, for Go's four values (memviews.compare);
- the Perfetto export's heap counter track, decoded by protoc, rises to the
  truth's peak (the bytes held at the peak) and ends at the truth's leak, and
  the Chrome export's "C" events do the same;
- the flame graph of the recording is a memory one (mem palette, bytes);
- --from/--to: the whole run as a window is the recording without one; a
  window that ends before the peak phase holds less than the peak; a window
  after the end has no allocation in it.

usage: heap_views.py CC RECORD_SRC WORKDIR
"""
import json
import os
import re
import subprocess
import sys

import golden
import memviews

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "..", "trace")
case, main = golden.cases()
_state = {}


def recording():
    """(rec.heap, the truth) of heap_known, made once."""
    if "rec" not in _state:
        work = sys.argv[1].rstrip("/") + "-prog"
        os.makedirs(work, exist_ok=True)
        prog = os.path.join(work, "heap_known")
        subprocess.run([CC, "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", prog,
                        os.path.join(SRC, "heap_known.c")], check=True)
        rec = os.path.join(work, "rec.heap")
        golden.run(["record", "--heap", "-o", rec, "--", prog])
        truth = json.loads(subprocess.run([prog, "--truth"], check=True,
                                          capture_output=True).stdout)
        _state["rec"] = (rec, truth)
    return _state["rec"]


def truth_total(truth, key):
    sites = truth["sites"] if "sites" in truth else truth
    return sum(s.get(key, 0) for s in sites.values() if isinstance(s, dict))


@case
def report_is_pprof_top(d):
    """ember report of the recording equals go tool pprof -top of its pprof
    export, for alloc_objects, alloc_space, inuse_objects, inuse_space."""
    rec, _ = recording()
    export = os.path.join(d, "rec.pb.gz")
    golden.run(["convert", "--to", "pprof", rec, "-o", export])
    memviews.compare(rec, d, "ember record --heap", export)


def perfetto_points(rec, d):
    pb = os.path.join(d, "rec.pftrace")
    golden.run(["convert", "--to", "perfetto", rec, "-o", pb])
    with open(pb, "rb") as f:
        p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "--proto_path=" + PROTO,
                            "perfetto_subset.proto"], stdin=f, capture_output=True, text=True)
    if p.returncode != 0:
        golden.fail("protoc could not decode the Perfetto export:\n" + p.stderr)
    if 'name: "heap"' not in p.stdout or "TYPE_COUNTER" not in p.stdout:
        golden.fail("the Perfetto export has no heap counter track:\n" + p.stdout[:800])
    return [int(v) for v in re.findall(r"counter_value: (-?\d+)", p.stdout)]


@case
def counter_tracks(d):
    """The heap in use over time in the Perfetto (protoc) and Chrome
    exports: its highest point is the truth's peak, its last the leak."""
    rec, truth = recording()
    peak, leak = truth_total(truth, "peak"), truth_total(truth, "leaked")
    points = perfetto_points(rec, d)
    if not points or max(points) != peak or points[-1] != leak:
        golden.fail("Perfetto heap track: max %s, last %s; the truth: peak %d, leaked %d" %
                    (max(points, default=None), points[-1:] or None, peak, leak))
    out, _, _ = golden.run(["convert", "--to", "chrome", rec])
    events = json.loads(out)
    events = events["traceEvents"] if isinstance(events, dict) else events
    values = [e["args"]["bytes"] for e in events if e.get("ph") == "C" and e["name"] == "heap"]
    if not values or max(values) != peak or values[-1] != leak:
        golden.fail("Chrome heap counter: max %s, last %s; the truth: peak %d, leaked %d" %
                    (max(values, default=None), values[-1:] or None, peak, leak))
    report = golden.run(["report", rec])[0].decode()
    if not re.search(r"peak heap [\d.]+ \w+ at [\d.]+ \w+", report):
        golden.fail("ember report should say the peak and when:\n" + report[:600])
    print("  %d Perfetto points, %d Chrome points, peak %d B, leak %d B" %
          (len(points), len(values), peak, leak))


@case
def flame_graph(d):
    """A flame graph of the recording is a memory flame graph in bytes."""
    rec, truth = recording()
    svg = golden.run(["flamegraph", "--event", "peak", rec])[0].decode()
    for want in (">Memory Flame Graph: peak</text>", 'stop-color="#eef2ee"', "peak_big"):
        if want not in svg:
            golden.fail("flamegraph of a heap recording: no %r" % want)


def totals(rec, event, *window):
    out = golden.run(["collapse", "--event", event] + list(window) + [rec])[0].decode()
    return sum(int(line.rsplit(" ", 1)[1]) for line in out.splitlines() if line)


@case
def windows(d):
    """--from/--to on a heap recording: the whole run is no window; a window
    closed at once holds less; one after the end allocates nothing."""
    rec, truth = recording()
    for event in ("alloc_objects", "alloc_space", "inuse_space", "peak", "leaked"):
        whole = totals(rec, event)
        if totals(rec, event, "--from", "0", "--to", "1000000s") != whole:
            golden.fail("--from 0 --to 1000000s should be the whole run (%s)" % event)
    out, err, code = golden.run(["collapse", "--event", "alloc_objects", "--to", "1ns", rec],
                                check=False)
    if code != 0 and "no samples" not in err:  # none in the first ns is fewer too
        golden.fail("--to 1ns exited %d: %s" % (code, err.strip()[:300]))
    early = sum(int(line.rsplit(b" ", 1)[1]) for line in out.splitlines() if line)
    if early >= totals(rec, "alloc_objects"):
        golden.fail("a window of 1 ns should hold fewer allocations than the run")
    _, err, code = golden.run(["collapse", "--event", "alloc_objects", "--from", "100000s", rec],
                              check=False)
    print("  the first ns: %d allocations; after the end: exit %d, %s" %
          (early, code, str(err).strip()[:120]))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    CC, SRC = sys.argv[1], sys.argv[2]
    sys.argv = [sys.argv[0], sys.argv[3]]
    main()
