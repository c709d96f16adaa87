"""Crash test: a program with 4 threads writing numbered events, each in a
span "work", is killed with SIGKILL at a random moment, 20 times. Each
time, every event up to the kill that was not overwritten must be read
back, in order, and the lost count must be exactly the number of events
overwritten. A thread killed inside "work" leaves that span open: stats
and latency leave it out of the durations and say how many are open, the
Chrome and Perfetto exports end it at the trace's last timestamp, marked
"work (open)"; the durations stats shows are those of the complete spans.

usage: crash.py CRASH_WRITER WORKDIR
"""
import collections
import json
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
THREADS = 4
# Each iteration i of a thread writes 3 events: begin work, n i, end work.
KINDS = ("begin", "instant", "end")
LINE = re.compile(r"(\d+)\.(\d{9}) \d+ w(\d) (?:(begin|end) work|(instant) n t=(\d+) i=(\d+))$")


def parse_dump(out, n):
    """{thread: [(index, ns)]}: each event's number in its thread (3i + 0,
    1, 2 for begin, n, end of iteration i), anchored on the instants."""
    lines = collections.defaultdict(list)
    for line in out.decode().splitlines():
        m = LINE.match(line)
        if not m:
            golden.fail("run %d: unexpected event %r" % (n, line))
        ns = int(m.group(1)) * 10**9 + int(m.group(2))
        kind = m.group(4) or m.group(5)
        i = int(m.group(7)) if m.group(7) else None
        lines[int(m.group(3))].append((kind, i, ns))
    events = {}
    for t, evs in lines.items():
        anchor = next((k for k, e in enumerate(evs) if e[1] is not None), None)
        if anchor is None:
            golden.fail("run %d, thread %d: no instant among %d events" % (n, t, len(evs)))
        first = 3 * evs[anchor][1] + 1 - anchor
        events[t] = [(first + k, ns) for k, (_, _, ns) in enumerate(evs)]
        for (kind, i, _), (idx, _) in zip(evs, events[t]):
            if KINDS[idx % 3] != kind or (i is not None and idx != 3 * i + 1):
                golden.fail("run %d, thread %d: events missing or out of order" % (n, t))
    return events


def spans_of(events):
    """The complete spans' durations, and the threads left inside one."""
    durations, open_threads = [], []
    for t, evs in events.items():
        first = evs[0][0]
        times = dict(evs)
        for idx, ns in evs:
            if idx % 3 == 2 and idx - 2 >= first:
                durations.append(ns - times[idx - 2])
        if evs[-1][0] % 3 != 2:
            open_threads.append(t)
    return durations, open_threads


def duration_text(ns):
    """As `ember trace stats` prints a duration."""
    if ns < 1e3:
        return "%.0fns" % ns
    if ns < 1e6:
        return "%.3fus" % (ns / 1e3)
    if ns < 1e9:
        return "%.3fms" % (ns / 1e6)
    return "%.3fs" % (ns / 1e9)


def text_ns(text):
    """A duration as stats prints it: (ns, half the unit of its last digit)."""
    m = re.match(r"([\d.]+)(ns|us|ms|s)$", text)
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)]
    return float(m.group(1)) * scale, 0.5 if scale == 1 else 0.5e-3 * scale


def check_stats(trace, n, durations, open_threads):
    out, _, _ = golden.run(["trace", "stats", trace])
    text = out.decode()
    row = [l.split() for l in text.splitlines() if l.startswith("work ")]
    if len(row) != 1:
        golden.fail("run %d: no row for work in stats:\n%s" % (n, text))
    _, count, total, mean, lo, p50, p90, p99, hi = row[0][:9]
    d = sorted(durations)
    want = [str(len(d)), duration_text(sum(d)), duration_text(sum(d) / len(d)),
            duration_text(d[0]), duration_text(d[-1])]
    if [count, total, mean, lo, hi] != want:
        golden.fail("run %d: stats for work: count, total, mean, min, max %r, from the dump %r\n%s" %
                    (n, [count, total, mean, lo, hi], want, text))
    for p, got in ((50, p50), (90, p90), (99, p99)):
        # by nearest rank: the ceil(p/100 n)-th, exact but for the text's rounding
        exact = d[max(-(-p * len(d) // 100), 1) - 1]
        v, ulp = text_ns(got)
        if not exact - ulp <= v <= exact + ulp:
            golden.fail("run %d: p%d of work %s, the exact value %d ns" % (n, p, got, exact))
    want_open = ("# %d span%s still open at the end of the trace (not counted): work %d" %
                 (len(open_threads), "" if len(open_threads) == 1 else "s", len(open_threads)))
    if open_threads and want_open not in text:
        golden.fail("run %d: %r not in stats:\n%s" % (n, want_open, text))
    if not open_threads and "still open" in text:
        golden.fail("run %d: no span is open, stats says:\n%s" % (n, text))
    out, _, _ = golden.run(["trace", "latency", trace, "--span", "work"])
    head = out.decode().splitlines()[0]
    want = "# work: %d spans%s, durations in microseconds" % (
        len(d), " (%d more still open at the end of the trace, not counted)" % len(open_threads)
        if open_threads else "")
    if head != want:
        golden.fail("run %d: latency says %r, expected %r" % (n, head, want))


def check_chrome(trace, n, work, durations, open_threads):
    js = os.path.join(work, "crash%d.json" % n)
    golden.run(["trace", "export", "--format", "chrome", trace, "-o", js])
    with open(js) as f:
        events = json.load(f)["traceEvents"]
    last = max(e["ts"] for e in events if "ts" in e)
    names = collections.Counter((e["ph"], e["name"]) for e in events if e["ph"] in "BE")
    want = {("B", "work"): len(durations), ("E", "work"): len(durations)}
    if open_threads:
        want[("B", "work (open)")] = want[("E", "work (open)")] = len(open_threads)
    if dict(names) != want:
        golden.fail("run %d: Chrome spans %r, expected %r" % (n, dict(names), want))
    ends = [e["ts"] for e in events if e["ph"] == "E" and e["name"] == "work (open)"]
    if any(ts != last for ts in ends):
        golden.fail("run %d: open spans end at %r, not at the trace's end %r" % (n, ends, last))
    os.unlink(js)


def check_perfetto(trace, n, work, durations, open_threads):
    pb = os.path.join(work, "crash%d.pftrace" % n)
    golden.run(["trace", "export", "--format", "perfetto", trace, "-o", pb])
    with open(pb, "rb") as f:
        p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "--proto_path=" + HERE,
                            "perfetto_subset.proto"], stdin=f, capture_output=True, text=True)
    if p.returncode != 0:
        golden.fail("protoc could not decode the Perfetto export:\n" + p.stderr)
    begins = collections.Counter(re.findall(r'type: TYPE_SLICE_BEGIN\n.*\n\s*name: "([^"]*)"',
                                            p.stdout))
    ends = len(re.findall(r"type: TYPE_SLICE_END", p.stdout))
    want = {"work": len(durations)}
    if open_threads:
        want["work (open)"] = len(open_threads)
    if dict(begins) != want or ends != sum(want.values()):
        golden.fail("run %d: Perfetto slices %r and %d ends, expected %r" %
                    (n, dict(begins), ends, want))
    os.unlink(pb)


def one_run(writer, work, n, rnd):
    trace = os.path.join(work, "crash%d.trace" % n)
    progress = os.path.join(work, "progress%d" % n)
    env = dict(os.environ, EMBER_TRACE=trace, EMBER_TRACE_RING=str(256 << 10),
               EMBER_TRACE_PACKET=str(16 << 10))
    p = subprocess.Popen([writer, progress], env=env)
    deadline = time.time() + 10
    # both exist before the kill: a kill before either is a test of nothing
    while not (os.path.exists(trace) and os.path.exists(progress)):
        if p.poll() is not None:
            golden.fail("run %d: the writer exited (status %d) before it wrote" % (n, p.returncode))
        if time.time() > deadline:
            p.kill()
            golden.fail("run %d: no trace or progress file after 10 s" % n)
        time.sleep(0.005)
    # ... and every thread has written: on a loaded machine the threads may
    # not have run at all yet, and a trace without a span tests nothing
    while min(struct.unpack("<4q", open(progress, "rb").read(32))) < 0:
        if p.poll() is not None or time.time() > deadline:
            p.kill()
            golden.fail("run %d: the writer's threads wrote nothing in 10 s" % n)
        time.sleep(0.001)
    time.sleep(rnd.uniform(0.01, 0.25))
    p.send_signal(signal.SIGKILL)
    p.wait()
    with open(progress, "rb") as f:
        done = struct.unpack("<4q", f.read(32))
    out, err, _ = golden.run(["trace", "dump", trace])
    events = parse_dump(out, n)
    lost = {int(m.group(1)[1:]): int(m.group(2))
            for m in re.finditer(r"\((w\d)\): (\d+) events lost", err)}
    for t in range(THREADS):
        got = events.get(t, [])
        if done[t] < 0:
            continue  # killed before its first event
        if not got:
            golden.fail("run %d, thread %d: no events, %d were written" % (n, t, done[t] + 1))
        if lost.get(t, 0) != got[0][0]:
            golden.fail("run %d, thread %d: %d events before the first read, %d reported lost" %
                        (n, t, got[0][0], lost.get(t, 0)))
        # n done is written; then end, begin and the next n may be
        if not 3 * done[t] + 1 <= got[-1][0] <= 3 * done[t] + 4:
            golden.fail("run %d, thread %d: last event read %d, the thread had written %d" %
                        (n, t, got[-1][0], 3 * done[t] + 1))
    durations, open_threads = spans_of(events)
    check_stats(trace, n, durations, open_threads)
    check_chrome(trace, n, work, durations, open_threads)
    check_perfetto(trace, n, work, durations, open_threads)
    return sum(len(v) for v in events.values()), sum(lost.values()), len(open_threads)


def main():
    writer, work = sys.argv[1:3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rnd = random.Random(os.environ.get("EMBER_SEED", str(int(time.time()))))
    total_read = total_lost = total_open = 0
    for n in range(20):
        read, lost, still_open = one_run(writer, work, n, rnd)
        total_read += read
        total_lost += lost
        total_open += still_open
    print("ok: 20 kills, %d events read, %d lost to overwriting, all accounted for; "
          "%d spans left open, reported as open" % (total_read, total_lost, total_open))


if __name__ == "__main__":
    main()
