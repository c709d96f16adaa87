"""The transforms (--demangle, --hide, --collapse, --collapse-gc, --focus,
--ignore, --prune-from, --skip-after, --flatten-recursion, --merge-threads)
against an independent model written here in Python, on real profiles
(FlameGraph's tests, the OCaml 5 perf recordings) and on inferno's
collapse-recursive case; then the OCaml pipeline the issue asks for.

usage: transforms.py
"""
import os
import re
import shutil
import subprocess
import tempfile

import golden

C = golden.CORPUS
OCAML = os.path.join(C, "ocaml5", "perf")


def collapse(args, path):
    out, _, _ = golden.run(["collapse"] + args + [path])
    return golden.folded_dict(out)


def model(stacks, hide=(), collapse_rules=(), focus=(), ignore=(), prune=(), skip=None,
          flatten=False, merge=False):
    """The documented semantics, one stack at a time."""
    out = {}
    for stack, n in stacks.items():
        fr = stack.split(";")
        if merge:
            m = re.match(r"^(.*-\d+)/\d+$", fr[0])
            if m:
                fr[0] = m.group(1)
        if skip is not None and skip in fr:
            fr = fr[len(fr) - 1 - fr[::-1].index(skip):]
        if any(re.search(r, f) for r in ignore for f in fr):
            continue
        if focus and not any(re.search(r, f) for r in focus for f in fr):
            continue
        res = []
        for f in fr:
            if any(re.search(r, f) for r in hide):
                continue
            rule = next((c for c in collapse_rules if re.search(c[0], f)), None)
            if rule:
                res.append(rule[1] or f)
                break
            res.append(f)
            if any(re.search(r, f) for r in prune):
                break
        if flatten:  # each function once, at its first call
            flat = []
            for f in res:
                if f not in flat:
                    flat.append(f)
            res = flat
        key = ";".join(res)
        out[key] = out.get(key, 0) + n
    return out


def same(got, want, what, base=None):
    if base is not None and got == base:
        golden.fail("%s changed nothing: the test would prove nothing" % what)
    if got == want:
        print("ok", what, "(%d stacks)" % len(got))
        return
    for k in sorted(set(got) | set(want)):
        if got.get(k) != want.get(k):
            golden.fail("%s: stack %r: got %s, expected %s" %
                        (what, k[:300], got.get(k), want.get(k)))


def pprof_cum(path):
    """{function: cum} by go tool pprof -top of ember's pprof of path;
    None when go is not installed."""
    if not shutil.which("go"):
        return None
    with tempfile.TemporaryDirectory() as d:
        pb = os.path.join(d, "p.pb.gz")
        golden.run(["convert", "--to", "pprof", path, "-o", pb])
        env = dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "cache"), GOFLAGS="-mod=mod")
        text = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=1000000",
                               "-nodefraction=0", "-unit=ns", pb], capture_output=True,
                              text=True, env=env, check=True).stdout
    cum = {}
    for line in text.splitlines():
        r = re.match(golden.pprof_row(r"^\s*(\d+)(?:ns)?\s+{p}\s+{p}\s+(\d+)(?:ns)?\s+{p}\s+(.*)$"),
                     line)
        if r:  # pprof names functions as read; folded stacks spell ';' as ':'
            cum[r.group(3).replace(";", ":")] = int(r.group(2))
    return cum


def pprof_cum_kept(path):
    flat = collapse(["--flatten-recursion"], path)
    inclusive = {}
    for stack, n in flat.items():
        fr = stack.split(";")
        if len(set(fr)) != len(fr):
            golden.fail("%s: a frame repeats after --flatten-recursion: %s" % (path, stack))
        for f in fr:
            inclusive[f] = inclusive.get(f, 0) + n
    cum = pprof_cum(path)
    if cum is None:
        print("skip: go tool pprof is not installed")
        return
    if len(cum) != len(inclusive):
        golden.fail("%s: %d functions for pprof, %d after flattening" %
                    (path, len(cum), len(inclusive)))
    for f, n in inclusive.items():
        if cum.get(f) != n:
            golden.fail("%s: %s: %s after --flatten-recursion, go tool pprof cum %s" %
                        (path, f, n, cum.get(f)))
    print("ok flatten-recursion = pprof cum on %s (%d functions)" %
          (os.path.basename(path), len(cum)))


def main():
    java = os.path.join(C, "flamegraph", "test", "perf-java-stacks-01.txt")
    iperf = os.path.join(C, "flamegraph", "test", "perf-iperf-stacks-pidtid-01.txt")
    base = collapse([], java)
    same(collapse(["--hide", "^java/", "--hide", "Interpreter"], java),
         model(base, hide=["^java/", "Interpreter"]), "hide", base)
    same(collapse(["--focus", "Interpreter"], java), model(base, focus=["Interpreter"]), "focus", base)
    same(collapse(["--ignore", "^\\[unknown\\]$"], java),
         model(base, ignore=[r"^\[unknown\]$"]), "ignore", base)
    same(collapse(["--prune-from", "^JavaThread::"], java),
         model(base, prune=["^JavaThread::"]), "prune-from", base)
    same(collapse(["--collapse", "Interpreter=[interp]", "--collapse", "^Compile"], java),
         model(base, collapse_rules=[("Interpreter", "[interp]"), ("^Compile", None)]),
         "collapse", base)
    same(collapse(["--skip-after", "start_thread"], java), model(base, skip="start_thread"),
         "skip-after", base)
    tid = collapse(["--tid"], iperf)
    same(collapse(["--tid", "--merge-threads"], iperf), model(tid, merge=True), "merge-threads", tid)
    if collapse(["--tid", "--merge-threads"], iperf) != collapse(["--pid"], iperf):
        golden.fail("--tid --merge-threads should equal --pid")
    rev = {}
    for k, v in model(base, hide=["^java/"]).items():
        key = ";".join(reversed(k.split(";")))
        rev[key] = rev.get(key, 0) + v
    same(collapse(["--reverse", "--hide", "^java/"], java), rev, "reverse (after hide)", base)
    # all at once: the fixed order, whatever the order on the command line
    same(collapse(["--flatten-recursion", "--prune-from", "^Interpreter$", "--hide", "^java/",
                   "--focus", "JavaThread", "--ignore", "GC"], java),
         model(base, hide=["^java/"], focus=["JavaThread"], ignore=["GC"],
               prune=["^Interpreter$"], flatten=True), "combined", base)

    # recursion: inferno's case (direct), and real OCaml towers (direct and mutual)
    rec = os.path.join(C, "inferno", "tests", "data", "collapse-recursive")
    want = open(os.path.join(rec, "results", "basic-collapsed.txt"), "rb").read()
    got, _, _ = golden.run(["collapse", "--flatten-recursion", os.path.join(rec, "basic.txt")])
    golden.first_difference(got.rstrip(b"\n"), want.rstrip(b"\n"), "collapse-recursive")
    print("ok inferno collapse-recursive")
    alloc = os.path.join(OCAML, "alloc-fp.perf.txt")
    plain = collapse([], alloc)
    same(collapse(["--flatten-recursion"], alloc), model(plain, flatten=True),
         "flatten-recursion on OCaml towers", plain)

    # the examples of mutual recursion, where cutting back to the
    # first visit lost r2, r1, b and c
    got, _, _ = golden.run(["collapse", "--flatten-recursion"],
                           stdin=b"main;r0;r2;r1;r0;leaf 1\na;b;c;a;b;c;a;d 2\n")
    golden.first_difference(got, b"a;b;c;d 2\nmain;r0;r2;r1;leaf 1\n", "mutual recursion")
    # the property on real profiles: after flattening, a function's
    # inclusive weight is its cumulative weight as go tool pprof -top
    # counts it, once per stack, in the original profile
    for path in (alloc, os.path.join(OCAML, "domains-fp.perf.txt"), java,
                 os.path.join(C, "flamegraph", "example-perf-stacks.txt.gz")):
        pprof_cum_kept(path)

    # --demangle: the raw symbols and perf's own demangling give one profile
    raw = collapse(["--demangle"], os.path.join(OCAML, "alloc-fp.nodemangle.perf.txt"))
    perf = collapse(["--demangle"], alloc)
    same(raw, perf, "demangle: raw OCaml symbols = perf-demangled ones")

    # the OCaml pipeline
    for name in ("alloc-fp", "alloc-dwarf", "domains-fp"):
        path = os.path.join(OCAML, name + ".perf.txt")
        g = collapse(["--demangle", "--collapse-gc", "--flatten-recursion"], path)
        stamp = re.compile(r"^[A-Z]\w*(\.\w+)*\.[a-z_]\w*_\d+$")
        for stack, n in g.items():
            fr = stack.split(";")
            bad = [f for f in fr if f.startswith("caml") and f[4:5].isupper() or
                   (stamp.match(f) and not f.split(".")[-1].startswith("fun_"))]
            if bad:
                golden.fail("%s: not demangled: %s" % (name, bad))
            if len(set(fr)) != len(fr):
                golden.fail("%s: a frame repeats after --flatten-recursion: %s" % (name, stack))
            if "[GC]" in fr and fr.index("[GC]") != len(fr) - 1:
                golden.fail("%s: [GC] has callees: %s" % (name, stack))
            if any(f in ("caml_call_gc", "caml_major_collection_slice") for f in fr):
                golden.fail("%s: GC left unfolded: %s" % (name, stack))
        gc = sum(n for s, n in g.items() if s.endswith(";[GC]") or s == "[GC]")
        if gc == 0:
            golden.fail("%s: no [GC] frame" % name)
        if name == "alloc-fp" and not any("Alloc.descend" in s for s in g):
            golden.fail("alloc-fp: no Alloc.descend frame")
        print("ok OCaml pipeline on %s: %d stacks, %.1f%% in [GC]" %
              (name, len(g), 100.0 * gc / sum(g.values())))

    # bad regexes are usage errors naming the option
    _, err, rc = golden.run(["collapse", "--hide", "a(b", java], check=False)
    if rc != 2 or "--hide" not in err or "bad regex" not in err:
        golden.fail("a bad regex: expected exit 2 and a message, got %d: %s" % (rc, err))
    _, err, rc = golden.run(["collapse", "--focus", "^no such frame$", java], check=False)
    if rc != 1 or "no stacks left" not in err:
        golden.fail("focus matching nothing: expected exit 1, got %d: %s" % (rc, err))
    print("ok errors")


if __name__ == "__main__":
    main()
