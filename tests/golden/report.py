"""`ember report` against sums computed here from the folded stacks: per
function self and total (a function counted once per stack however often it
recurses), the call tree (total and self per node), callers and callees; on
real profiles, in CSV (exact numbers) and checked in text form too. The
functions of perf script text leave out the process each stack begins with
(not a function: perf report ranks symbols), and the ranking by total
(--cum) also [unknown] and [module]: one name for every address perf could
not name (in a module).

usage: report.py
"""
import csv
import io
import os
import re
import tempfile

import golden

C = golden.CORPUS
INPUTS = [  # (path, whether its stacks begin with their process: perf script)
    (os.path.join(C, "flamegraph", "example-perf-stacks.txt.gz"), True),
    (os.path.join(C, "ocaml5", "perf", "alloc-fp.perf.txt"), True),  # deep recursion
    (os.path.join(C, "inferno", "tests", "data", "flamegraph", "fractional-samples",
                  "fractional.txt"), False),
]


def folded(path):
    out, _, _ = golden.run(["collapse", path])
    return {tuple(k.split(";")): v for k, v in golden.folded_dict(out).items()}


def expected_frames(stacks, rooted=False):
    """Per function: self and total weight, the process roots' totals not
    counted (rooted); the functions with either."""
    self_w, total_w = {}, {}
    for st, n in stacks.items():
        self_w[st[-1]] = self_w.get(st[-1], 0) + n
        for f in set(st[1:] if rooted else st):
            total_w[f] = total_w.get(f, 0) + n
    names = {f for f in set(self_w) | set(total_w) if self_w.get(f) or total_w.get(f)}
    return self_w, total_w, names


def rows(args, path):
    out, _, _ = golden.run(["report", "--csv"] + args + [path])
    return list(csv.reader(io.StringIO(out.decode())))


def close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def check_top(path, stacks, rooted, cum=False):
    self_w, total_w, names = expected_frames(stacks, rooted)
    unresolved = {f for f in names if re.match(r"^\[[^][<]*\]$", f)}
    if cum:
        names -= unresolved
    r = rows(["--cum"] if cum else [], path)
    if r[0] != ["function", "self", "self_pct", "total", "total_pct"]:
        golden.fail("top CSV header: %s" % r[0])
    got = {row[0]: (float(row[1]), float(row[3])) for row in r[1:]}
    if set(got) != names:
        golden.fail("%s: functions differ: %s" % (path, sorted(set(got) ^ names)[:5]))
    for f, (s, t) in got.items():
        if not close(s, self_w.get(f, 0)) or not close(t, total_w.get(f, 0)):
            golden.fail("%s: %s: got self %s total %s, expected %s %s" %
                        (path, f, s, t, self_w.get(f, 0), total_w.get(f, 0)))
    order = [float(row[3 if cum else 1]) for row in r[1:]]
    if order != sorted(order, reverse=True):
        golden.fail("%s: top not sorted by %s" % (path, "total" if cum else "self"))
    text, _, _ = golden.run(["report", "--top", "5"] + (["--cum"] if cum else []) + [path])
    lines = text.decode().splitlines()
    said = any(l.startswith("Not ranked, not functions:") for l in lines)
    left_out = rooted or (cum and bool(unresolved))
    if not lines[0].startswith("Showing 5 of %d functions" % len(names)) or \
            said != left_out or len(lines) != 7 + said:
        golden.fail("%s: text top: %s" % (path, lines[:3]))
    print("ok top", "--cum" if cum else "", os.path.basename(path), "(%d functions)" % len(got))


def check_tree(path, stacks):
    incl, selfw = {}, {}
    for st, n in stacks.items():
        for i in range(1, len(st) + 1):
            incl[st[:i]] = incl.get(st[:i], 0) + n
        selfw[st] = selfw.get(st, 0) + n
    r = rows(["--tree", "--percent-limit", "0"], path)
    got = {tuple(row[0].split(";")): (float(row[1]), float(row[3])) for row in r[1:]}
    want = {k: v for k, v in incl.items() if v}
    if set(got) != set(want):
        golden.fail("%s: tree nodes differ: %s" % (path, list(set(got) ^ set(want))[:3]))
    for k, (t, s) in got.items():
        if not close(t, incl[k]) or not close(s, selfw.get(k, 0)):
            golden.fail("%s: tree node %s: got %s %s" % (path, k[-1], t, s))
    # depth first: a node's line comes after its parent's, children heaviest first
    seen = set()
    for row in r[1:]:
        k = tuple(row[0].split(";"))
        if len(k) > 1 and k[:-1] not in seen:
            golden.fail("%s: tree line before its parent: %s" % (path, row[0][:200]))
        seen.add(k)
    print("ok tree", os.path.basename(path), "(%d nodes)" % len(got))


def check_neighbours(path, stacks):
    _, total_w, _ = expected_frames(stacks)
    target = sorted(total_w, key=lambda f: -total_w[f])[min(3, len(total_w) - 1)]
    callers, callees = {}, {}
    for st, n in stacks.items():
        if target not in st:
            continue
        i = st.index(target)  # the outermost call
        up = st[i - 1] if i > 0 else "(root)"
        callers[up] = callers.get(up, 0) + n
        down = st[i + 1] if i + 1 < len(st) else "(self)"
        callees[down] = callees.get(down, 0) + n
    for flag, want in (("--callers", callers), ("--callees", callees)):
        got = {row[0]: float(row[1]) for row in rows([flag, target], path)[1:]}
        if set(got) != set(want) or any(not close(got[k], want[k]) for k in got):
            golden.fail("%s %s %s: got %s, expected %s" % (path, flag, target, got, want))
    print("ok callers/callees of", target)


# names CSV must quote (a comma, quotes) and one with a tab (spelled \x09)
ODD = (b'main;say "hi", world;a,b 3\nmain;say "hi", world;"q" 2\n'
       b'main;x\ty 4\nmain;"q";a,b 1\n')


def main():
    odd = tempfile.NamedTemporaryFile(suffix=".folded")
    odd.write(ODD)
    odd.flush()
    for path, rooted in INPUTS + [(odd.name, False)]:
        stacks = folded(path)
        check_top(path, stacks, rooted)
        check_top(path, stacks, rooted, cum=True)
        check_tree(path, stacks)
        check_neighbours(path, stacks)
    _, err, rc = golden.run(["report", "--callers", "no_such_function", INPUTS[0][0]],
                            check=False)
    if rc != 1 or "no function named" not in err:
        golden.fail("unknown function: exit %d: %s" % (rc, err))
    _, err, rc = golden.run(["report", "--tree", "--callers", "x", INPUTS[0][0]], check=False)
    if rc != 2:
        golden.fail("two modes: expected exit 2, got %d" % rc)
    print("ok errors")


if __name__ == "__main__":
    main()
