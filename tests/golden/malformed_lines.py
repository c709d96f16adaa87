"""Golden test: one rule for a malformed line, wherever it is.

flamegraph.pl skips a folded line without a count and says how many it
ignored ("Ignored N lines with invalid format"); ember does the same
whether the line is the first, among the first ones (where it used to make
the input "unknown profile format", quoting a valid line 1) or after
100,000 good lines: the same stacks as without it, and one warning at the
first such line, with the file and the count ("FILE:LINE: ignored N lines
with invalid format ..."). The other line-oriented readers keep their own
rule wherever the line is: perf script text skips a line it does not
recognize with a warning (stackcollapse-perf.pl: "Unrecognized line"),
DTrace's reader takes any line for a frame (stackcollapse.pl), so neither
refuses an input for one stray line before, or right after, its first
sample's first line; macOS sample's reader stops at a bad graph line,
naming it. An input whose lines are mostly something else is still not
taken for folded stacks, and the error never quotes a valid line.

usage: malformed_lines.py WORKDIR
"""
import os
import re

import golden

case, main = golden.cases()
C = golden.CORPUS
BAD = b"this line has no count"


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def insert(data, after, line):
    """data with line inserted after its first `after` lines."""
    lines = data.split(b"\n")
    return b"\n".join(lines[:after] + [line] + lines[after:])


def collapse(args, what):
    out, err, rc = golden.run(["collapse"] + args, check=False)
    if rc != 0 or "unknown profile format" in err:
        golden.fail("%s: exit %d: %s" % (what, rc, err))
    return out, err


def expect_warning(err, path, line, count, what):
    want = "%s:%d: ignored %d line%s with invalid format" % (path, line, count,
                                                              "" if count == 1 else "s")
    warnings = [w for w in err.splitlines() if "warning:" in w]
    if len(warnings) != 1 or want not in warnings[0]:
        golden.fail("%s: expected one warning %r, got:\n%s" % (what, want, err))


def folded_input(n):
    return b"".join(b"main;f%d;g%d %d\n" % (i % 7, i % 13, i % 5 + 1) for i in range(n))


@case
def folded_anywhere(d):
    good = folded_input(300)
    want, _ = collapse([write(os.path.join(d, "good.folded"), good)], "good")
    for after in (0, 1, 2, 150, 300):
        path = write(os.path.join(d, "bad%d.folded" % after), insert(good, after, BAD))
        out, err = collapse([path], "bad line after %d lines" % after)
        golden.first_difference(out, want, "bad line after %d lines" % after)
        expect_warning(err, path, after + 1, 1, "bad line after %d lines" % after)
        # from a pipe (detected on what is read ahead), and drawn
        out, err = golden.run(["collapse", "-"], stdin=open(path, "rb").read(), check=False)[:2]
        golden.first_difference(out, want, "piped, bad line after %d lines" % after)
        expect_warning(err, "<stdin>", after + 1, 1, "piped, bad line after %d lines" % after)
        _, err, rc = golden.run(["flamegraph", path, "-o", os.path.join(d, "x.svg")],
                                check=False)
        if rc != 0:
            golden.fail("flamegraph, bad line after %d lines: %s" % (after, err))
    # two bad lines: one warning, at the first, with the count
    path = write(os.path.join(d, "two.folded"), insert(insert(good, 200, b"junk"), 3, BAD))
    out, err = collapse([path], "two bad lines")
    golden.first_difference(out, want, "two bad lines")
    expect_warning(err, path, 4, 2, "two bad lines")
    # diff --folded merges without profiles: the same rule
    out, err, rc = golden.run(["diff", "--folded", path, os.path.join(d, "good.folded")],
                              check=False)
    if rc != 0:
        golden.fail("diff --folded with bad lines: %s" % err)
    expect_warning(err, path, 4, 2, "diff --folded")


@case
def folded_after_100000_lines(d):
    good = folded_input(100001)
    want, _ = collapse([write(os.path.join(d, "good.folded"), good)], "good")
    for after in (1, 100001):
        path = write(os.path.join(d, "big%d.folded" % after), insert(good, after, BAD))
        out, err = collapse([path], "big, bad line after %d" % after)
        golden.first_difference(out, want, "big, bad line after %d" % after)
        expect_warning(err, path, after + 1, 1, "big, bad line after %d" % after)


@case
def not_folded(d):
    """Mostly other text: not folded stacks, and the error quotes the
    first line that is not one, never a valid one."""
    path = write(os.path.join(d, "log.txt"), b"a;b 1\nstarting up\nready\n")
    _, err, rc = golden.run(["collapse", path], check=False)
    if rc == 0 or not re.search(r'log\.txt:2: unknown profile format: "starting up"', err):
        golden.fail("mostly not folded: exit %d: %s" % (rc, err))
    for fmt, f in (("perf", "flamegraph/test/perf-funcab-cmd-01.txt"),
                   ("dtrace", "flamegraph/example-dtrace-stacks.txt")):
        detected, _, _ = golden.run(["collapse", os.path.join(C, f)])
        forced, _, _ = golden.run(["collapse", "--format", fmt, os.path.join(C, f)])
        if detected != forced:
            golden.fail("%s is no longer detected as %s" % (f, fmt))


@case
def perf_script_anywhere(d):
    src = os.path.join(C, "flamegraph", "test", "perf-funcab-cmd-01.txt")
    data = open(src, "rb").read()
    want, _ = collapse([src], "perf script")
    first = data.split(b"\n").index(next(l for l in data.split(b"\n")
                                         if l and not l.startswith(b"#")))
    for after in (0, first, first + 1, first + 5):
        path = write(os.path.join(d, "perf%d.txt" % after), insert(data, after, b"junk here"))
        out, err = collapse([path], "perf script, junk after %d lines" % after)
        golden.first_difference(out, want, "perf script, junk after %d lines" % after)
        if "%s:%d: unrecognized line" % (path, after + 1) not in err:
            golden.fail("perf script, junk after %d lines: no warning at it:\n%s" % (after, err))


@case
def dtrace_anywhere(d):
    src = os.path.join(C, "flamegraph", "example-dtrace-stacks.txt")
    data = open(src, "rb").read()
    for after in (3, 4, 6, 40):
        path = write(os.path.join(d, "dtrace%d.txt" % after), insert(data, after, b"junk here"))
        out, err = collapse([path], "dtrace, junk after %d lines" % after)
        forced, _, _ = golden.run(["collapse", "--format", "dtrace", path])
        golden.first_difference(out, forced, "dtrace, junk after %d lines, detected" % after)


@case
def sample_stops_at_its_line(d):
    src = os.path.join(C, "inferno", "tests", "data", "collapse-sample", "sample.txt")
    lines = open(src, "rb").read().split(b"\n")
    at = lines.index(next(l for l in lines if l.startswith(b"Call graph:"))) + 2
    path = write(os.path.join(d, "sample.txt"), insert(b"\n".join(lines), at, b"junk here"))
    _, err, rc = golden.run(["collapse", path], check=False)
    if rc == 0 or "unknown profile format" in err or "%s:%d:" % (path, at + 1) not in err:
        golden.fail("sample: a bad graph line should be named: exit %d: %s" % (rc, err))


if __name__ == "__main__":
    main()
