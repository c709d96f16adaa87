"""Crash test: a program with 4 threads writing numbered events is killed
with SIGKILL at a random moment, 20 times. Each time, every event up to
the kill that was not overwritten must be read back, in order, and the
lost count must be exactly the number of events overwritten.

usage: crash.py CRASH_WRITER WORKDIR
"""
import collections
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

THREADS = 4


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
    time.sleep(rnd.uniform(0.01, 0.25))
    p.send_signal(signal.SIGKILL)
    p.wait()
    with open(progress, "rb") as f:
        done = struct.unpack("<4q", f.read(32))
    out, err, _ = golden.run(["trace", "dump", trace])
    seen = collections.defaultdict(list)
    for line in out.decode().splitlines():
        m = re.search(r" instant n t=(\d+) i=(\d+)$", line)
        if not m:
            golden.fail("run %d: unexpected event %r" % (n, line))
        seen[int(m.group(1))].append(int(m.group(2)))
    lost = {int(m.group(1)[1:]): int(m.group(2))
            for m in re.finditer(r"\((w\d)\): (\d+) events lost", err)}
    for t in range(THREADS):
        got = seen.get(t, [])
        if done[t] < 0:
            continue  # killed before its first event
        if not got:
            golden.fail("run %d, thread %d: no events, %d were written" % (n, t, done[t] + 1))
        if got != list(range(got[0], got[0] + len(got))):
            golden.fail("run %d, thread %d: events missing or out of order" % (n, t))
        if lost.get(t, 0) != got[0]:
            golden.fail("run %d, thread %d: %d events before the first read, %d reported lost" %
                        (n, t, got[0], lost.get(t, 0)))
        if got[-1] < done[t] or got[-1] > done[t] + 1:
            golden.fail("run %d, thread %d: last event read %d, the thread had written %d" %
                        (n, t, got[-1], done[t]))
    return sum(len(v) for v in seen.values()), sum(lost.values())


def main():
    writer, work = sys.argv[1:3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rnd = random.Random(os.environ.get("EMBER_SEED", str(int(time.time()))))
    total_read = total_lost = 0
    for n in range(20):
        read, lost = one_run(writer, work, n, rnd)
        total_read += read
        total_lost += lost
    print("ok: 20 kills, %d events read, %d lost to overwriting, all accounted for" %
          (total_read, total_lost))


if __name__ == "__main__":
    main()
