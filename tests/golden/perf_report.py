"""Golden test: ember's self shares equal `perf report --no-children --sort
sym` on a real `perf record -g` of a C++ program whose hot functions are in
an anonymous namespace (perf names them "(anonymous namespace)::f": a name
starting with "(" must never be dropped, its time given to its caller).

usage: perf_report.py CXX SOURCE WORKDIR

Skips (exit 77) when perf cannot record here.
"""
import csv
import io
import os
import re
import subprocess
import sys

import golden

SKIP = 77


def perf_report(data):
    """{symbol: self percent} for every row perf report prints."""
    out = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "sym",
                          "--stdio", "--percent-limit", "0"],
                         capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        m = re.match(r"\s+([\d.]+)%\s+\[.\]\s+(.*\S)\s*$", line)
        if m:
            rows[m.group(2)] = rows.get(m.group(2), 0.0) + float(m.group(1))
    return rows


def ember_self(script, extra):
    out, _, _ = golden.run(["report", "--top", "100000", "--csv"] + extra + [script])
    rows = {}
    for r in csv.DictReader(io.StringIO(out.decode())):
        rows[r["function"]] = float(r["self_pct"])
    return rows


def main():
    cxx, source, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    prog = os.path.join(work, "anon")
    subprocess.run([cxx, "-O2", "-g", "-fno-omit-frame-pointer", "-o", prog, source], check=True)
    data = os.path.join(work, "perf.data")
    rec = subprocess.run(["perf", "record", "-q", "-F", "4000", "-e", "cpu-clock", "-g", "-o",
                          data, prog, "4000"], capture_output=True, text=True)
    if rec.returncode != 0:
        print("SKIP: perf record failed here: " + rec.stderr.strip()[:300])
        sys.exit(SKIP)
    script = os.path.join(work, "perf.txt")
    with open(script, "w") as f:
        subprocess.run(["perf", "script", "-i", data], stdout=f, check=True)
    want = perf_report(data)
    anon = [s for s in want if s.startswith("(anonymous namespace)::")]
    if not anon or max(want[s] for s in anon) < 5:
        golden.fail("the program should spend its time in an anonymous namespace: %s" % want)
    got = ember_self(script, [])
    for sym, pct in sorted(want.items()):
        if pct < 0.5:
            continue
        if abs(got.get(sym, 0.0) - pct) > 0.006:
            golden.fail("%s: perf report gives %.2f%% self, ember %.4f%%" %
                        (sym, pct, got.get(sym, 0.0)))
    # with --inline the names come from DWARF; a function that is not
    # inlined keeps its whole self time there too
    got = ember_self(script, ["--inline"])
    for sym in anon:
        if abs(got.get(sym, 0.0) - want[sym]) > 0.006:
            golden.fail("--inline: %s: perf report gives %.2f%% self, ember %.4f%%" %
                        (sym, want[sym], got.get(sym, 0.0)))
    print("ok: %d symbols above 0.5%% match perf report" %
          sum(1 for p in want.values() if p >= 0.5))


if __name__ == "__main__":
    main()
