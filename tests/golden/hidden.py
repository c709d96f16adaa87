"""Nothing is left out silently: what --minwidth (flame graph) and
--percent-limit (report) hide is counted, and the output says how much,
checked here against a model built from the folded stacks.

usage: hidden.py WORKDIR
"""
import csv
import io
import os
import re

import golden

case, main = golden.cases()
EXAMPLE = os.path.join(golden.CORPUS, "flamegraph", "example-perf-stacks.txt.gz")


def trie(stacks):
    """{path tuple: inclusive weight} for every prefix of every stack."""
    incl = {}
    for stack, n in stacks.items():
        fr = tuple(stack.split(";"))
        for k in range(1, len(fr) + 1):
            incl[fr[:k]] = incl.get(fr[:k], 0) + n
    return incl


def stacks_of(path):
    out, _, _ = golden.run(["collapse", path])
    return golden.folded_dict(out)


@case
def flame_minwidth(d):
    stacks = stacks_of(EXAMPLE)
    total = sum(stacks.values())
    incl = trie(stacks)
    limit = total * 5 / 100
    hidden = [p for p, w in incl.items() if w < limit]
    # the width left empty: hidden frames whose parent is drawn
    empty = sum(w for p, w in incl.items() if w < limit and (len(p) == 1 or incl[p[:-1]] >= limit))
    svg, _, _ = golden.run(["flamegraph", "--minwidth", "5%", EXAMPLE])
    m = re.search(rb'<text id="details"[^>]*>([^<]*)<', svg)
    want = "%d frames narrower than 5%% not drawn (%.2f%% of the total)" % (
        len(hidden), 100.0 * empty / total)
    if not m or m.group(1).decode() != want:
        golden.fail("flamegraph --minwidth 5%%: expected %r, got %r" %
                    (want, m.group(1) if m else None))
    svg, _, _ = golden.run(["flamegraph", "--minwidth", "0", EXAMPLE])
    if b"not drawn" in svg:
        golden.fail("--minwidth 0 hides nothing and should say nothing")


@case
def report_tree_limit(d):
    stacks = stacks_of(EXAMPLE)
    total = sum(stacks.values())
    incl = trie(stacks)
    shown = lambda p: all(incl[p[:k]] * 100.0 / total >= 1 for k in range(1, len(p) + 1))
    cut = [p for p, w in incl.items() if w * 100.0 / total < 1 and (len(p) == 1 or shown(p[:-1]))]
    weight = sum(incl[p] for p in cut)
    out, _, _ = golden.run(["report", "--tree", EXAMPLE])
    last = out.decode().splitlines()[-1]
    want = "(%d subtrees under 1%% not shown: %d samples, %.2f%% of the total)" % (
        len(cut), weight, 100.0 * weight / total)
    if last != want:
        golden.fail("report --tree: expected the footer %r, got %r" % (want, last))
    # tables for programs keep every node unless asked
    out, _, _ = golden.run(["report", "--tree", "--csv", EXAMPLE])
    rows = list(csv.reader(io.StringIO(out.decode())))[1:]
    if len(rows) != len(incl):
        golden.fail("report --tree --csv: %d rows, the profile has %d nodes" % (len(rows), len(incl)))


@case
def report_callees_limit(d):
    out, _, _ = golden.run(["report", "--callees", "java", "--percent-limit", "10", EXAMPLE])
    last = out.decode().splitlines()[-1]
    if not re.match(r"^\(\d+ callees under 10% not shown: \d+ samples\)$", last):
        golden.fail("report --callees with --percent-limit should say what it hid: %r" % last)



@case
def pprof_sample_without_stack(d):
    """A pprof sample with no location counts in go tool pprof's total; it
    was dropped. It is kept, on a frame that says what it is."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"))
    import make_bad_pprof as pb
    path = os.path.join(d, "nostack.pb")
    with open(path, "wb") as f:
        f.write(pb.profile(samples=(((2, 1), (5,)), ((), (3,)))))
    out, _, _ = golden.run(["collapse", path])
    if out != b"[no stack] 3\nmain;work 5\n":
        golden.fail("a sample without a stack should be kept: %r" % out)



@case
def dtrace_count_without_frames(d):
    """A DTrace aggregation line of a count alone (an empty stack) kept its
    weight on the root, where no view shows it: it is a frame now."""
    path = os.path.join(d, "empty.stacks")
    with open(path, "w") as f:
        f.write("CPU     ID                    FUNCTION:NAME\n  0  64091                        :tick-60s\n\n"
                "              libc.so.1`main+0x4\n              a.out`start+0x8\n                5\n\n"
                "                3\n")
    out, _, _ = golden.run(["collapse", "--format=dtrace", path])
    if out != b"[no stack] 3\na.out`start;libc.so.1`main 5\n":
        golden.fail("a count without frames should be kept: %r" % out)


if __name__ == "__main__":
    main()
