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
import posixpath
import re
import shutil
import subprocess
import sys

import golden

SKIP = 77


def perf_report(data, children=False):
    """{symbol: self percent} for every row perf report prints (children:
    {symbol: children percent} of perf report --children)."""
    out = subprocess.run(["perf", "report", "-i", data, "--children" if children else
                          "--no-children", "--sort", "sym", "--stdio", "--percent-limit", "0"],
                         capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        m = re.match(r"\s+([\d.]+)%\s+(?:[\d.]+%\s+)?\[.\]\s+(.*\S)\s*$", line)
        if m:
            rows[m.group(2)] = rows.get(m.group(2), 0.0) + float(m.group(1))
    return rows


def ember_self(script, extra, column="self_pct"):
    out, _, _ = golden.run(["report", "--top", "100000", "--csv"] + extra + [script])
    rows = {}
    for r in csv.DictReader(io.StringIO(out.decode())):
        rows[r["function"]] = float(r[column])
    return rows


def script_periods(script):
    """{event: sum of periods} of a perf script text (-F default)."""
    sums = {}
    for line in open(script, errors="replace"):
        m = re.match(r"\s*\S.*?\s\d+\.\d+:\s+(\d+)\s+(\S+?):", line)
        if m:
            ev = m.group(2).split(":")[0]
            sums[ev] = sums.get(ev, 0) + int(m.group(1))
    return sums


def record(prog, data, extra):
    rec = subprocess.run(["perf", "record", "-q", "-F", "4000"] + extra + ["-o", data, prog,
                                                                            "4000"],
                         capture_output=True, text=True)
    if rec.returncode != 0:
        print("SKIP: perf record failed here: " + rec.stderr.strip()[:300])
        sys.exit(SKIP)
    script = data + ".txt"
    with open(script, "w") as f:
        subprocess.run(["perf", "script", "-i", data], stdout=f, check=True)
    return script


def compare(data, script, extra, what):
    want = perf_report(data)
    got = ember_self(script, extra)
    for sym, pct in sorted(want.items()):
        if pct >= 0.5 and abs(got.get(sym, 0.0) - pct) > 0.006:
            golden.fail("%s: %s: perf report gives %.2f%% self, ember %.4f%%" %
                        (what, sym, pct, got.get(sym, 0.0)))
    return want


def cum_matches(data, prog):
    """report --cum ranks as perf report --children does: each symbol's
    total share is perf's children share; the process (perf's comm, ember's
    root frame) is no symbol, nor is [unknown], which stands for every
    address perf could not name (perf ranks each address apart)."""
    want = perf_report(data, children=True)
    got = ember_self(data, ["--cum"], "total_pct")
    out, _, _ = golden.run(["report", "--cum", "--top", "0", "--csv", data])
    order = [float(r["total_pct"]) for r in csv.DictReader(io.StringIO(out.decode()))]
    for sym, pct in sorted(want.items()):
        if pct >= 0.5 and abs(got.get(sym, 0.0) - pct) > 0.006:
            golden.fail("--cum: %s: perf report --children gives %.2f%%, ember %.4f%%" %
                        (sym, pct, got.get(sym, 0.0)))
    if os.path.basename(prog) in got or "[unknown]" in got or order != sorted(order, reverse=True):
        golden.fail("--cum ranks the process or [unknown], or is not by total: %s" %
                    sorted(got.items(), key=lambda kv: -kv[1])[:5])
    print("ok: --cum: %d symbols above 0.5%% have perf report --children's share"
          % sum(1 for p in want.values() if p >= 0.5))


def srclines_match(data):
    """report --lines of perf.data (lines from DWARF, without --inline) has
    perf report --sort srcline's self shares, line by line: perf names a
    line by its file's base name."""
    out = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "srcline",
                          "--stdio", "--percent-limit", "0"],
                         capture_output=True, text=True, check=True).stdout
    want = {m.group(2): float(m.group(1)) for m in
            re.finditer(r"^\s+([\d.]+)%\s+(\S+\.\w+:\d+)\s*$", out, re.M)}
    got = {}
    for name, pct in ember_self(data, ["--lines"]).items():
        m = re.search(r" (\S+):(\d+)$", name)
        if m:
            key = "%s:%s" % (os.path.basename(m.group(1)), m.group(2))
            got[key] = got.get(key, 0.0) + pct
    placed = [k for k, p in want.items() if p >= 0.5]
    if not placed or any(abs(got.get(k, 0.0) - want[k]) > 0.006 for k in placed):
        golden.fail("report --lines of perf.data and perf report --sort srcline differ: %s" %
                    [(k, want[k], got.get(k)) for k in placed])
    print("ok: report --lines of perf.data: %d lines above 0.5%% have perf's srcline shares" %
          len(placed))


def total(script, extra=()):
    out, _, _ = golden.run(["convert", "--to", "csv"] + list(extra) + [script])
    return sum(int(line.rpartition(b",")[2]) for line in out.splitlines()[1:])


def addresses_kept(script, prog, work):
    """convert --to pprof of perf script keeps each frame's address and
    module: the pprof's locations are perf's addresses, in mappings named by
    perf's modules, and go tool pprof keeps ember's names (not its own)."""
    pb = os.path.join(work, "addr.pb.gz")
    golden.run(["convert", "--to", "pprof", script, "-o", pb])
    env = dict(os.environ, HOME=work, GOCACHE=os.path.join(work, "gocache"))
    raw = subprocess.run(["go", "tool", "pprof", "-raw", pb], capture_output=True, text=True,
                         env=env, check=True).stdout
    # (frames perf knew no module for are in no mapping: no M=)
    got = set(int(a, 16) for a in re.findall(r"^\s*\d+: (0x[0-9a-f]+) ", raw, re.M))
    want = set(int(a, 16) for a in re.findall(r"^\s+([0-9a-f]+) \S", open(script).read(), re.M))
    if not want or not want <= got | {0}:
        golden.fail("pprof locations should be perf's addresses: %d of %d missing" %
                    (len(want - got), len(want)))
    maps = raw.split("Mappings\n", 1)[1]
    if prog not in maps or "[kernel.kallsyms]" not in maps:
        golden.fail("pprof mappings should name perf's modules:\n" + maps)
    top = subprocess.run(["go", "tool", "pprof", "-top", pb], capture_output=True, text=True,
                         env=env, check=True).stdout
    if "(anonymous namespace)::sum_squares" not in top:
        golden.fail("go tool pprof should keep ember's names:\n" + top[:800])
    print("ok: %d addresses of perf script are pprof locations" % len(want))


def clean_place(name):
    """"function file:line" with its file cleaned as Go's path.Clean does."""
    m = re.match(r"^(.* )(\S+)(:\d+)$", name)
    return m.group(1) + posixpath.normpath(m.group(2)) + m.group(3) if m else name


def lines_match(script, opts, work, prog):
    pb = os.path.join(work, "lines.pb.gz")
    golden.run(["convert", "--to", "pprof"] + opts + [script, "-o", pb])
    env = dict(os.environ, HOME=work, GOCACHE=os.path.join(work, "gocache"))
    text = subprocess.run(["go", "tool", "pprof", "-top", "-lines", "-nodecount=1000000",
                           "-nodefraction=0", "-unit=ns", pb], capture_output=True, text=True,
                          env=env, check=True).stdout
    want = {}
    for line in text.splitlines():
        r = re.match(golden.pprof_row(r"^\s*(\d+)(?:ns)?\s+{p}\s+{p}\s+(\d+)(?:ns)?\s+{p}\s+(.*?)"
                                      r"( \(inline\))?$"), line)
        if r:
            want[r.group(3)] = (int(r.group(1)), int(r.group(2)))
    # pprof has no processes: ember's export makes the root a function,
    # which ember's report does not rank
    want.pop(os.path.basename(prog), None)
    out, _, _ = golden.run(["report", "--lines", "--top", "0", "--csv"] + opts + [script])
    # pprof cleans paths ("./elf/x.c" is "elf/x.c", "a/../a/x.S" is "a/x.S");
    # ember shows them as DWARF says
    got = {clean_place(r["function"]): (int(r["self"]), int(r["total"]))
           for r in csv.DictReader(io.StringIO(out.decode()))}
    placed = [k for k in got if re.search(r" \S+:\d+$", k)]
    if not placed or got != want:
        golden.fail("report --lines " + " ".join(opts) + " and go tool pprof -top -lines of its pprof differ "
                    "(%d lines with a place): %r" % (len(placed),
                                                     sorted(set(got.items()) ^ set(want.items()))[:6]))
    print("ok: %s: %d rows of go tool pprof -top -lines (%d with file:line) are ember report --lines"
          % (" ".join(opts), len(want), len(placed)))


def main():
    cxx, source, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    prog = os.path.join(work, "anon")
    subprocess.run([cxx, "-O2", "-g", "-fno-omit-frame-pointer", "-o", prog, source], check=True)
    data = os.path.join(work, "perf.data")
    script = record(prog, data, ["-e", "cpu-clock", "-g"])
    want = compare(data, script, [], "-g")
    cum_matches(data, prog)
    srclines_match(data)
    anon = [s for s in want if s.startswith("(anonymous namespace)::")]
    if not anon or max(want[s] for s in anon) < 5:
        golden.fail("the program should spend its time in an anonymous namespace: %s" % want)
    # with --inline the names come from DWARF; a function that is not
    # inlined keeps its whole subtree (its self time now shared with the
    # std:: calls inlined into it)
    plain = ember_self(script, [], "total_pct")
    got = ember_self(script, ["--inline"], "total_pct")
    for sym in anon:
        if abs(got.get(sym, 0.0) - plain[sym]) > 0.0001:
            golden.fail("--inline: %s: %.4f%% total, %.4f%% without --inline" %
                        (sym, got.get(sym, 0.0), plain[sym]))
    # without -g every sample is one line ("comm pid time: period event: pc
    # sym (mod)"): weighed by its period like a sample with a call chain,
    # so both recordings are in one unit and can be merged or diffed
    flat = os.path.join(work, "flat.data")
    flat_script = record(prog, flat, ["-e", "cpu-clock"])
    compare(flat, flat_script, [], "no -g")
    for s_, what in ((script, "-g"), (flat_script, "no -g")):
        want_total = script_periods(s_)["cpu-clock"]
        if total(s_) != want_total:
            golden.fail("%s: ember's total %d is not the sum of the periods %d" %
                        (what, total(s_), want_total))
    # perf script -F+srcline: frames know their file and line; the pprof
    # export carries them, and go tool pprof -top -lines is ember report
    # --lines, row for row
    if shutil.which("go"):
        srcline = os.path.join(work, "srcline.txt")
        with open(srcline, "w") as f:
            subprocess.run(["perf", "script", "-F+srcline", "-i", data], stdout=f,
                           stderr=subprocess.DEVNULL, check=True)
        lines_match(srcline, ["--srcline"], work, prog)
        addresses_kept(script, prog, work)
        # --inline: ember's own DWARF reading gives the lines (and chains)
        lines_match(script, ["--inline"], work, prog)
    # two events without -g: only the first is kept, as with call chains
    two = os.path.join(work, "two.data")
    two_script = record(prog, two, ["-e", "cpu-clock", "-e", "task-clock"])
    periods = script_periods(two_script)
    first = open(two_script).readline().split()[4].split(":")[0]
    if total(two_script) != periods[first]:
        golden.fail("two events without -g: ember's total %d is not %s's periods %d (all: %s)" %
                    (total(two_script), first, periods[first], periods))
    print("ok: %d symbols above 0.5%% match perf report" %
          sum(1 for p in want.values() if p >= 0.5))


if __name__ == "__main__":
    main()
