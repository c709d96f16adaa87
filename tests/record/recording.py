"""Helpers shared by the sampler's tests (record.py, against_perf.py, gc.py,
offcpu.py): skipping where the machine cannot record, compiling the test
programs, and running perf so that a word on its stderr fails the test."""
import shutil
import subprocess
import sys

import golden

SKIP = 77


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


def compile_c(src, out, flags):
    """cc -g FLAGS -o OUT SRC; skips without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        skip("no C compiler")
    subprocess.run([cc, "-g", "-o", out, src] + flags, check=True)
    return out


def perf(args):
    """perf ARGS: stdout; fails on a warning or error on stderr."""
    p = subprocess.run(["perf"] + args, capture_output=True, text=True)
    if p.returncode != 0 or p.stderr.strip():
        golden.fail("perf %s: exit %d, stderr %r" % (" ".join(args), p.returncode,
                                                     p.stderr[:2000]))
    return p.stdout
