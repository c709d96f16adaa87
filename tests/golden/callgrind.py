"""Golden test: ember's self cost per function on real valgrind profiles
equals callgrind_annotate's (cg_annotate's for cachegrind), for every
function and every event in the file, and cut-off profiles are errors.

usage: callgrind.py CC WORKDIR RECURSIVE.c SIMPLE.c

RECURSIVE.c (tests/golden/data/callgrind_rec.c) has direct and mutual
recursion, a cycle of three functions, callees far below 1/10000 of the
total and a thread. It is run under valgrind with --dump-instr=no, with
--dump-instr=yes --cache-sim=yes (nine events), with --separate-recs=1, in
parts (--dump-every-bb with --combine-dumps=yes), and under cachegrind.
SIMPLE.c (callgrind_prog.c) has a leaf called from two places, malloc and
a recursion without callees. The program's own functions' inclusive costs
are compared too, within the rounding of their parts. And the Python
running this test, whose call graph passes the expansion's budget.

Names: callgrind calls the deeper levels of a recursion rec'2 (and a'2,
b'2 in a cycle); they are the same function, and ember shows them as rec
(so a flame graph draws rec;rec;leaf and --callers rec finds them all).
So callgrind_annotate's rec and rec'2 are summed here, and the
--separate-recs=1 run, where callgrind_annotate itself has one rec, checks
that the sum is what the tool says of the same program without the split.

Cut-off files: valgrind ends every part with "totals:" (cachegrind its file
with "summary:"), so a file cut anywhere is an error naming the file and a
line, with no output; a cut that drops only trailing blank space is not.
Skipped (77) when valgrind is not installed.
"""
import csv
import io
import os
import random
import re
import shutil
import subprocess
import sys

import golden

RECURSION = re.compile(r"'[0-9]+$")
# the program's functions, each a name of one function (strcmp, in ld.so
# and libc, is two); clone is not: ember draws the thread under it
MINE = ("main", "worker", "rec", "even", "odd", "cycle_a", "cycle_b", "cycle_c", "leaf", "tiny")


def annotate(tool, path, event):
    """{function name: self cost} and the total, as callgrind_annotate (or
    cg_annotate) prints them for one event: every function, its costs in
    several files summed, callgrind's recursion suffix removed."""
    if tool == "callgrind":
        args = ["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no"]
    else:
        args = ["cg_annotate", "--threshold=0", "--auto=no", "--show-percs=no"]
    p = subprocess.run(args + ["--show=" + event, path], capture_output=True, text=True, check=True)
    costs, total = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"\s*([0-9,]+)(?: \(\s*[0-9.]+%\))?\s+(.*)$", line)
        if not m:
            continue
        cost, what = int(m.group(1).replace(",", "")), m.group(2)
        if what == "PROGRAM TOTALS":
            total = cost
            continue
        name = re.sub(r" \[.*\]$", "", what).partition(":")[2]
        name = RECURSION.sub("", name)
        if cost:
            costs[name] = costs.get(name, 0) + cost
    return costs, total


def annotate_inclusive(path, event):
    """callgrind_annotate's inclusive cost per function name: the calls to
    it (for rec, the calls from outside; rec'2's are left out)."""
    p = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no",
                        "--show=" + event, path], capture_output=True, text=True, check=True)
    costs = {}
    for line in p.stdout.splitlines():
        m = re.match(r"\s*([0-9,]+) \(\s*[0-9.]+%\)\s+(.*)$", line)
        if m and m.group(2) != "PROGRAM TOTALS":
            name = re.sub(r" \[.*\]$", "", m.group(2)).partition(":")[2]
            if not RECURSION.search(name):
                costs[name] = max(costs.get(name, 0), int(m.group(1).replace(",", "")))
    return costs


def ember_self(path, event):
    """{function: self} from `ember report --top N --csv --event E`."""
    out, _, _ = golden.run(["report", "--top", "1000000", "--csv", "--event", event, path])
    rows = list(csv.DictReader(io.StringIO(out.decode())))
    return {r["function"]: int(r["self"]) for r in rows if int(r["self"])}


def events_of(path):
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                return line.split()[1:]
    golden.fail("%s: no events: line" % path)


def file_totals(path, event):
    """The sum of the file's totals: lines (one per part) for one event."""
    events, total = None, 0
    for line in open(path):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("totals:"):
            counts = line.split()[1:]
            i = events.index(event)
            total += int(counts[i]) if i < len(counts) else 0
    return total


def stacks(path, event):
    out, _, _ = golden.run(["collapse", "--event", event, path])
    got = {}
    for line in out.decode().splitlines():
        stack, _, w = line.rpartition(" ")
        got[stack] = got.get(stack, 0) + int(w)
    return got


def inclusive(path, event, names):
    """Each name's inclusive cost in ember's stacks, and how far rounding
    may move it: each function's part under one node of the name is within
    1 of its proportion, so 1 per distinct function under each such node."""
    costs, slack = {}, {}
    under = {}
    for stack, w in stacks(path, event).items():
        frames = stack.split(";")
        for name in names:
            if name in frames:
                top = frames.index(name)
                costs[name] = costs.get(name, 0) + w
                under.setdefault((name, tuple(frames[:top + 1])), set()).update(frames[top:])
    for (name, _), funcs in under.items():
        slack[name] = slack.get(name, 0) + len(funcs)
    return costs, slack


def compare(tool, path, mine=(), reference=None):
    """Every function's self cost, for every event, as {tool}_annotate; the
    total as the file's totals: lines (callgrind_annotate's PROGRAM TOTALS is
    the summary: line, which may exceed the cost lines: by a few Ir with
    --cache-sim=yes); the program's own functions' inclusive costs as
    callgrind_annotate's, within rounding."""
    events = events_of(path)
    for event in events:
        want, total = annotate(tool, reference or path, event)
        got = ember_self(path, event)
        if got != want:
            diff = sorted((n, got.get(n), want.get(n)) for n in set(got) | set(want)
                          if got.get(n) != want.get(n))
            golden.fail("%s --event %s: self costs differ from %s_annotate in %d functions "
                        "(name, ember, %s_annotate): %s" %
                        (path, event, tool, len(diff), tool, diff[:8]))
        if tool == "callgrind":
            total = file_totals(path, event)
        if sum(got.values()) != total:
            golden.fail("%s --event %s: total %d, expected %d" %
                        (path, event, sum(got.values()), total))
        if mine:
            incl_want = annotate_inclusive(reference or path, event)
            incl_got, slack = inclusive(path, event, mine)
            for name in mine:
                if abs(incl_got.get(name, 0) - incl_want.get(name, 0)) > slack.get(name, 0):
                    golden.fail("%s --event %s: inclusive cost of %s is %s, callgrind_annotate "
                                "%s (rounding allows %s)" %
                                (path, event, name, incl_got.get(name), incl_want.get(name),
                                 slack.get(name, 0)))
    print("ok %s: %d events, every function's self cost as %s_annotate" %
          (os.path.basename(path), len(events), tool))


def pprof_every_event(path, workdir):
    """convert --to pprof keeps every event a sample type, each with the
    self costs ember shows for it (which compare() held against
    callgrind_annotate): go tool pprof -raw reads them back."""
    if not shutil.which("go"):
        print("go is not installed: the pprof export of %s is not checked" % path)
        return
    pb = path + ".pb.gz"
    golden.run(["convert", "--to", "pprof", "-o", pb, path])
    raw = golden.go_raw(pb, workdir)
    events = events_of(path)
    if list(raw) != events:
        golden.fail("%s as pprof: sample types %s, expected the events %s" %
                    (path, list(raw), events))
    for event in events:
        got = {}
        for stack, v in raw[event].items():
            leaf = stack.rpartition(";")[2]
            got[leaf] = got.get(leaf, 0) + v
        if got != ember_self(path, event):
            golden.fail("%s as pprof, sample type %s: self costs differ from ember's" %
                        (path, event))
    print("ok %s as pprof: %d sample types, one per event" % (os.path.basename(path), len(events)))


def valgrind(workdir, prog, name, *opts, tool="callgrind", arg="120"):
    out = os.path.join(workdir, name)
    subprocess.run(["valgrind", "--tool=" + tool, "--%s-out-file=%s" % (tool, out)] + list(opts) +
                   [prog, arg], check=True, capture_output=True)
    return out


def expect_cut_rejected(path, data, cut, workdir):
    part = os.path.join(workdir, "cut.out")
    with open(part, "wb") as f:
        f.write(data[:cut])
    p = subprocess.run([golden.EMBER, "collapse", "--format=callgrind", part],
                       capture_output=True, timeout=60)
    err = p.stderr.decode(errors="replace")
    if p.returncode < 0 or "Sanitizer" in err or "runtime error" in err:
        golden.fail("%s cut at byte %d: ember crashed:\n%s" % (path, cut, err))
    if data[:cut].rstrip() == data.rstrip():
        if p.returncode != 0:
            golden.fail("%s without its last blank space (%d bytes): rejected:\n%s" %
                        (path, cut, err))
        return
    if p.returncode != 1 or p.stdout:
        golden.fail("%s cut at byte %d of %d: expected an error and no output, got exit %d, "
                    "%d bytes out, stderr:\n%s" % (path, cut, len(data), p.returncode,
                                                   len(p.stdout), err))
    if not re.search(re.escape(part) + r":[0-9]+: ", err):
        golden.fail("%s cut at byte %d: the error should name the file and line:\n%s" %
                    (path, cut, err))


def check_truncation(path, workdir, tries=40):
    """Cuts at random bytes, and at the edges of the last lines."""
    data = open(path, "rb").read()
    rnd = random.Random(path)
    cuts = {rnd.randrange(1, len(data)) for _ in range(tries)}
    last = data.rstrip().rfind(b"\n")
    before = data.rfind(b"\n", 0, last)
    cuts |= {len(data) - 1, len(data) - 3, last, last + 1, last + 8, before, before + 2}
    for cut in sorted(cuts):
        expect_cut_rejected(path, data, cut, workdir)
    print("ok %s: %d cuts rejected (or complete)" % (os.path.basename(path), len(cuts)))


def build(cc, src, workdir):
    prog = os.path.join(workdir, os.path.splitext(os.path.basename(src))[0])
    subprocess.run([cc, "-O1", "-g", "-fno-inline", "-pthread", "-o", prog, src], check=True)
    return prog


def recursive_program(cc, src, workdir):
    """callgrind_rec.c in every configuration; the files, to cut."""
    prog = build(cc, src, workdir)
    plain = valgrind(workdir, prog, "plain.callgrind", "--dump-instr=no")
    compare("callgrind", plain, MINE)
    # the callees under 1/10000 of the total are there, with their callers
    out, _, _ = golden.run(["report", "--callers", "tiny", plain])
    if b"cycle_c" not in out or b"main" not in out:
        golden.fail("report --callers tiny: expected cycle_c and main:\n" + out.decode())
    cache = valgrind(workdir, prog, "cache.callgrind", "--dump-instr=yes", "--collect-jumps=yes",
                     "--cache-sim=yes")
    compare("callgrind", cache, MINE)
    pprof_every_event(cache, workdir)
    one = valgrind(workdir, prog, "separate-recs-1.callgrind", "--separate-recs=1")
    if b"'2" in open(one, "rb").read():
        golden.fail("%s: --separate-recs=1 should have no '2 names" % one)
    # callgrind_annotate counts a recursive function's calls to itself in its
    # inclusive cost again: only the others' inclusive costs compare
    compare("callgrind", one, ("main", "worker", "leaf", "tiny"))
    # several parts in one file; callgrind_annotate sums them
    parts = valgrind(workdir, prog, "parts.callgrind", "--dump-every-bb=100000",
                     "--combine-dumps=yes")
    if open(parts).read().count("\ntotals:") < 2:
        golden.fail("%s: expected several parts" % parts)
    # a part opens with the calls still running from the part before:
    # "calls=0", whose next line is the call's inclusive cost, which
    # callgrind_annotate 3.19 adds to the caller's self cost (it tests
    # calls > 0); the totals: lines agree with ember. So callgrind_annotate
    # reads a copy where those calls say calls=1.
    fixed = parts + ".calls1"
    with open(fixed, "w") as f:
        f.write(re.sub(r"^calls=0 ", "calls=1 ", open(parts).read(), flags=re.M))
    compare("callgrind", parts, MINE, reference=fixed)
    cachegrind = valgrind(workdir, prog, "cachegrind.out", "--cache-sim=yes", tool="cachegrind")
    compare("cg", cachegrind)
    return plain, cache, parts, cachegrind


def simple_program(cc, src, workdir):
    """callgrind_prog.c: a leaf called from two places, malloc, fib'2;
    read the same whether its format is given or detected."""
    prog = build(cc, src, workdir)
    out = valgrind(workdir, prog, "prog.callgrind", "--dump-instr=yes", "--collect-jumps=yes",
                   "--cache-sim=yes", arg="300")
    if golden.run(["collapse", "--format=callgrind", out])[0] != golden.run(["collapse", out])[0]:
        golden.fail("%s: not detected as callgrind" % out)
    compare("callgrind", out, ("main", "mid", "leaf", "other", "fib"))


def interpreter(workdir):
    """Python under callgrind: 2000 functions in large cycles, a graph that
    passes the expansion's budget. Self costs stay exact."""
    out = os.path.join(workdir, "python.callgrind")
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                    sys.executable, "-c", "import json"], check=True, capture_output=True)
    compare("callgrind", out)
    _, err, _ = golden.run(["report", out])
    if "expands to more than" not in err:
        print("note: %s did not pass the expansion's budget" % out)


def too_many_events(workdir):
    """Past EMBER_MAX_VALUES (16) events the rest are dropped with a warning
    naming them, never the one asked for."""
    path = os.path.join(workdir, "17events.callgrind")
    counts = " ".join(str(i + 1) for i in range(17))
    with open(path, "w") as f:
        f.write("events: %s\nfn=main\n1 %s\ntotals: %s\n" %
                (" ".join("E%d" % i for i in range(17)), counts, counts))
    for event, dropped in (("E16", "E15"), ("E0", "E16"), ("E3", "E16")):
        out, err, _ = golden.run(["collapse", "--event", event, path])
        if out != b"main %d\n" % (int(event[1:]) + 1) or "event %s not kept" % dropped not in err:
            golden.fail("17 events, --event %s: %r %r" % (event, out, err))
    print("ok 17 events: 16 kept, the one asked for among them")
    # an event name is a value's name: at most 63 bytes (a fuzzer's input
    # of one long name once left no event at all)
    with open(path, "w") as f:
        f.write("events: %s\nfn=main\n1 5\n" % ("E" * 70))
    _, err, rc = golden.run(["collapse", path], check=False)
    if rc != 1 or "event name" not in err or "of 70 bytes (expected at most 63)" not in err:
        golden.fail("a 70-byte event name: exit %d, %r" % (rc, err))
    print("ok an event name too long is an error")


def main():
    cc, workdir, rec_src, simple_src = sys.argv[1:5]
    for tool in ("valgrind", "callgrind_annotate", "cg_annotate"):
        if not shutil.which(tool):
            print("%s is not installed: skipped" % tool)
            sys.exit(77)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    too_many_events(workdir)
    simple_program(cc, simple_src, workdir)
    interpreter(workdir)
    for path in recursive_program(cc, rec_src, workdir):
        check_truncation(path, workdir)


if __name__ == "__main__":
    main()
