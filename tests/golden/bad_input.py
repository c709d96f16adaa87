"""Bad input: ember must say what is wrong, with the file and line, exit
non-zero when nothing valid was read, leave no partial output file, and
never crash or hang.

usage: bad_input.py WORKDIR
"""
import gzip
import os
import random
import subprocess

import golden

case, main = golden.cases()


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
    # perf script ends every line: a last line without its end was cut,
    # an error naming the place (a profile missing its end is wrong)
    out = os.path.join(d, "truncated.folded")
    expect_failure(["collapse", path, "-o", out], path + ":5: truncated input", out=out)
    expect_failure(["collapse", "-j2", path, "-o", out], path + ":5: truncated input", out=out)


@case
def truncated_gzip(d):
    data = gzip.compress(b"a;b 1\n" * 100000)
    path = write(os.path.join(d, "cut.txt.gz"), data[: len(data) // 2])
    out = os.path.join(d, "cut.svg")
    expect_failure(["flamegraph", path, "-o", out], path + ": truncated input: expected the rest "
                   "of the gzip stream", out=out)


@case
def ten_megabyte_line(d):
    path = write(os.path.join(d, "long.txt"), b"x" * (10 << 20) + b"\n")
    out = os.path.join(d, "long.folded")
    expect_failure(["collapse", path, "-o", out], path + ":1:", out=out)
    expect_failure(["collapse", "--format=folded", path, "-o", out], path + ":1:",
                   "no samples in " + path, out=out)
    # a 10 MB stack is still a stack: 1M frames, deep as it is
    deep = b";".join(b"f%d" % i for i in range(1000000)) + b" 7\n"
    rc, outp, err = ember(["collapse", "--format=folded"], stdin=deep)
    if rc != 0 or outp != deep:
        golden.fail("a 1,000,000-frame stack should survive collapse: rc=%d\n%s" % (rc, err))
    rc, svg, err = ember(["flamegraph", "--format=folded"], stdin=deep)
    if rc != 0 or b"f999999" not in svg:
        golden.fail("a 1,000,000-frame stack should be drawn: rc=%d\n%s" % (rc, err))
    # detected as folded though its first line is longer than what probing reads
    rc, outp, err = ember(["collapse"], stdin=deep)
    if rc != 0 or outp != deep:
        golden.fail("a 10 MB first line should be detected as folded: rc=%d\n%s" % (rc, err))
    rc, rep, err = ember(["report", "--top", "3"], stdin=deep)
    if rc != 0 or b" f999999\n" not in rep:
        golden.fail("report of a 1,000,000-frame stack: rc=%d\n%s" % (rc, err))
    tall = b";".join(b"f%d" % i for i in range(100000)) + b" 7\n"
    rc, rep, err = ember(["report", "--tree", "--percent-limit", "0"], stdin=tall)
    lines = rep.splitlines()
    if rc != 0 or len(lines) != 100000 or not lines[-1].endswith(b"[99999] f99999"):
        golden.fail("report --tree of a 100,000-frame stack: rc=%d\n%s" % (rc, err))


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
    # samples that all weigh nothing: no samples either, for every command
    path = write(os.path.join(d, "zero.folded"), b"a;b 0\nc 0\n")
    for cmd in (["flamegraph"], ["collapse"], ["report"], ["convert", "--to", "speedscope"]):
        expect_failure(cmd + [path, "-o", out], "no samples in %s: the 2 it has all weigh 0" % path,
                       out=out)
    path = write(os.path.join(d, "comments.txt"), b"# only\n# comments\n")
    expect_failure(["collapse", path, "-o", out], path, out=out)
    # inferno's only-header-lines case: a DTrace header and nothing else
    path = write(os.path.join(d, "header.txt"),
                 b"CPU     ID                    FUNCTION:NAME\n  0  64091   :tick-60s \n\n")
    expect_failure(["collapse", "--format", "dtrace", path, "-o", out],
                   "no samples in " + path, out=out)


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
                         # NaN passed every range check after the parser's
                         (["flamegraph", "--fontsize=nan"], "--fontsize"),
                         (["flamegraph", "--total=inf"], "--total"),
                         (["report", "--percent-limit=nan"], "--percent-limit"),
                         (["collapse", "--bogus"], "unknown option"),
                         (["frobnicate"], "not an ember command")):
        rc, _, err = ember(args, stdin=b"")
        if rc != 2 or needle not in err:
            golden.fail("ember %s: expected exit 2 and %r, got %d:\n%s" %
                        (" ".join(args), needle, rc, err))


@case
def macos_readers(d):
    """tests/bad/{sample,instruments,xctrace,pprof-raw}: each file is
    detected as its format and fails at its line, saying what was expected."""
    bad = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bad")
    for name, line, needle in (
            ("sample/no-call-graph.txt", 4, 'expected a line starting "Call graph:"'),
            ("sample/odd-indentation.txt", 6, "odd indentation (expected 4 spaces, two"),
            ("sample/not-a-count.txt", 6, "sample count is not a number"),
            ("instruments/bad-unit.txt", 3, "not a number and a known unit"),
            ("instruments/skipped-level.txt", 3, "more than one level below"),
            ("instruments/mixed-units.txt", 3, "another kind of unit"),
            ("xctrace/unknown-ref.xml", 4, 'refers to a backtrace never defined with id="7"'),
            ("xctrace/frame-without-name.xml", 3, "has no name="),
            ("xctrace/cut.xml", 5, "truncated input: expected the rest of the XML document, up "
             "to </trace-query-result> (the input ends inside <row>)"),
            ("pprof-raw/no-locations.txt", 6, 'truncated input: expected the rest of the samples, '
             'then the "Locations" section (the input ends inside the Samples section)'),
            ("pprof-raw/unknown-location.txt", 8, "location 2, which the Locations section"),
            ("pprof-raw/missing-value.txt", 6, "one value per sample type")):
        path = os.path.join(bad, name)
        out = os.path.join(d, os.path.basename(name) + ".svg")
        expect_failure(["flamegraph", path, "-o", out], "%s:%d: " % (path, line), needle, out=out)
    # inferno's malformed `sample` inputs: errors where inferno 0.12 errs; a
    # cut call graph keeps its stacks (here all waiting ones: none left)
    inferno = os.path.join(golden.CORPUS, "inferno", "tests", "data", "collapse-sample")
    for name, line, needle in (
            ("bad-stack-line.txt", 22, "without a sample count and a function"),
            ("invalid-samples-field.txt", 22, "sample count is not a number"),
            ("no-four-spaces.txt", 22, "does not start with 4 spaces"),
            ("odd-indentation.txt", 22, "with an odd indentation"),
            ("skipped-indentation.txt", 23, "more than one level deeper"),
            ("stack-line-only-indent-chars.txt", 22, "only indentation characters"),
            ("end-before-call-graph-start.txt", 18, 'truncated input: expected a line starting '
             '"Call graph:"'),
            ("end-before-call-graph-end.txt", 34, 'truncated input: expected the rest of the call '
             'graph, up to a line starting "Total number in stack"')):
        path = os.path.join(inferno, name)
        out = os.path.join(d, name + ".folded")
        expect_failure(["collapse", path, "-o", out], "%s:%d: " % (path, line), needle, out=out)


# ---- inputs cut short --------------------------------------------------------

CUTS = ((0.10, "10%"), (0.50, "50%"), (0.99, "99%"), (None, "minus one byte"))
HERE = os.path.dirname(os.path.abspath(__file__))


def corpus(*parts):
    return os.path.join(golden.CORPUS, *parts)


def line_bounds(data, c):
    """The start and end (its newline, or the end) of the line holding c."""
    start = data.rfind(b"\n", 0, c) + 1
    end = data.find(b"\n", c)
    return start, len(data) if end < 0 else end


def whole(data):
    """Anywhere before the end of the content: a cut must be told there."""
    return 0, len(data.rstrip())


def folded_stack(data, c):
    """Inside the stack of c's line (a cut inside a count cannot be told)."""
    start, end = line_bounds(data, min(c, len(data) - 1))
    stack = data.rfind(b" ", start, end)
    return start + max(1, (stack - start) // 2)


def inside_line(data, c):
    """Not just after a newline (a cut between lines cannot be told where the
    format has no end marker)."""
    return c - 1 if c > 0 and data[c - 1:c] == b"\n" else c


def instruments_row(data, c):
    """Inside the weight of c's row: a cut in a symbol's name, or between
    rows, cannot be told."""
    start, _ = line_bounds(data, max(c, data.find(b"\n") + 1))
    return start + 3


def between(first, last):
    """The region from the line starting `first` to the end of the words
    `last` that start a later line: where the format can tell a cut."""
    def region(data):
        lo = data.find(b"\n" + first) + 1
        return lo, data.find(b"\n" + last, lo) + 1 + len(last)
    return region


def gunzipped(path):
    with gzip.open(path, "rb") as f:
        return f.read()


# (what, the real file, its bytes or None to read it, the region a cut can
# be told in, how a cut point moves to where it can be told, check the line)
TRUNCATED = (
    ("folded", corpus("speedscope", "sample", "profiles", "stackcollapse",
                      "perf-vertx-stacks-01-collapsed-all.txt"), None, whole, folded_stack, True),
    ("dtrace", corpus("flamegraph", "example-dtrace-stacks.txt"), None, whole, inside_line, True),
    ("sample", corpus("inferno", "tests", "data", "collapse-sample", "sample.txt"), None,
     between(b"Call graph:", b"Total number in stack"), None, True),
    ("sample-gz", corpus("inferno", "tests", "data", "collapse-sample", "large.txt.gz"), gunzipped,
     between(b"Call graph:", b"Total number in stack"), None, True),
    ("pprof-raw", os.path.join(HERE, "..", "data", "pprof-raw", "heap.txt"), None,
     between(b"Samples:", b"Mappings"), None, True),
    ("pprof-raw-header", os.path.join(HERE, "..", "data", "pprof-raw", "heap.txt"), None,
     between(b"Period:", b"Samples:"), inside_line, True),
    ("instruments", corpus("speedscope", "sample", "profiles", "Instruments", "7.3.1",
                           "simple-time-profile-deep-copy.txt"), None, whole, instruments_row,
     True),
    ("xctrace", corpus("inferno", "tests", "data", "collapse-xctrace", "basic.xml"), None, whole,
     None, False),
    ("chrome", corpus("speedscope", "sample", "profiles", "Chrome", "116",
                      "Trace-20230603T221323.json"), None, whole, None, False),
    ("cpuprofile", corpus("speedscope", "sample", "profiles", "Chrome", "65", "simple.cpuprofile"),
     None, whole, None, False),
    ("speedscope", corpus("speedscope", "sample", "profiles", "speedscope", "0.0.1",
                          "simple.speedscope.json"), None, whole, None, False),
    ("pprof", os.path.join(HERE, "..", "fuzz", "seeds", "pprof", "go-heap.pb"), None, whole, None,
     False),
    ("heap", os.path.join(HERE, "..", "fuzz", "seeds", "heap", "basic.heap"), None, whole, None,
     False),
    ("gzip", corpus("speedscope", "sample", "profiles", "pprof", "simple.prof"), None,
     lambda data: (0, len(data)), None, False),
)


def cut_points(data, region, snap):
    lo, hi = region(data)
    for frac, name in CUTS:
        c = hi - 1 if frac is None else lo + int((hi - lo) * frac)
        yield (snap(data, c) if snap else c), name


@case
def truncated_readers(d):
    """Every reader tells an input cut short where its format makes that
    possible: a real file of each, cut at 10%, 50%, 99% and one byte before
    its end (moved to where the format can tell a cut), is an error naming
    the file (and the line) and saying "truncated input", with no output."""
    for what, path, load, region, snap, check_line in TRUNCATED:
        if not os.path.exists(path):
            golden.fail("missing test input " + path)
        data = load(path) if load else open(path, "rb").read()
        for c, name in cut_points(data, region, snap):
            cut = write(os.path.join(d, "%s-%s-%s" % (what, name.replace(" ", "-"),
                                                      os.path.basename(path))), data[:c])
            where = cut + ":"
            if check_line:
                where = "%s:%d: " % (cut, data[:c].count(b"\n") + 1)
            for cmd in (["collapse"], ["flamegraph"], ["convert", "--to", "speedscope"]):
                out = os.path.join(d, "out")
                expect_failure(cmd + [cut, "-o", out], where, "truncated input", out=out)


@case
def trace_events_cut(d):
    """The array form of Chrome's trace events may lack its closing ']'
    (a crashed tracer): cut between two events it reads them all; cut
    inside an event it is an error."""
    events = (b'[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":2,"name":"a"},\n'
              b'{"ph":"X","pid":1,"tid":1,"ts":4,"dur":1,"name":"b"},\n')
    for tail in (b"", b"  \n", b"]"):
        path = write(os.path.join(d, "open.json"), events[:-2] + tail)
        rc, out, err = ember(["collapse", path])
        if rc != 0 or out != b"pid 1, tid 1;a 2\npid 1, tid 1;b 1\n" or err:
            golden.fail("a trace without its closing ']' reads whole: rc=%d %r\n%s" % (rc, out, err))
    path = write(os.path.join(d, "cut.json"), events + b'{"ph":"X","pid":1,"ti')
    out = os.path.join(d, "cut.folded")
    expect_failure(["collapse", path, "-o", out], path + ":3: ",
                   'truncated input: expected the rest of the JSON, closed by "}]" (the input '
                   'ends inside an event)', out=out)
    # the object form has no such licence
    path = write(os.path.join(d, "object.json"), b'{"traceEvents": ' + events[:-2])
    expect_failure(["collapse", path, "-o", out], path + ":2: ", "truncated input", out=out)


@case
def no_samples(d):
    """An input in which the reader finds no sample is an error naming it,
    for every command, also among other inputs that have samples."""
    good = write(os.path.join(d, "good.folded"), b"a;b 1\n")
    inputs = (("comments.folded", b"# only\n# comments\n", ["--format", "folded"]),
              ("dtrace-header.txt",
               b"CPU     ID                    FUNCTION:NAME\n  0  64091   :tick-60s \n\n",
               ["--format", "dtrace"]),
              ("empty-trace.json", b'{"traceEvents": []}\n', []),
              ("empty.speedscope.json",
               b'{"$schema": "https://www.speedscope.app/file-format-schema.json", '
               b'"shared": {"frames": []}, "profiles": [{"type": "sampled", "name": "p", '
               b'"unit": "none", "startValue": 0, "endValue": 0, "samples": [], "weights": []}]}',
               []))
    for name, text, opts in inputs:
        path = write(os.path.join(d, name), text)
        out = os.path.join(d, "out")
        for cmd in (["collapse"], ["flamegraph"], ["report"], ["convert", "--to", "pprof"]):
            expect_failure(cmd + opts + [path, "-o", out], "no samples in " + path, out=out)
            if not opts:
                expect_failure(cmd + [good, path, "-o", out], "no samples in " + path, out=out)


@case
def long_first_line(d):
    """A valid first line longer than what probing sees first (64 KiB) is
    detected, with or without ';'."""
    for stack in (b"x" * 70000, b"f" * 40000 + b";" + b"g" * 40000,
                  b";".join(b"f%d" % i for i in range(300000))):
        text = stack + b" 7\nmain;other 2\n"
        rc, out, err = ember(["collapse"], stdin=text)
        if rc != 0 or out != b"".join(sorted(text.splitlines(keepends=True))):
            golden.fail("a %d-byte first line should be detected as folded: rc=%d\n%s" %
                        (len(stack), rc, err))


PPROF_BAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bad", "pprof")


@case
def pprof_files(d):
    """tests/bad/pprof (made by data/make_bad_pprof.py): each damaged
    profile is an error naming the file and what was expected."""
    cases = {
        "truncated.pb": "truncated input: expected the 4 bytes the field says it holds, of "
                        "which 3 remain (the input ends inside Profile.function[0], from byte 61)",
        "truncated.pb.gz": "truncated input: expected the 7 bytes the field says it holds, of "
                           "which 1 remain (the input ends inside Profile.sample[0], from byte 36)",
        "wrong-type-sample.pb": "Profile.sample[0]: wire type 0 (varint), expected an embedded "
                                "Sample message",
        "wrong-type-location-id.pb": "location_id[0]: wire type 1 (64-bit), expected varint or packed",
        "location-id-out-of-range.pb": "refers to location id 99, which no location has",
        "function-id-out-of-range.pb": "refers to function id 7, which no function has",
        "string-index-out-of-range.pb": "function.name is string 42, but string_table has 5 "
                                        "entries (expected an index from 0 to 4)",
        "string-index-negative.pb": "is string -3, but string_table has 5 entries",
        "string-table-0.pb": "string_table[0] must be the empty string",
        "value-count.pb": "has 2 values, expected 1 (one per sample_type)",
        "duplicate-id.pb": "two functions have id 1 (expected unique ids)",
        "no-sample-type.pb": "no sample_type",
        "long-varint.pb": "a varint longer than 10 bytes",
    }
    for name, needle in sorted(cases.items()):
        path = os.path.join(PPROF_BAD, name)
        out = os.path.join(d, name + ".json")
        kind = "truncated input" if name.startswith("truncated") else "not a valid pprof profile"
        expect_failure(["convert", "--to", "speedscope", path, "-o", out], path + ": ", kind,
                       needle, out=out)
    # garbage read as pprof: an explanation, not a crash
    rnd = random.Random(4)
    for i in range(20):
        path = write(os.path.join(d, "random%d.pb" % i),
                     bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 3000))))
        err = expect_failure(["collapse", "--format=pprof", path], path + ": ")
        if "pprof" not in err and "Profile" not in err:
            golden.fail("garbage read as pprof should be explained in pprof's terms:\n" + err)
    rc, out, err = ember(["collapse", os.path.join(PPROF_BAD, "good.pb")])
    if rc != 0 or out != b"main;work 5\n":
        golden.fail("good.pb (the undamaged one) should read: %d %r %s" % (rc, out, err))


@case
def callgrind_chrome_speedscope(d):
    """tests/bad/{callgrind,chrome,speedscope}: each file is detected as its
    format and fails at its line (for JSON, the line of the token at fault),
    saying what was expected; speedscope's own two invalid files too."""
    bad = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bad")
    invalid = os.path.join(golden.CORPUS, "speedscope", "sample", "profiles", "speedscope",
                           "invalid")
    for path, line, needle in (
            ("callgrind/cost-before-events.callgrind", 4, 'before any "events:" line'),
            ("callgrind/bad-number.callgrind", 6, 'column 2: "2x0" (expected a number'),
            ("callgrind/calls-without-cost.callgrind", 8, "expected the cost line of the call"),
            ("callgrind/calls-without-cfn.callgrind", 6, "calls= without a cfn="),
            ("callgrind/undefined-id.callgrind", 6, "name id (2) used before it was defined"),
            ("callgrind/garbage-line.callgrind", 6, 'unrecognized line "this is not callgrind"'),
            ("callgrind/negative-cost.callgrind", 6, "negative cost"),
            ("callgrind/too-many-columns.callgrind", 5, "more than 3 columns"),
            ("callgrind/overflow.callgrind", 6, "overflow"),
            ("chrome/syntax.json", 3, "invalid JSON: invalid object key"),
            ("chrome/trailing-bracket.json", 5, "invalid JSON: trailing garbage"),
            ("chrome/node-without-id.cpuprofile", 5, 'node without an "id"'),
            ("chrome/cycle.cpuprofile", 7, "nodes form a cycle"),
            ("chrome/string-sample.cpuprofile", 5, "expected an integer, not a string"),
            ("chrome/truncated.cpuprofile", 6, "truncated input: expected the rest of the JSON"),
            ("chrome/not-a-trace.json", 1, "expected a Chrome trace"),
            ("speedscope/index-out-of-range.speedscope.json", 7, "frame index 7 out of range"),
            ("speedscope/index-out-of-range-frames-last.speedscope.json", 6,
             "frame index 9 out of range"),
            ("speedscope/no-frames.speedscope.json", 5, "has no shared.frames"),
            ("speedscope/lengths-differ.speedscope.json", 8, "2 samples but 3 weights"),
            ("speedscope/negative-weight.speedscope.json", 8, "negative weight"),
            ("speedscope/unknown-type.speedscope.json", 5, 'profile type "flat"'),
            ("speedscope/at-goes-back.speedscope.json", 7, '"at" values that never decrease'),
            (os.path.join(invalid, "out-of-order-events.json"), 20,
             'frame "B" while frame "A" is open on top'),
            (os.path.join(invalid, "incomplete-trace.json"), 13, 'frame "A" is still open')):
        path = os.path.join(bad, path)
        fmt = path.split(os.sep)[-2]
        if fmt == "invalid":
            fmt = "speedscope"
        out = os.path.join(d, os.path.basename(path) + ".svg")
        args = ["flamegraph", path, "-o", out]
        if fmt == "chrome" and path.endswith("not-a-trace.json"):
            args = ["flamegraph", "--format=chrome", path, "-o", out]
        expect_failure(args, "%s:%d: " % (path, line), needle, out=out)
        # detected as its format: the same message with --format
        expect_failure(["collapse", "--format=" + fmt, path], "%s:%d: " % (path, line), needle)
    # an unknown callgrind event names the ones there are
    cg = os.path.join(golden.CORPUS, "speedscope", "sample", "profiles", "callgrind",
                      "callgrind.multiple-event-types.log")
    expect_failure(["collapse", "--event=Ir", cg], cg + ":7: ", 'no event "Ir"',
                   "Time_(10ns) Memory_(bytes)")



@case
def proc_maps_is_no_profile(d):
    """/proc/PID/maps lines look like "comm pid ..." to the script's rule;
    they are not perf script: not detected, and no samples when forced."""
    path = write(os.path.join(d, "maps.txt"), open("/proc/self/maps", "rb").read())
    out = os.path.join(d, "maps.folded")
    expect_failure(["collapse", path, "-o", out], "unknown profile format", out=out)
    expect_failure(["collapse", "--format=perf", path, "-o", out], "no samples in " + path,
                   out=out)

if __name__ == "__main__":
    main()
