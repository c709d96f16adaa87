"""Ends and a begin at one timestamp: ties_prog.c's z, y and x end, and a
second y begins, at one time (set here in its ring file). speedscope,
given those at equal times, opens the y before the ends and then closes the
wrong span; the Chrome export writes the ends a hair before the begin, so
that speedscope's import (golden/speedscope_chrome.py) is balanced, and
every other time is exact. The first event is set 250 ns before the
trace's start: its time is -0.250 (us), sign and all.

usage: ties.py TIES_PROG WORKDIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402
import speedscope_chrome  # noqa: E402
from bad_trace import DESC_SIZE, PACKET_HEADER, header  # noqa: E402

TIED = (3, 4, 5, 6)  # end z, end y, end x, begin y


def events_of(data):
    """Offsets of the events of the first ring's first packet."""
    h = header(data)
    head = struct.unpack_from("<Q", data, h["rings_offset"] + 64)[0]
    off, at, out = h["data_offset"], PACKET_HEADER, []
    while at + 16 <= min(head, h["packet_size"]):
        out.append(off + at)
        at += struct.unpack_from("<I", data, off + at + 4)[0]
    return out


def main():
    prog, d = sys.argv[1], sys.argv[2]
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    ring = os.path.join(d, "ties.trace")
    subprocess.run([prog], env=dict(os.environ, EMBER_TRACE=ring, EMBER_TRACE_NO_TSC="1"),
                   check=True)
    data = bytearray(open(ring, "rb").read())
    evs = events_of(data)
    if len(evs) != 8 or header(data)["rings_claimed"] != 1:
        golden.fail("%s: expected 8 events on one ring, got %d" % (ring, len(evs)))
    out = os.path.join(d, "ties.json")
    golden.run(["trace", "export", "--format", "chrome", ring, "-o", out])
    first = round(json.load(open(out))["traceEvents"][1]["ts"] * 1000)  # ns after the start
    tick = struct.unpack_from("<Q", data, evs[0] + 8)[0]
    struct.pack_into("<Q", data, evs[0] + 8, tick - first - 250)
    tick = struct.unpack_from("<Q", data, evs[TIED[0]] + 8)[0]
    for i in TIED:
        struct.pack_into("<Q", data, evs[i] + 8, tick)
    open(ring, "wb").write(data)
    dump = golden.run(["trace", "dump", "--ticks", ring])[0].decode().splitlines()
    if len({line.split()[0] for line in dump[3:7]}) != 1:
        golden.fail("the four events should have one time: %r" % dump)
    golden.run(["trace", "export", "--format", "chrome", ring, "-o", out])
    if '"ts":-0.250,"name":"x"' not in open(out).read():
        golden.fail("%s: x should begin at -0.250 us:\n%s" % (out, open(out).read()))
    ev = [e for e in json.load(open(out))["traceEvents"] if e["ph"] in "BE"]
    # speedscope keys a frame by its name and args, and warns of an end
    # whose args its begin lacks (it ends the span all the same); the
    # export keeps an end's fields, which Perfetto and chrome://tracing
    # add to the span's args
    warned = [w for w in speedscope_chrome.warnings(ev) if not w.endswith("ending it instead")]
    if warned:
        golden.fail("%s: speedscope would unbalance it: %s" % (out, warned))
    times = [e["ts"] for e in ev]
    ends, begin = times[TIED[0]:TIED[-1]], times[TIED[-1]]
    if [(e["ph"], e["name"]) for e in ev] != [("B", "x"), ("B", "y"), ("B", "z"), ("E", "z"),
                                               ("E", "y"), ("E", "x"), ("B", "y"), ("E", "y")]:
        golden.fail("%s: events %r" % (out, [(e["ph"], e["name"]) for e in ev]))
    if len(set(ends)) != 1 or not ends[0] < begin or begin - ends[0] > 1e-6:
        golden.fail("%s: the ends should be a hair before the begin: %r, %r" % (out, ends, begin))
    if ev[-1].get("args") != {"n": 7}:
        golden.fail("%s: the last end's args: %r" % (out, ev[-1]))
    print("ok: 3 ends and a begin at one time: the ends at %r, a hair before the begin at %r; "
          "speedscope's import balanced; x begins at -0.250" % (ends[0], begin))


if __name__ == "__main__":
    main()
