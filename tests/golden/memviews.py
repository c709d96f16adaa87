"""Memory profiles as ember shows them (issue 19, the views), on heap
profiles that a Go program writes with runtime/pprof (memviews.go: every
allocation sampled, known sites), checked against go tool pprof:

- `ember report --event T` is `go tool pprof -sample_index=T -top` for each
  of Go's four values: per function the same flat and cum (self, total),
  exactly in --csv, and in the text table once pprof's bytes are spelled
  as ember spells them; the objects (or bytes) columns beside them are
  pprof's numbers for the partner value (alloc_space with alloc_objects,
  inuse_space with inuse_objects). The same holds for ember's pprof export
  of the profile (`ember convert --to pprof`): its sample types work with
  -sample_index, its default is Go's (inuse_space).
  Formatting differences, by design: pprof writes bytes in its own units
  ("20800kB", 1024-based) where ember writes "20.31 MiB" (two decimals at
  most, in the largest unit where the value is at least 1); pprof marks
  inlined functions "(inline)", which ember does not; rows with equal flat
  weights may come in another order.
- the flame graph: FlameGraph's memory palette (green background) and the
  title "Memory Flame Graph: VALUE" by default, bytes in the tooltips;
  --colors, --title and --countname (flamegraph.pl's "N bytes") win.
- `ember diff` of two heap profiles: the tooltips and the folded lines in
  bytes.
- --from/--to: refused, with the reason, for inputs without times (pprof),
  no output written; bad times and empty windows are usage errors.
- convert --to perfetto of a profile without counters says why not.

ember's own heap recordings get the same comparison in heap_views.py.

usage: memviews.py WORKDIR
"""
import csv
import io
import os
import re

import golden

case, main = golden.cases()
HERE = os.path.dirname(os.path.abspath(__file__))
TYPES = ("alloc_objects", "alloc_space", "inuse_objects", "inuse_space")
PARTNER = {"alloc_objects": "alloc_space", "alloc_space": "alloc_objects",
           "inuse_objects": "inuse_space", "inuse_space": "inuse_objects"}
_profiles = {}


def heap_profile(d, scale=1):
    """memviews.go's heap profile with its large blocks scaled, made once."""
    if scale not in _profiles:
        work = os.path.join(os.path.dirname(d), "go")
        os.makedirs(work, exist_ok=True)
        env = {"GOCACHE": os.path.join(work, "gocache"), "GOPATH": os.path.join(work, "gopath"),
               "GO111MODULE": "off", "GOFLAGS": ""}
        out = os.path.join(work, "heap%d.pb.gz" % scale)
        golden.go(["run", os.path.join(HERE, "memviews.go"), out, str(scale)], work, env)
        _profiles[scale] = out
    return _profiles[scale]


def readable(v, unit):
    """A number as ember_unit_format writes it: bytes in B, KiB, MiB...
    with at most two decimals; counts as they are."""
    if unit != "bytes":
        return str(v)
    for name, f in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= f:
            return ("%.2f" % (v / f)).rstrip("0").rstrip(".") + " " + name
    return "%d B" % v


def unit_of(t):
    return "bytes" if t.endswith("_space") else "count"


def pprof_top(path, t, d):
    """go tool pprof -top of sample type t: ({function: (flat, cum)}, total,
    the Type line), every node, bytes as B."""
    args = ["tool", "pprof", "-sample_index=" + t, "-top", "-nodecount=1000000",
            "-nodefraction=0", "-edgefraction=0"]
    text = golden.go(args + (["-unit=B"] if unit_of(t) == "bytes" else []) + [path], d)
    m = re.search(r"^Showing nodes accounting for (\d+)B?, 100% of (\d+)B? total$", text, re.M)
    typ = re.search(r"^Type: (\S+)$", text, re.M)
    if not m or not typ:
        golden.fail("go tool pprof -top -sample_index=%s: no totals:\n%s" % (t, text[:1500]))
    rows = {}
    for line in text.splitlines():
        r = re.match(golden.pprof_row(r"^\s*(\d+)B?\s+{p}\s+{p}\s+(\d+)B?\s+{p}\s+(.*?)"
                                      r"( \((?:partial-)?inline\))?$"), line)
        if r:
            rows[r.group(3)] = (int(r.group(1)), int(r.group(2)))
    return rows, int(m.group(2)), typ.group(1)


def ember_csv(path, t):
    """ember report --event t --csv: {function: (self, total, self2, total2)}
    and the header row."""
    out, _, _ = golden.run(["report", "--event", t, "--csv", path])
    rows = list(csv.reader(io.StringIO(out.decode())))
    return {r[0]: tuple(int(x) for x in (r[1], r[3]) + tuple(r[5:])) for r in rows[1:]}, rows[0]


def check_text(path, t, top, partner, total, d):
    """The text table: its header's totals, and each row's self and total
    (spelled as ember spells them) and objects, against pprof's numbers."""
    out, _, _ = golden.run(["report", "--event", t, "--top", "0", path])
    # a recording's counters say their peaks first ("peak heap 6.01 MiB at 0.012 s")
    lines = [l for l in out.decode().splitlines() if not l.startswith(("peak ", "("))]
    p_total = sum(v[0] for v in partner.values())
    word = "of " if unit_of(PARTNER[t]) == "bytes" else ""
    head = "total %s%s %s (%s %s%s)" % (readable(total, unit_of(t)),
                                       " of" if unit_of(t) == "bytes" else "", t,
                                       readable(p_total, unit_of(PARTNER[t])), word, PARTNER[t])
    if head not in lines[0]:
        golden.fail("report --event %s: the header should say %r:\n%s" % (t, head, lines[0]))
    seen = 0
    for line in lines[2:]:
        cells = re.split(r"\s{2,}|(?<=%) | (?=[\d.]+%)", line.strip())
        name = line[line.rindex("  ") + 2:]
        want = top.get(name, (0, 0))
        pw = partner.get(name, (0, 0))
        expect = [readable(want[0], unit_of(t)), readable(want[1], unit_of(t)),
                  readable(pw[0], unit_of(PARTNER[t])), readable(pw[1], unit_of(PARTNER[t]))]
        got = [cells[0], cells[3], cells[5], cells[6]]
        if got != expect:
            golden.fail("report --event %s, %s: %r, pprof says %r\n%s" % (t, name, got, expect, line))
        seen += 1
    return seen


def compare(path, d, what, pprof_path=None):
    """ember report of path against go tool pprof -top of pprof_path (path
    itself when None: a pprof file; else ember's pprof export of it)."""
    for t in TYPES:
        top, total, typ = pprof_top(pprof_path or path, t, d)
        partner, _, _ = pprof_top(pprof_path or path, PARTNER[t], d)
        got, head = ember_csv(path, t)
        word = "bytes" if unit_of(PARTNER[t]) == "bytes" else "objects"
        if head[5:] != ["self_" + word, "total_" + word] or typ != t:
            golden.fail("%s %s: columns %r, pprof's Type %s" % (what, t, head, typ))
        want = {f: top.get(f, (0, 0)) + partner.get(f, (0, 0)) for f in set(top) | set(partner)}
        want = {f: v for f, v in want.items() if any(v)}
        if got != want:
            diff = sorted(set(got.items()) ^ set(want.items()))[:8]
            golden.fail("%s: ember report --event %s and go tool pprof -top differ: %r" %
                        (what, t, diff))
        if sum(v[0] for v in got.values()) != total:
            golden.fail("%s %s: the total should be pprof's %d" % (what, t, total))
        rows = check_text(path, t, top, partner, total, d)
        big = max(top.items(), key=lambda kv: kv[1][0])
        print("  %s %s: %d functions as pprof (%d text rows), total %s, top %s %s" %
              (what, t, len(got), rows, readable(total, unit_of(t)), big[0],
               readable(big[1][0], unit_of(t))))


@case
def report_is_pprof_top(d):
    """ember report --event T equals go tool pprof -sample_index=T -top, on
    Go's heap profile and on ember's pprof export of it."""
    heap = heap_profile(d)
    compare(heap, d, "go heap")
    export = os.path.join(d, "export.pb.gz")
    golden.run(["convert", "--to", "pprof", heap, "-o", export])
    if pprof_top(export, "inuse_space", d)[2] != "inuse_space":
        golden.fail("the export's default sample type should stay inuse_space")
    text = golden.go(["tool", "pprof", "-top", export], d)
    if "Type: inuse_space" not in text:
        golden.fail("go tool pprof -top of the export should show inuse_space:\n" + text[:500])
    compare(export, d, "ember's pprof export")
    # a heap profile whose smallest row is under 0.0001% of alloc_space,
    # which pprof prints "7.1e-05%" (CI met one: golden.pprof_row)
    compare(os.path.join(HERE, "data", "go-heap-tiny-row.pb.gz"), d, "a tiny row")


@case
def flame_memory(d):
    """The flame graph of a heap profile: mem palette, a title naming the
    value, bytes as bytes; the options that say otherwise win."""
    heap = heap_profile(d)
    top, total, _ = pprof_top(heap, "inuse_space", d)
    large = top["main.holdLarge"][0]
    svg = golden.run(["flamegraph", heap])[0].decode()
    pct = "%.2f" % (100.0 * large / total)
    for want in (">Memory Flame Graph: inuse_space</text>", 'stop-color="#eef2ee"',
                 'stop-color="#e0ffe0"',
                 "<title>main.holdLarge (%s, %s%%" % (readable(large, "bytes"), pct),
                 "<title>all (%s, 100%%)</title>" % readable(total, "bytes")):
        if want not in svg:
            golden.fail("flamegraph of a heap profile: no %r" % want)
    svg = golden.run(["flamegraph", "--colors", "hot", "--countname", "bytes", heap])[0].decode()
    if 'stop-color="#eeeeb0"' not in svg or "#eef2ee" in svg:
        golden.fail("--colors hot should give flamegraph.pl's yellow background")
    if "<title>main.holdLarge (%s bytes, %s%%" % ("{:,}".format(large), pct) not in svg:
        golden.fail("--countname bytes should count bytes as flamegraph.pl does")
    svg = golden.run(["flamegraph", "--event", "alloc_objects", "--title", "T", heap])[0].decode()
    if ">T</text>" not in svg or "Memory Flame Graph" in svg or "#eef2ee" not in svg:
        golden.fail("--title should win; alloc_objects is still drawn with the mem palette")
    print("  flame graph: mem palette, holdLarge %s (%s%%)" % (readable(large, "bytes"), pct))


@case
def diff_memory(d):
    """ember diff of two heap profiles: sizes in bytes in the tooltips and
    the folded lines, the graph sized by AFTER."""
    a, b = heap_profile(d, 1), heap_profile(d, 2)
    before = ember_csv(a, "inuse_space")[0]["main.holdLarge"][0]
    after = ember_csv(b, "inuse_space")[0]["main.holdLarge"][0]
    if after <= before:
        golden.fail("the second profile's large blocks should be larger: %d, %d" % (before, after))
    svg = golden.run(["diff", a, b])[0].decode()
    if ">Differential Memory Flame Graph: inuse_space</text>" not in svg:
        golden.fail("diff of heap profiles: the title should say memory and the value")
    if not re.search(r"<title>main\.holdLarge \(%s, [\d.]+%%; \+[\d.]+%%\)" %
                     re.escape(readable(after, "bytes")), svg):
        golden.fail("diff: main.holdLarge's tooltip should say %s and its growth" %
                    readable(after, "bytes"))
    folded = golden.run(["diff", "--folded", a, b])[0].decode()
    line = [x for x in folded.splitlines() if x.startswith("runtime.main;main.main;main.outer;"
                                                          "main.holdLarge ")]
    if line != ["runtime.main;main.main;main.outer;main.holdLarge %d %d" % (before, after)]:
        golden.fail("diff --folded: holdLarge should go from %d to %d B: %r" % (before, after, line))
    print("  diff: main.holdLarge %s -> %s" % (readable(before, "bytes"), readable(after, "bytes")))


@case
def window_options(d):
    """--from/--to on inputs without times: the reason, exit 1, no output;
    bad times and empty windows: usage errors (2)."""
    heap = heap_profile(d)
    out = os.path.join(d, "out.svg")
    cases = [
        (["flamegraph", "--from", "1.5", heap, "-o", out], 1,
         heap + ": --from/--to: pprof input has no times to cut a window from"),
        (["report", "--to", "250ms", heap, "-o", out], 1, "pprof input has no times"),
        (["collapse", "--from", "100us", heap], 1, "pprof input has no times"),
        (["diff", "--to", "10ns", heap, heap, "-o", out], 1, "pprof input has no times"),
        (["convert", "--to", "folded", "--until", "2s", heap, "-o", out], 1,
         "pprof input has no times"),
        (["report", "--from", "1.5x", heap], 2,
         "--from expects a time from the recording's start, in seconds (1.5) or with its unit"),
        (["report", "--from", "0.0000000001", heap], 2, "not '0.0000000001'"),
        (["report", "--from", "2s", "--to", "1500ms", heap], 2,
         "--from 2 s is not before --to 1.5 s: the window would be empty"),
        (["report", "--from", "1.5", "--to", "1500000us", heap], 2,
         "--from 1.5 s is not before --to 1.5 s"),
        (["report", "--from", "0.000000007", "--to", "7ns", heap], 2,
         "--from 7e-09 s is not before --to 7e-09 s"),
        (["report", "--from", "18446744073.709551616", heap], 2, "--from expects a time"),
        (["flamegraph", "--to", "0", heap], 2, "--to 0: the window would end where"),
        (["convert", "--to", "perfetto", heap, "-o", out], 1,
         "--to perfetto draws a perf.data recording on its time axis, or a memory profile's "
         "heap over time: " + heap + " is neither"),
    ]
    for args, rc, msg in cases:
        got_out, err, got_rc = golden.run(args, check=False)
        if got_rc != rc or msg not in err or got_out or os.path.exists(out):
            golden.fail("ember %s: exit %d (want %d), output %d bytes, stderr %r (want %r)" %
                        (" ".join(args), got_rc, rc, len(got_out), err, msg))
    helptext = golden.run(["flamegraph", "--help"])[0].decode()
    if "only the allocations made from TIME on; in use (inuse_*, live_*)" not in helptext:
        golden.fail("flamegraph --help should say what --from means for memory profiles")
    if "--until TIME" not in golden.run(["convert", "--help"])[0].decode():
        golden.fail("convert --help should offer --until (its --to is the output format)")
    print("  --from/--to: %d refusals as expected" % len(cases))


if __name__ == "__main__":
    main()
