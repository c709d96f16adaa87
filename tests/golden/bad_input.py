"""Bad input: ember must say what is wrong, with the file and line, exit
non-zero when nothing valid was read, leave no partial output file, and
never crash or hang.

usage: bad_input.py WORKDIR
"""
import gzip
import os
import random
import shutil
import subprocess
import sys

import golden

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def ember(args, stdin=None, timeout=60):
    p = subprocess.run([golden.EMBER] + args, input=stdin, capture_output=True,
                       timeout=timeout)
    err = p.stderr.decode(errors="replace")
    if p.returncode < 0 or "Sanitizer" in err or "runtime error" in err:
        golden.fail("ember %s crashed (%d):\n%s" % (" ".join(args), p.returncode, err))
    return p.returncode, p.stdout, err


def expect_failure(args, *needles, stdin=None, out=None):
    """Runs ember expecting exit 1, the needles in stderr, and no out file."""
    rc, _, err = ember(args, stdin)
    if rc != 1:
        golden.fail("ember %s: expected exit 1, got %d\n%s" % (" ".join(args), rc, err))
    for n in needles:
        if n not in err:
            golden.fail("ember %s: expected %r in the message, got:\n%s" %
                        (" ".join(args), n, err))
    if out and os.path.exists(out):
        golden.fail("ember %s left a partial %s" % (" ".join(args), out))
    leftovers = [f for f in os.listdir(os.path.dirname(out) or ".")
                 if f.startswith("." + os.path.basename(out))] if out else []
    if leftovers:
        golden.fail("ember %s left temporary files %s" % (" ".join(args), leftovers))
    return err


@case
def binary_garbage(d):
    rnd = random.Random(1)
    path = write(os.path.join(d, "garbage.bin"), bytes(rnd.randrange(256) for _ in range(200000)))
    out = os.path.join(d, "garbage.svg")
    expect_failure(["flamegraph", path, "-o", out], path + ":", "unknown profile format", out=out)
    # forced to read it as perf script: each line it cannot use is reported
    # with its file and line (random bytes may still hold a few "samples")
    rc, _, err = ember(["collapse", "--format=perf", path, "-o", out])
    if path + ":1: unrecognized line" not in err or "more warnings not shown" not in err:
        golden.fail("garbage as perf: warnings should name the file and line:\n" + err[:2000])


@case
def truncated_sample(d):
    text = (b"prog 123 [000] 1.0: 1000 cycles:\n\tffffffff81000000 main+0x1 (/bin/prog)\n\n"
            b"prog 123 [000] 2.0: 1000 cycles:\n\tffffffff810000")
    path = write(os.path.join(d, "truncated.txt"), text)
    rc, out, err = ember(["collapse", path])
    # the cut frame is reported and skipped, as any unrecognized line in a
    # sample is; the samples themselves are kept
    if rc != 0 or out != b"prog 1000\nprog;main 1000\n":
        golden.fail("a truncated last sample should keep what was valid: rc=%d out=%r" % (rc, out))
    if path + ":5:" not in err:
        golden.fail("the cut frame line should be reported at line 5:\n" + err)


@case
def truncated_gzip(d):
    data = gzip.compress(b"a;b 1\n" * 100000)
    path = write(os.path.join(d, "cut.txt.gz"), data[: len(data) // 2])
    out = os.path.join(d, "cut.svg")
    expect_failure(["flamegraph", path, "-o", out], path, "truncated gzip data", out=out)


@case
def ten_megabyte_line(d):
    path = write(os.path.join(d, "long.txt"), b"x" * (10 << 20) + b"\n")
    out = os.path.join(d, "long.folded")
    expect_failure(["collapse", path, "-o", out], path + ":1:", out=out)
    expect_failure(["collapse", "--format=folded", path, "-o", out], path + ":1:",
                   "no stacks found", out=out)
    # a 10 MB stack is still a stack: 1M frames, deep as it is
    deep = b";".join(b"f%d" % i for i in range(1000000)) + b" 7\n"
    rc, outp, err = ember(["collapse", "--format=folded"], stdin=deep)
    if rc != 0 or outp != deep:
        golden.fail("a 1,000,000-frame stack should survive collapse: rc=%d\n%s" % (rc, err))
    rc, svg, err = ember(["flamegraph", "--format=folded"], stdin=deep)
    if rc != 0 or b"f999999" not in svg:
        golden.fail("a 1,000,000-frame stack should be drawn: rc=%d\n%s" % (rc, err))


@case
def invalid_utf8(d):
    path = write(os.path.join(d, "utf8.folded"),
                 b"main;caf\xc3\xa9;bad\xff\xfename;\xe2\x82 3\nmain;ok<&>\"' 2\n")
    rc, out, err = ember(["collapse", path])
    if rc != 0 or b"bad\xff\xfename" not in out:
        golden.fail("collapse should keep the bytes of invalid UTF-8 names: %r %s" % (out, err))
    rc, svg, err = ember(["flamegraph", path])
    import xml.dom.minidom
    try:
        xml.dom.minidom.parseString(svg)
    except Exception as e:
        golden.fail("the SVG of invalid UTF-8 names is not well-formed XML: %s" % e)
    if "caf\u00e9".encode() not in svg or b"bad\xef\xbf\xbd\xef\xbf\xbdname" not in svg:
        golden.fail("valid UTF-8 should be kept and invalid bytes replaced by U+FFFD")


@case
def unreadable(d):
    missing = os.path.join(d, "does-not-exist.txt")
    out = os.path.join(d, "x.svg")
    expect_failure(["flamegraph", missing, "-o", out], missing, "No such file", out=out)
    expect_failure(["collapse", d, "-o", out], d, "directory", out=out)


@case
def no_stacks(d):
    path = write(os.path.join(d, "empty.txt"), b"")
    out = os.path.join(d, "empty.svg")
    expect_failure(["flamegraph", path, "-o", out], path, "empty", out=out)
    path = write(os.path.join(d, "zero.folded"), b"a;b 0\n")
    expect_failure(["flamegraph", path, "-o", out], "no stack counts", out=out)
    path = write(os.path.join(d, "comments.txt"), b"# only\n# comments\n")
    expect_failure(["collapse", path, "-o", out], path, out=out)


@case
def failure_keeps_old_output(d):
    out = write(os.path.join(d, "keep.svg"), b"old")
    bad = write(os.path.join(d, "bad.folded"), b"no counts here\n")
    expect_failure(["flamegraph", bad, "-o", out], bad)
    if open(out, "rb").read() != b"old":
        golden.fail("a failed run must leave an existing output file untouched")


@case
def bad_options(d):
    for args, needle in ((["flamegraph", "--colors=nope"], "unknown palette"),
                         (["flamegraph", "--width=abc"], "--width"),
                         (["flamegraph", "--minwidth=x%"], "--minwidth"),
                         (["collapse", "--bogus"], "unknown option"),
                         (["frobnicate"], "not an ember command")):
        rc, _, err = ember(args, stdin=b"")
        if rc != 2 or needle not in err:
            golden.fail("ember %s: expected exit 2 and %r, got %d:\n%s" %
                        (" ".join(args), needle, rc, err))


def main():
    d = sys.argv[1]
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for fn in CASES:
        sub = os.path.join(d, fn.__name__)
        os.makedirs(sub, exist_ok=True)
        fn(sub)
        print("ok", fn.__name__)


if __name__ == "__main__":
    main()
