"""Concurrency stress: 16 threads x 1M events while a live reader checks
every event (no torn or reordered event) and that losses are counted
exactly; in flight-recorder mode and in drain mode.

usage: stress.py STRESS_WRITER STRESS_CHECK WORKDIR
"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402

THREADS, EVENTS = 16, 1000000


def main():
    writer, checker, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for mode in ("overwrite", "drain"):
        trace = os.path.join(work, mode + ".trace")
        check = subprocess.Popen([checker, trace, str(THREADS), str(EVENTS)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        env = dict(os.environ, EMBER_TRACE=trace, EMBER_TRACE_MODE=mode)
        t0 = time.time()
        subprocess.run([writer, str(THREADS), str(EVENTS)], env=env, check=True)
        elapsed = time.time() - t0
        out, err = check.communicate(timeout=300)
        if check.returncode != 0 or not out.startswith("ok:"):
            golden.fail("%s mode: %s%s" % (mode, out, err))
        print("%s mode (%.2f s of writing): %s" % (mode, elapsed, out.strip()))
        os.unlink(trace)


if __name__ == "__main__":
    main()
