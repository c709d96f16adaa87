"""One percentile for every trace tool (issue 17, item 12): `trace stats`,
`trace latency` and `trace gc-stats` give the same, exact value, by nearest
rank (the pth percentile of n durations is the ceil(p/100 * n)-th smallest,
the first for p = 0), which `ember trace --help` states. Computed here from
`ember trace dump` of the corpus's OCaml runtime_events files (and of a run
of the OCaml fixture, where it runs), with exact fractions, and compared
with every number each tool prints:

- GC pauses (per domain, the outermost of major, stw_leader and
  interrupt_remote while the domain lives, from its first event where its
  start was overwritten, to the trace's end if still open; the corpus's
  rings lost words only before their first event): gc-stats' 18 percentiles, text
  and JSON, its min, max, mean; latency's classic table, every row (the
  percentile iterator's ticks, exact here), its count, mean and max, and
  its bar chart's counts per power of two;
- the spans of one name (begins and ends paired per thread as spans.h
  says): stats' p50, p90, p99 and latency --span's table.

gc-stats' first times: the wall time and the domain time (the sum of the
domains' lifetimes, which is not CPU time: a file read after the run has
no CPU time, one that ember ran has the command's, from its rusage).

Before the fix gc-stats and latency read two different HdrHistogram
buckets (p90 of one fixture run: 393.983 us and 395.263 us, exact 395.101).

usage: percentiles.py WORKDIR
"""
import collections
import decimal
import json
import math
import os
import re
import shutil
import subprocess
import sys
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402

PAUSES = ("major", "stw_leader", "interrupt_remote")
GC_PERCENTILES = ("25", "50", "60", "70", "75", "80", "85", "90", "95", "96", "97", "98", "99",
                  "99.9", "99.99", "99.999", "99.9999", "100")


def nearest_rank(sorted_values, p):
    """The pth percentile (p a Fraction, in percent) by nearest rank."""
    n = len(sorted_values)
    rank = max(1, math.ceil(p * n / 100))
    return sorted_values[min(rank, n) - 1]


def events(path):
    """(ns, tid, kind, name) of each event of `ember trace dump`."""
    out, _, _ = golden.run(["trace", "dump", path])
    for line in out.decode(errors="replace").splitlines():
        f = line.split(" ")
        yield int(decimal.Decimal(f[0]) * 1000000000), int(f[1]), f[3], f[4]


def pauses(path):
    """GC pause durations in ns, by gc-stats' rule."""
    alive, open_pause, out = {}, {}, []
    last = 0
    for ns, tid, kind, name in events(path):
        last = ns
        if tid not in alive:  # a ring whose start was overwritten lives from its first event
            alive[tid] = True
        if kind == "instant" and name in ("ring_start", "domain_spawn"):
            alive[tid] = True
        elif kind == "instant" and name in ("ring_stop", "domain_terminate") and alive.get(tid):
            alive[tid] = False
            if tid in open_pause:
                out.append(ns - open_pause.pop(tid)[1])
        elif kind in ("begin", "end") and name in PAUSES and alive.get(tid):
            if kind == "begin" and tid not in open_pause:
                open_pause[tid] = (name, ns)
            elif kind == "end" and open_pause.get(tid, ("",))[0] == name:
                out.append(ns - open_pause.pop(tid)[1])
    out += [last - at for _, at in open_pause.values()]
    return sorted(out)


def spans(path, which):
    """Durations in ns of the closed spans named which (spans.h's rule)."""
    stacks, out = collections.defaultdict(list), []
    for ns, tid, kind, name in events(path):
        st = stacks[tid]
        if kind == "begin":
            st.append((name, ns))
        elif kind == "end":
            at = [i for i, (n, _) in enumerate(st) if n == name]
            if not at:
                continue
            for n, begin in st[at[-1]:]:
                if n == which:
                    out.append(ns - begin)
            del st[at[-1]:]
    return sorted(out)


def ns_of(text, scale):
    """A printed decimal (ms: scale 10**6, us: 10**3) as integer ns."""
    return int(decimal.Decimal(text) * scale)


def check_gc_stats(path, values):
    name = os.path.basename(path)
    out, _, _ = golden.run(["trace", "gc-stats", "--json", path])
    got = json.loads(out, parse_float=decimal.Decimal)
    if got["pauses"] != len(values):
        golden.fail("%s: gc-stats counts %d pauses, the dump %d" % (name, got["pauses"], len(values)))
    for key, p in zip(got["distr_latency"], GC_PERCENTILES):
        want = nearest_rank(values, Fraction(p))
        if Fraction(key) != Fraction(p) or ns_of(got["distr_latency"][key], 10**6) != want:
            golden.fail("%s: gc-stats p%s = %s ms, exact (nearest rank) %d ns" %
                        (name, key, got["distr_latency"][key], want))
    mean = Fraction(sum(values), len(values))
    if ns_of(got["min_latency"], 10**6) != values[0] or \
            ns_of(got["max_latency"], 10**6) != values[-1] or \
            abs(Fraction(got["mean_latency"]) * 10**6 - mean) > Fraction(1, 2):
        golden.fail("%s: gc-stats min/mean/max %s %s %s, the dump %d %s %d" %
                    (name, got["min_latency"], got["mean_latency"], got["max_latency"],
                     values[0], float(mean), values[-1]))
    text, _, _ = golden.run(["trace", "gc-stats", path])
    rows = re.findall(r"^(\d+\.\d{4}) \t (\d+\.\d{6})$", text.decode(), re.M)
    if [(Fraction(p), ns_of(v, 10**6)) for p, v in rows] != \
            [(Fraction(p), nearest_rank(values, Fraction(p))) for p in GC_PERCENTILES]:
        golden.fail("%s: gc-stats' text percentiles %r" % (name, rows))
    return got


def ticks():
    """HdrHistogram's percentile iterator's ticks (5 per halving of what
    remains to 100%), exact."""
    p = Fraction(0)
    while True:
        yield p
        half = 0
        while 2 ** (half + 1) <= 100 / (100 - p):
            half += 1
        p += Fraction(100, 5 * 2 ** (half + 1))


def check_table(what, text, values):
    """The classic table's rows, by nearest rank at each tick, and its
    summary lines."""
    rows = re.findall(r"^ +(\d+\.\d{3}) +(\d\.\d{6}) +(\d+) +(\S+)$", text, re.M)
    want = []
    for p in ticks():
        v = nearest_rank(values, p)
        count = sum(1 for x in values if x <= v)
        if count == len(values):
            want.append((v, "1.000000", count))
            break
        want.append((v, "%.6f" % (p / 100), count))
    got = [(ns_of(v, 1000), p, int(c)) for v, p, c, _ in rows]
    if got != want:
        bad = next(i for i in range(max(len(got), len(want)))
                   if i >= len(got) or i >= len(want) or got[i] != want[i])
        golden.fail("%s: latency table row %d: %r, exact (nearest rank) %r" %
                    (what, bad + 1, got[bad:bad + 1], want[bad:bad + 1]))
    mean = Fraction(sum(values), len(values))
    m = re.search(r"#\[Mean += +(\S+), StdDeviation", text)
    mx = re.search(r"#\[Max += +(\S+), Total count += +(\d+)\]", text)
    if not m or abs(Fraction(m.group(1)) * 1000 - mean) > Fraction(1, 2) or not mx or \
            ns_of(mx.group(1), 1000) != values[-1] or int(mx.group(2)) != len(values):
        golden.fail("%s: latency's mean or max line:\n%s" % (what, text[-600:]))
    # the chart: counts per power of two, from the lowest to the highest
    bins = collections.Counter(max(v.bit_length() - 1, 0) for v in values)
    want = [bins[k] for k in range(min(bins), max(bins) + 1)]
    chart = [int(c) for c in re.findall(r"^ +\S+ +(\d+) \|#*$", text, re.M)]
    if chart != want:
        golden.fail("%s: the chart's counts %r, the dump's %r" % (what, chart, want))


def check_pauses(path):
    values = pauses(path)
    got = check_gc_stats(path, values)
    out, _, _ = golden.run(["trace", "latency", path])
    check_table(os.path.basename(path) + " GC pauses", out.decode(), values)
    return len(values), got


def fmt_duration(ns):
    """stats' columns, as views.c's put_duration writes them."""
    if ns < 1e3:
        return "%.0fns" % ns
    for scale, unit in ((1e6, "us"), (1e9, "ms")):
        if ns < scale:
            return "%.3f%s" % (ns / (scale / 1e3), unit)
    return "%.3fs" % (ns / 1e9)


def check_spans(path, which):
    values = spans(path, which)
    out, _, _ = golden.run(["trace", "stats", path])
    row = next((l.split() for l in out.decode().splitlines() if l.split()[0] == which), None)
    want = [fmt_duration(nearest_rank(values, Fraction(p))) for p in (50, 90, 99)]
    if not row or int(row[1]) != len(values) or row[5:8] != want:
        golden.fail("%s: stats %s: %r, exact p50 p90 p99 %r of %d" %
                    (os.path.basename(path), which, row, want, len(values)))
    out, _, _ = golden.run(["trace", "latency", path, "--span", which])
    check_table("%s span %s" % (os.path.basename(path), which), out.decode(), values)
    return len(values)


def check_help():
    out, _, _ = golden.run(["trace", "--help"])
    if "nearest rank" not in out.decode():
        golden.fail("ember trace --help does not say how percentiles are computed")


def check_times(path, got, run_by_ember):
    """Domain time, not 'CPU time', for the sum of lifetimes."""
    text, _, _ = golden.run(["trace", "gc-stats", path])
    text = text.decode()
    domain = re.search(r"^Domain time \(s\):\t(\d+\.\d{9})", text, re.M)
    cpu = re.search(r"^CPU time \(s\):\t(.*)$", text, re.M)
    if not domain or Fraction(domain.group(1)) != Fraction(got["domain_time"]) or \
            "% of domain time" not in text or not cpu or \
            (cpu.group(1).startswith("-") == run_by_ember) or \
            (got["cpu_time"] is None) == run_by_ember:
        golden.fail("gc-stats names the sum of domain lifetimes CPU time, or its CPU time is "
                    "not the command's:\n%s" % text[:400])


def check_fixture(work):
    fixture = os.path.join(golden.CORPUS, "ocaml5", "bin", "fixture")
    if not os.access(fixture, os.X_OK) or \
            subprocess.run([fixture, "-iters", "0"], capture_output=True).returncode != 0:
        print("note: the OCaml fixture %s does not run here: corpus files only" % fixture)
        return
    out = os.path.join(work, "fixture.events")
    golden.run(["trace", "record", "-o", out, "--", fixture, "-iters", "20", "-domains", "2"])
    n, got = check_pauses(out)
    check_times(out, got, False)
    js = os.path.join(work, "ran.json")
    golden.run(["trace", "gc-stats", "--json", "-o", js, "--", fixture, "-iters", "5"])
    with open(js) as f:
        ran = json.load(f, parse_float=decimal.Decimal)
    if ran["cpu_time"] is None or not 0 < ran["cpu_time"] or ran["domain_time"] <= 0:
        golden.fail("gc-stats -- CMD: no CPU time from its rusage: %r" % ran)
    print("ok: the fixture's %d GC pauses, 2 domains; gc-stats -- CMD has its CPU time %s s "
          "beside its domain time %s s" % (n, ran["cpu_time"], ran["domain_time"]))


def main():
    work = sys.argv[1]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    check_help()
    corpus = os.path.join(golden.CORPUS, "ocaml5", "runtime-events")
    for name in ("alloc", "alloc-killed", "custom", "domains", "domains-wrapped"):
        path = os.path.join(corpus, name + ".events")
        n, got = check_pauses(path)
        check_times(path, got, False)
        m = check_spans(path, "minor")
        print("ok %s: %d GC pauses and %d minor spans: every percentile exact, by nearest rank"
              % (name, n, m))
    check_fixture(work)


if __name__ == "__main__":
    main()
