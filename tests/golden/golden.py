"""Helpers shared by the golden tests: run ember, compare with expected
files, and report the first line that differs."""
import collections
import os
import re
import shutil
import subprocess
import sys

EMBER = os.environ.get("EMBER", "ember")
CORPUS = os.environ.get(
    "EMBER_CORPUS",
    os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "corpus"))


def run(args, stdin=None, check=True):
    """Runs ember with args; returns (stdout bytes, stderr text, exit code)."""
    p = subprocess.run([EMBER] + args, input=stdin, capture_output=True)
    if check and p.returncode != 0:
        fail("ember %s exited %d:\n%s" % (" ".join(args), p.returncode,
                                           p.stderr.decode(errors="replace")))
    return p.stdout, p.stderr.decode(errors="replace"), p.returncode


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def first_difference(got, want, what):
    """Fails naming the first differing line of two byte strings."""
    if got == want:
        return
    g, w = got.split(b"\n"), want.split(b"\n")
    for i in range(max(len(g), len(w))):
        gl = g[i] if i < len(g) else b"<end of output>"
        wl = w[i] if i < len(w) else b"<end of file>"
        if gl != wl:
            fail("%s: line %d differs\n  got:      %s\n  expected: %s" %
                 (what, i + 1, gl.decode(errors="replace")[:400],
                  wl.decode(errors="replace")[:400]))
    fail("%s: outputs differ" % what)


def folded_dict(data):
    """Folded lines as {stack: count}."""
    out = {}
    for line in data.decode(errors="surrogateescape").splitlines():
        stack, _, count = line.rpartition(" ")
        out[stack] = out.get(stack, 0) + float(count)
    return out


# A control character: a byte below 0x20, DEL, U+0080..U+009F in UTF-8.
CONTROL = re.compile(rb"[\x00-\x1f\x7f]|\xc2[\x80-\x9f]")


def pprof_row(pattern):
    """A regular expression for a row of go tool pprof -top, with each {p}
    in pattern a percentage as pprof prints it: "%5.2g%%" below 1%, so a
    row under 0.0001% of the total reads "7.1e-05%" (which rows are that
    small depends on the total: Go's heap profiles vary run to run)."""
    return pattern.replace("{p}", r"[\d.]+(?:e[-+]?\d+)?%")


def spell_controls(name):
    """A name's control characters as ember's folded view spells them:
    each byte as \\xNN (names in folded stacks, reports, the SVG)."""
    return CONTROL.sub(lambda m: b"".join(b"\\x%02x" % c for c in m.group(0)), name)


def cases():
    """A registry of test cases: a decorator that records each function,
    and main(), which runs each in its own directory under argv[1] (only
    those named in GOLDEN_CASES=a,b when it is set)."""
    registered = []

    def case(fn):
        registered.append(fn)
        return fn

    def main():
        d = sys.argv[1]
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        only = os.environ.get("GOLDEN_CASES", "").split(",")
        for fn in registered:
            if only != [""] and fn.__name__ not in only:
                continue
            sub = os.path.join(d, fn.__name__)
            os.makedirs(sub, exist_ok=True)
            fn(sub)
            print("ok", fn.__name__)

    return case, main


def go(args, cwd, env=None):
    """Runs the go tool; returns stdout text."""
    p = subprocess.run(["go"] + args, cwd=cwd, capture_output=True, timeout=300,
                       env={**os.environ, **(env or {})})
    if p.returncode != 0:
        fail("go %s exited %d:\n%s" % (" ".join(args), p.returncode,
                                               p.stderr.decode(errors="replace")))
    return p.stdout.decode(errors="surrogateescape")


def go_raw(path, cwd):
    """`go tool pprof -raw`: {sample type: {stack: value}} with stacks as
    ';'-joined names, root first; a Location's lines are innermost first."""
    text = go(["tool", "pprof", "-raw", path], cwd)
    lines = text.split("\n")
    types = lines[lines.index("Samples:") + 1].split()
    samples, locs, cur = [], {}, None
    section = "head"
    for line in lines[lines.index("Samples:") + 2:]:
        if line in ("Locations", "Mappings"):
            section = line
            continue
        if section == "head":
            m = re.match(r"^\s*(-?\d+(?:\s+-?\d+)*):((?: \d+)*) ?$", line)
            if m:
                samples.append(([int(v) for v in m.group(1).split()],
                                [int(v) for v in m.group(2).split()]))
        elif section == "Locations":
            # "s=LINE(SYSTEM NAME)" when the system name differs
            m = re.match(r"^\s*(\d+): 0x[0-9a-f]+(?: M=\d+)?(?: (.*) \S*:-?\d+ s=-?\d+(?:\(.*\))?)?$",
                         line)
            if m:
                cur = locs[int(m.group(1))] = [m.group(2)] if m.group(2) else []
                continue
            m = re.match(r"^\s+(.*) \S*:-?\d+ s=-?\d+(?:\(.*\))?$", line)
            if m and cur is not None:
                cur.append(m.group(1))
    out = {t.split("/")[0]: collections.Counter() for t in types}
    for values, ids in samples:
        frames = []
        for i in reversed(ids):
            frames.extend(reversed(locs[i]))
        for t, v in zip(types, values):
            if v:
                out[t.split("/")[0]][";".join(frames)] += v
    return out
