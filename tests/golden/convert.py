"""ember's pprof reader and its writers (`ember convert`), checked by real
clients and by round trips:

- the pprof reader against speedscope's snapshot of simple.prof, and against
  `go tool pprof -raw` on CPU and heap profiles that a Go program writes
  with runtime/pprof (every sample type, inline chains);
- `go tool pprof -top` on ember's pprof output of a real profile: every
  function's flat and cum, and the total, as computed here from ember's
  folded output;
- round trips that must be lossless: folded -> pprof -> folded,
  folded -> speedscope -> folded (rebuilt here from the JSON, and read back
  by ember when it has a speedscope reader), folded -> csv/tsv (read by
  Python's csv module), folded -> chrome (stacks rebuilt from the X events),
  on several corpus inputs: fractional weights, spaces, invalid UTF-8, deep;
- the command line: --to checked, pprof refused on a terminal.

usage: convert.py WORKDIR
"""
import collections
import csv
import decimal
import gzip
import io
import json
import os
import pty
import random
import re
import subprocess

import golden
import speedscope_chrome

case, main = golden.cases()
SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def corpus(*parts):
    return os.path.join(golden.CORPUS, *parts)


def folded_lines(data):
    """Folded output as {stack: weight text}, stack as bytes."""
    out = {}
    for line in data.split(b"\n"):
        if line:
            stack, _, count = line.rpartition(b" ")
            out[stack] = count.decode()
    return out


def collapse(path, *args):
    return golden.run(["collapse"] + list(args) + [path])[0]


# ---- the pprof reader ------------------------------------------------------

@case
def reader_speedscope_snapshot(d):
    """simple.prof (a Go CPU profile) has the stacks speedscope's importer
    finds (its test snapshot, in ms), and the same in samples."""
    prof = corpus("speedscope", "sample", "profiles", "pprof", "simple.prof")
    snap = open(corpus("speedscope", "src", "import", "__snapshots__", "pprof.test.ts.snap")).read()
    block = snap[snap.index('"stacks": ['):]
    want = {}
    for stack, ms in re.findall(r'^\s+"(.*) ([\d.]+)ms",$', block[:block.index("]")], re.M):
        want[stack.encode()] = str(int(decimal.Decimal(ms) * 1000000))
    got = folded_lines(collapse(prof))
    if got != want or len(want) != 9:
        golden.fail("simple.prof: stacks differ from speedscope's snapshot:\n got %r\nwant %r" %
                    (got, want))
    samples = folded_lines(collapse(prof, "--sample-type", "samples"))
    if {k: str(int(v) // 10000000) for k, v in want.items()} != samples:
        golden.fail("simple.prof --sample-type samples: %r" % samples)
    _, err, rc = golden.run(["collapse", "--sample-type", "wall", prof], check=False)
    if rc != 1 or "no sample type 'wall'" not in err or "samples/count, cpu/nanoseconds" not in err:
        golden.fail("an unknown --sample-type should list the profile's types: %d %s" % (rc, err))


def go_profiles(d):
    """(cpu, heap): data/goprof.go's CPU and heap profiles (runtime/pprof),
    made in d by go run."""
    src = os.path.join(os.path.dirname(__file__), "data", "goprof.go")
    env = {"GOCACHE": os.path.join(d, "gocache"), "GOPATH": os.path.join(d, "gopath"),
           "GO111MODULE": "off", "GOFLAGS": ""}
    cpu, heap = os.path.join(d, "cpu.pb.gz"), os.path.join(d, "heap.pb.gz")
    golden.go(["run", src, cpu, heap], d, env)
    return cpu, heap


@case
def reader_go_profiles(d):
    """A Go program's CPU and heap profiles (runtime/pprof): ember reads
    the stacks and values go tool pprof -raw prints, for every sample
    type, inlined calls expanded; the default is pprof's (the last type)."""
    cpu, heap = go_profiles(d)
    for path, default, inline in ((cpu, "cpu", True), (heap, "inuse_space", False)):
        raw = golden.go_raw(path, d)
        if not any(raw.values()):
            golden.fail("%s: go tool pprof -raw shows no samples" % path)
        for t, want in raw.items():
            got = {k.decode(): int(v) for k, v in folded_lines(collapse(path, "--sample-type", t)).items()}
            if got != dict(want):
                golden.fail("%s --sample-type %s: ember and go tool pprof -raw differ:\n"
                            " ember: %r\n go:    %r" % (path, t, got, dict(want)))
        got = {k.decode(): int(v) for k, v in folded_lines(collapse(path)).items()}
        if got != dict(raw[default]):
            golden.fail("%s: ember's default sample type should be %s" % (path, default))
        if inline and not any("main.spin;main.mix" in k for k in got):
            golden.fail("%s: the inlined mix in spin should be its own frame: %r" % (path, got))


# ---- go tool pprof -top on ember's output ------------------------------------

def flat_cum(folded):
    """Per function name: (flat, cum) from folded stacks, as pprof counts
    them: flat where it is the leaf, cum once per stack it is in."""
    flat, cum = collections.Counter(), collections.Counter()
    for stack, count in folded.items():
        frames = stack.decode(errors="surrogateescape").split(";")
        flat[frames[-1]] += int(count)
        for f in set(frames):
            cum[f] += int(count)
    return flat, cum


@case
def pprof_top(d):
    """go tool pprof -top reads ember's pprof of FlameGraph's perf example:
    its total, and every function's flat and cum, are ember's."""
    src = corpus("flamegraph", "example-perf-stacks.txt.gz")
    out = os.path.join(d, "example.pb.gz")
    golden.run(["convert", "--to", "pprof", src, "-o", out])
    if open(out, "rb").read(2) != b"\x1f\x8b":
        golden.fail("pprof output should be gzipped")
    flat, cum = flat_cum(folded_lines(collapse(src)))
    total = sum(flat.values())
    # the check: go tool pprof -top agrees with `ember report --top`
    rep, _, _ = golden.run(["report", "--csv", src])
    report = {row[0]: (int(row[1]), int(row[3]))
              for row in csv.reader(io.StringIO(rep.decode(errors="surrogateescape")))
              if row[0] != "function"}
    # the processes the stacks begin with are no functions to the report;
    # pprof has no processes, and the export makes each one a function
    stacks = folded_lines(collapse(src))
    roots = {s.split(b";")[0].decode(errors="surrogateescape") for s in stacks}
    every = {f: (flat[f], cum[f]) for f in cum}
    if report != {f: v for f, v in every.items() if f not in roots}:
        golden.fail("ember report --top disagrees with the folded stacks")
    text = golden.go(["tool", "pprof", "-top", "-nodecount=1000000", "-nodefraction=0", out], d)
    m = re.search(r"Showing nodes accounting for (\d+), 100% of (\d+) total", text)
    if not m or int(m.group(2)) != total or int(m.group(1)) != total:
        golden.fail("go tool pprof -top: total should be %d:\n%s" % (total, text[:2000]))
    rows = {}
    for line in text.split("\n"):
        r = re.match(golden.pprof_row(r"^\s*(\d+)\s+{p}\s+{p}\s+(\d+)\s+{p}\s+(.*)$"), line)
        if r:  # Java's "Lfoo/Bar;.m": pprof keeps the ';' that the report spells ':'
            rows[r.group(3).replace(";", ":")] = (int(r.group(1)), int(r.group(2)))
    want = every
    if rows != want:
        diff = sorted(set(rows.items()) ^ set(want.items()))[:10]
        golden.fail("go tool pprof -top and ember report differ (%d vs %d functions): %r" %
                    (len(rows), len(want), diff))
    top = sorted(want.items(), key=lambda kv: (-kv[1][0], kv[0]))[0]
    print("  go tool pprof -top: %d functions, total %d, top %s flat %d cum %d" %
          (len(rows), total, top[0], top[1][0], top[1][1]))


@case
def spellings_at_edges(d):
    """FlameGraph's annotations are made where names are shown: perf's
    --kernel frames are "f_[k]" in folded stacks and in what --hide matches,
    but the pprof export names the function, its kind in its mapping."""
    src = os.path.join(golden.CORPUS, "ocaml5", "perf", "alloc-fp.perf.txt")
    if not os.path.exists(src):
        print("  %s is missing: skipped" % src)
        return
    folded = collapse(src, "--kernel")
    if b"entry_SYSCALL_64_after_hwframe_[k]" not in folded:
        golden.fail("collapse --kernel should annotate kernel frames")
    hidden = collapse(src, "--kernel", "--hide", r"_\[k\]$")
    if b"_[k]" in hidden or b"_[k]" not in folded:
        golden.fail("--hide should match the annotated names")
    out = os.path.join(d, "kernel.pb.gz")
    golden.run(["convert", "--kernel", "--to", "pprof", src, "-o", out])
    raw = golden.go(["tool", "pprof", "-raw", out], d)
    if "_[k]" in raw or " entry_SYSCALL_64_after_hwframe " not in raw:
        golden.fail("pprof names should be the functions' own, without _[k]:\n%s" %
                    "\n".join(l for l in raw.split("\n") if "_[k]" in l)[:2000])
    # the same from perf.data: its reader names frames as the text's does
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "seeds",
                        "perf-data", "true-fp.data")
    folded = collapse(data, "--kernel")
    out = os.path.join(d, "kernel-data.pb.gz")
    golden.run(["convert", "--kernel", "--to", "pprof", data, "-o", out])
    raw = golden.go(["tool", "pprof", "-raw", out], d)
    if b"_[k]" not in folded or "_[k]" in raw:
        golden.fail("perf.data --kernel: _[k] in folded stacks (%s), not in pprof names (%s)" %
                    (b"_[k]" in folded, "_[k]" in raw))
    print("  _[k] in folded stacks and --hide, not in pprof names (perf script and perf.data)")


@case
def semicolons_at_edges(d):
    """A ';' in a function's name (Java's "LFoo;.m", Rust's "$u3b$") is
    kept by readers: the pprof and speedscope exports name the function as
    read, and folded stacks, the SVG and what --hide matches spell it ':'
    (';' separates their frames). A pprof read back is drawn the same."""
    src = os.path.join(d, "semi.speedscope.json")
    with open(src, "w") as f:
        json.dump({"$schema": SCHEMA,
                   "shared": {"frames": [{"name": "main"}, {"name": "Lcom/Foo;.run"},
                                         {"name": "Lcom/Foo:.run"}, {"name": "leaf"}]},
                   "profiles": [{"type": "sampled", "name": "p", "unit": "none",
                                 "startValue": 0, "endValue": 6,
                                 "samples": [[0, 1, 3], [0, 1], [0, 2, 3]],
                                 "weights": [2, 1, 3]}]}, f)
    # the two spellings are one frame where names are shown, as before
    want = {b"main;Lcom/Foo:.run;leaf": "5", b"main;Lcom/Foo:.run": "1"}
    got = folded_lines(collapse(src))
    if got != want:
        golden.fail("folded stacks should spell ';' as ':': %r" % got)
    hidden = folded_lines(collapse(src, "--hide", r"^Lcom/Foo:\.run$"))
    if hidden != {b"main;leaf": "5", b"main": "1"}:
        golden.fail("--hide should match the name as folded stacks show it: %r" % hidden)
    svg, _, _ = golden.run(["flamegraph", src])
    if b"Lcom/Foo:.run" not in svg or b"Foo;" in svg:
        golden.fail("the SVG should show Lcom/Foo:.run")
    pb = os.path.join(d, "semi.pb.gz")
    golden.run(["convert", "--to", "pprof", src, "-o", pb])
    raw = golden.go(["tool", "pprof", "-raw", pb], d)
    if not re.search(r" Lcom/Foo;\.run ", raw) or not re.search(r" Lcom/Foo:\.run ", raw):
        golden.fail("pprof should name both functions as read:\n%s" % raw)
    if folded_lines(collapse(pb)) != want:
        golden.fail("the pprof read back should draw as its source: %r" %
                    folded_lines(collapse(pb)))
    doc = json.loads(golden.run(["convert", "--to", "speedscope", src])[0])
    names = {fr["name"] for fr in doc["shared"]["frames"]}
    if "Lcom/Foo;.run" not in names:
        golden.fail("speedscope should name the function as read: %r" % names)
    print("  ';' kept in pprof and speedscope names, ':' in folded stacks, the SVG and --hide")


# ---- round trips -------------------------------------------------------------

def round_trip_inputs(d):
    """(name, path) of folded inputs: corpus files and made ones."""
    frac = corpus("inferno", "tests", "data", "flamegraph", "fractional-samples")
    example = os.path.join(d, "example-perf.folded")
    with open(example, "wb") as f:
        f.write(collapse(corpus("flamegraph", "example-perf-stacks.txt.gz")))
    inputs = [("example-perf", example)]
    for name in ("fractional.txt", "with-space.txt", "tricky-stack.txt", "zero-fractionals.txt"):
        if os.path.exists(os.path.join(frac, name)):
            inputs.append((name, os.path.join(frac, name)))
    deep = os.path.join(d, "deep.folded")
    with open(deep, "wb") as f:
        f.write(b";".join(b"f%d" % (i % 97) for i in range(20000)) + b" 3\n")
        f.write(b";".join(b"f%d" % i for i in range(5000)) + b" 2\n")
    inputs.append(("deep", deep))
    odd = os.path.join(d, "odd.folded")
    with open(odd, "wb") as f:
        f.write(b'main;caf\xc3\xa9;bad\xff\xfename;\xe2\x82 3\nmain;"quoted, comma"\tand tab 2\n'
                b"main;x\x01y;new\\line 0.125\nmain 1\n")
    inputs.append(("odd-bytes", odd))
    # names that end at one depth where they begin at another, in integral
    # and fractional weights: speedscope orders such a begin before the end
    meet = os.path.join(d, "names-meet.folded")
    with open(meet, "wb") as f:
        f.write(b"main;a;q;r 2\nmain;q;a 1\nmain;r;q;a 3\nmain;r;r;q 0.5\nmain;z;z;z 0.25\n")
    inputs.append(("names-meet", meet))
    rng = random.Random(20)
    many = os.path.join(d, "names-meet-random.folded")
    with open(many, "wb") as f:
        for _ in range(3000):
            stack = [rng.choice("abcde") for _ in range(rng.randint(1, 7))]
            f.write(b"%s %s\n" % (";".join(stack).encode(), rng.choice(
                ["1", "3", "0.1", "0.2", "0.3", "0.001", "12.125"]).encode()))
    inputs.append(("names-meet-random", many))
    return inputs


def speedscope_stacks(doc):
    """Folded {stack bytes: Decimal} rebuilt from a speedscope file."""
    frames = [f["name"].encode() for f in doc["shared"]["frames"]]
    prof = doc["profiles"][0]
    out = collections.Counter()
    if prof["type"] == "sampled":
        if len(prof["samples"]) != len(prof["weights"]):
            golden.fail("speedscope: samples and weights differ in length")
        for s, w in zip(prof["samples"], prof["weights"]):
            out[b";".join(frames[i] for i in s)] += decimal.Decimal(w)
        return out
    stack, last = [], decimal.Decimal(0)
    for e in prof["events"]:
        at = decimal.Decimal(e["at"])
        if at < last:
            golden.fail("speedscope: events go back in time at %s" % at)
        if stack and at > last:
            out[b";".join(frames[i] for i in stack)] += at - last
        last = at
        if e["type"] == "O":
            stack.append(e["frame"])
        elif not stack or stack.pop() != e["frame"]:
            golden.fail("speedscope: close of a frame that is not on top: %r" % e)
    if stack:
        golden.fail("speedscope: frames left open")
    return out


def chrome_stacks(data):
    """Folded {stack bytes: Decimal} rebuilt from X events. Events come in
    the order frames open (outer first); each must end, computed as
    viewers do (ts + dur in doubles), inside its parent and not after the
    next sibling starts. A frame's self time is its duration less its
    children's."""
    exact = json.loads(data, parse_float=decimal.Decimal)["traceEvents"]
    floats = json.loads(data)["traceEvents"]
    out = collections.Counter()
    stack = []  # (end as a double, path, index)
    for e, f in zip(exact, floats):
        if e["ph"] != "X":
            continue
        end = f["ts"] + f["dur"]
        while stack and stack[-1][0] <= f["ts"]:
            stack.pop()
        if stack and end > stack[-1][0]:
            golden.fail("chrome: %r ends after its parent (%r)" % (e, stack[-1][1][-200:]))
        path = (stack[-1][1] + b";" if stack else b"") + e["name"].encode()
        dur = decimal.Decimal(e["dur"])
        out[path] += dur
        if stack:
            out[stack[-1][1]] -= dur
        stack.append((end, path))
    # dur may be a double a few ulps short of the exact decimal
    out = {k: v.quantize(decimal.Decimal("1e-9")).normalize() for k, v in out.items()}
    return collections.Counter({k: v for k, v in out.items() if v})


def replace_invalid(b):
    return b.decode("utf-8", errors="replace").encode()


def spelled(stacks):
    """JSON exports name functions as read; folded stacks spell control
    characters \\xNN: the JSON's stacks as folded ones."""
    return {golden.spell_controls(k): v for k, v in stacks.items()}


def compare(what, got, want):
    if got != want:
        keys = sorted(set(got) | set(want), key=lambda k: (got.get(k) == want.get(k), k))[:5]
        golden.fail("%s: stacks differ, e.g. %r" %
                    (what, [(k[:200], got.get(k), want.get(k)) for k in keys]))


@case
def round_trips(d):
    """Lossless: folded -> pprof -> folded byte for byte; speedscope,
    chrome, csv and tsv carry every stack with its exact weight; speedscope
    imports the chrome trace balanced (speedscope_chrome.py)."""
    for name, path in round_trip_inputs(d):
        folded = collapse(path, "--format", "folded")
        want = {k: decimal.Decimal(v) for k, v in folded_lines(folded).items()}
        pb = os.path.join(d, name + ".pb.gz")
        golden.run(["convert", "--to", "pprof", "--format", "folded", path, "-o", pb])
        golden.first_difference(collapse(pb), folded, "%s: folded -> pprof -> folded" % name)
        for flags in ([], ["--time-order"]):
            js = os.path.join(d, name + ".speedscope.json")
            golden.run(["convert", "--to", "speedscope", "--format", "folded", path, "-o", js]
                       + flags)
            doc = json.load(open(js, encoding="utf-8"))
            if doc.get("$schema") != SCHEMA or not doc.get("exporter", "").startswith("ember@"):
                golden.fail("%s: speedscope $schema/exporter: %r" % (name, doc.get("$schema")))
            exact = json.loads(open(js, "rb").read(), parse_float=decimal.Decimal)
            compare("%s: speedscope %s" % (name, flags), spelled(speedscope_stacks(exact)),
                    {replace_invalid(k): v for k, v in want.items()})
            back = golden.run(["collapse", "--format", "speedscope", js], check=False)
            if back[2] == 2 and "unknown --format" in back[1]:
                print("  note: no speedscope reader in this ember: JSON checked here only")
            elif {k: decimal.Decimal(v) for k, v in folded_lines(back[0]).items()} != \
                    {replace_invalid(k): v for k, v in want.items()}:
                golden.fail("%s: folded -> speedscope -> folded %s differs (rc %d):\n%s" %
                            (name, flags, back[2], back[1]))
        ch = os.path.join(d, name + ".chrome.json")
        golden.run(["convert", "--to", "chrome", "--format", "folded", path, "-o", ch])
        compare("%s: chrome" % name, spelled(chrome_stacks(open(ch, "rb").read())),
                {replace_invalid(k): v.normalize() for k, v in want.items()})
        warned = speedscope_chrome.warnings(json.load(open(ch, encoding="utf-8"))["traceEvents"])
        if warned:
            golden.fail("%s: speedscope would unbalance the chrome trace: %s" % (name, warned[:3]))
        for to, delim, eol in (("csv", ",", b"\r\n"), ("tsv", "\t", b"\n")):
            data = golden.run(["convert", "--to", to, "--format", "folded", path])[0]
            if not data.endswith(eol):
                golden.fail("%s: %s lines should end in %r" % (name, to, eol))
            rows = list(csv.reader(io.StringIO(data.decode("utf-8", "surrogateescape"),
                                               newline=""), delimiter=delim))
            if rows[0] != ["stack", "weight"]:
                golden.fail("%s: %s header %r" % (name, to, rows[0]))
            got = {r[0].encode("utf-8", "surrogateescape"): decimal.Decimal(r[1]) for r in rows[1:]}
            compare("%s: %s" % (name, to), got, want)
            if [r[0] for r in rows[1:]] != [k.decode("utf-8", "surrogateescape")
                                            for k in folded_lines(folded)]:
                golden.fail("%s: %s rows should be in folded order" % (name, to))
        print("  %s: %d stacks, round trips lossless" % (name, len(want)))


@case
def values_round_trip(d):
    """Samples carry every value of their input: a Go heap profile's four
    sample types survive `convert --to pprof` (go tool pprof -raw gives the
    same stacks and values for each, and the same default); perf input
    carries samples/count beside cpu/nanoseconds; --event picks the value
    shown (--sample-type is its alias), and an unknown one is an error that
    lists them."""
    cpu, heap = go_profiles(d)
    for path in (cpu, heap):
        back = path + ".ember.pb.gz"
        golden.run(["convert", "--to", "pprof", path, "-o", back])
        want, got = golden.go_raw(path, d), golden.go_raw(back, d)
        if sorted(want) != sorted(got):
            golden.fail("%s: sample types %s became %s" % (path, sorted(want), sorted(got)))
        for t in want:
            compare("%s %s" % (os.path.basename(path), t), dict(got[t]), dict(want[t]))
        # the same types in the same order, and the same default (marked
        # [dflt], else the last)
        a = golden.go(["tool", "pprof", "-raw", path], d).split("Samples:\n")[1].split("\n")[0].split()
        b = golden.go(["tool", "pprof", "-raw", back], d).split("Samples:\n")[1].split("\n")[0].split()
        dflt = lambda ts: next((t for t in ts if t.endswith("[dflt]")), ts[-1]).replace("[dflt]", "")
        plain = lambda ts: [t.replace("[dflt]", "") for t in ts]
        if plain(a) != plain(b) or dflt(a) != dflt(b):
            golden.fail("%s: sample types %r became %r" % (path, a, b))
    # perf: two values, the periods' shown
    perf = corpus("ocaml5", "perf", "alloc-fp.perf.txt")
    pb = os.path.join(d, "perf.pb.gz")
    golden.run(["convert", "--to", "pprof", perf, "-o", pb])
    head = golden.go(["tool", "pprof", "-raw", pb], d).split("Samples:\n")[1].split("\n")[0].split()
    # cpu shown: the last type, pprof's default, which needs no default_sample_type
    if head != ["samples/count", "cpu/nanoseconds"]:
        golden.fail("perf cpu-clock in pprof: sample types %r" % head)
    events = sum(1 for line in open(perf) if re.match(r"^\S.*cpu-clock:", line))
    top = golden.go(["tool", "pprof", "-top", "-sample_index=samples", pb], d)
    if "of %d total" % events not in top:
        golden.fail("pprof samples/count should count the %d samples:\n%s" % (events, top[:500]))
    # --event picks the shown value, --sample-type is the same option
    by_samples = folded_lines(collapse(perf, "--event", "samples"))
    if sum(int(v) for v in by_samples.values()) != events:
        golden.fail("collapse --event samples should count %d samples" % events)
    if folded_lines(collapse(heap, "--event", "alloc_space")) != \
            folded_lines(collapse(heap, "--sample-type", "alloc_space")):
        golden.fail("--sample-type and --event should pick the same value")
    _, err, rc = golden.run(["collapse", "--event", "nope", perf], check=False)
    if rc != 1 or "no value 'nope'" not in err or "samples, cpu" not in err:
        golden.fail("an unknown --event should list the values: %d %s" % (rc, err))
    # CSV: one column per value
    csv_text = golden.run(["convert", "--to", "csv", heap])[0].decode().splitlines()[0]
    if csv_text.split(",")[1:] != ["alloc_objects", "alloc_space", "inuse_objects",
                                   "inuse_space"]:
        golden.fail("CSV of a heap profile should have a column per value: %r" % csv_text)


def raw_normalized(path, cwd):
    """go tool pprof -raw with its ids replaced by what they stand for:
    (sample types, {locations leaf first: values summed}, mappings), a
    location being (address, mapping, ((function, file:line), ...)).
    Samples of one stack are summed: they differ only by labels (a heap
    profile's allocation sizes), which ember does not keep."""
    text = golden.go(["tool", "pprof", "-raw", path], cwd)
    head, rest = text.split("Samples:\n", 1)
    types_line, rest = rest.split("\n", 1)
    samples_text, rest = rest.split("Locations\n", 1)
    locs_text, maps_text = rest.split("Mappings\n", 1)
    maps = {}
    for line in maps_text.splitlines():
        m = re.match(r"^(\d+): (\S+) (.*?)\s*(\[.*\])?$", line)
        if m:
            maps[m.group(1)] = (m.group(2), m.group(3).strip(), m.group(4) or "")
    locs, cur = {}, None
    for line in locs_text.splitlines():
        m = re.match(r"^\s*(\d+): (0x[0-9a-f]+)(?: M=(\d+))?(?: (.*) (\S*:-?\d+) s=-?\d+(?:\(.*\))?)?$",
                     line)
        if m:
            cur = locs[m.group(1)] = [m.group(2), maps.get(m.group(3)), []]
            if m.group(4) is not None:
                cur[2].append((m.group(4), m.group(5)))
            continue
        m = re.match(r"^\s+(.*) (\S*:-?\d+) s=-?\d+(?:\(.*\))?$", line)
        if m and cur:
            cur[2].append((m.group(1), m.group(2)))
    samples = {}
    for line in samples_text.splitlines():
        m = re.match(r"^\s*(-?\d+(?:\s+-?\d+)*):((?: \d+)*) ?$", line)
        if m:
            values = [int(v) for v in m.group(1).split()]
            stack = tuple((locs[i][0], locs[i][1], tuple(locs[i][2])) for i in m.group(2).split())
            old = samples.get(stack, [0] * len(values))
            samples[stack] = tuple(a + b for a, b in zip(old, values))
    types = [t.replace("[dflt]", "") for t in types_line.split()]
    return types, samples, sorted(maps.values())


@case
def pprof_round_trip(d):
    """A Go program's CPU and heap profiles through `convert --to pprof`:
    go tool pprof -raw shows the same samples with every value, the same
    locations (addresses, mappings, lines with their inline chains, files
    and line numbers) and the same mappings; -top -lines the same table."""
    cpu, heap = go_profiles(d)
    for path in (cpu, heap):
        back = path + ".ember.pb.gz"
        golden.run(["convert", "--to", "pprof", path, "-o", back])
        want, got = raw_normalized(path, d), raw_normalized(back, d)
        for what, a, b in zip(("sample types", "samples", "mappings"), want, got):
            if a != b:
                diff = sorted(set(a.items()) ^ set(b.items())) if what == "samples" else (a, b)
                golden.fail("%s: %s differ after the round trip: %r" %
                            (os.path.basename(path), what, diff if what != "samples" else diff[:4]))
        for idx in want[0]:
            t = idx.split("/")[0]
            a = golden.go(["tool", "pprof", "-top", "-lines", "-sample_index=" + t, path], d)
            b = golden.go(["tool", "pprof", "-top", "-lines", "-sample_index=" + t, back], d)
            strip = lambda s: [l for l in s.splitlines() if not l.startswith(("File:", "Time:",
                                                                               "Duration:"))]
            if strip(a) != strip(b):
                golden.fail("%s: go tool pprof -top -lines (%s) differs:\n%s\n---\n%s" %
                            (os.path.basename(path), t, a[:1500], b[:1500]))
        print("  %s: %d distinct samples, %d mappings, identical after the round trip" %
              (os.path.basename(path), len(want[1]), len(want[2])))


@case
def report_lines(d):
    """`ember report --lines` is go tool pprof -top -lines: per "function
    file:line", the same flat and cum, on a Go CPU profile with inlining;
    and the flame graph's tooltips say where each function is."""
    cpu, heap = go_profiles(d)
    text = golden.go(["tool", "pprof", "-top", "-lines", "-nodecount=1000000", "-nodefraction=0",
               "-unit=ns", cpu], d)
    want = {}
    for line in text.splitlines():
        # pprof marks a function inlined at some call sites "(partial-inline)"
        r = re.match(golden.pprof_row(r"^\s*(\d+)(?:ns)?\s+{p}\s+{p}\s+(\d+)(?:ns)?\s+{p}\s+(.*?)"
                                      r"( \((?:partial-)?inline\))?$"),
                     line)
        if r:
            want[r.group(3)] = (int(r.group(1)), int(r.group(2)))
    rep, _, _ = golden.run(["report", "--lines", "--top", "0", "--csv", cpu])
    got = {row[0]: (int(row[1]), int(row[3]))
           for row in csv.reader(io.StringIO(rep.decode())) if row[0] != "function"}
    if not want or got != want:
        golden.fail("report --lines and go tool pprof -top -lines differ: %r" %
                    sorted(set(got.items()) ^ set(want.items()))[:6])
    svg, _, _ = golden.run(["flamegraph", cpu])
    if not re.search(rb"<title>main\.beta \([^)]*, [^)]*goprof\.go:\d+\)</title>", svg):
        golden.fail("the flame graph's tooltip should say where main.beta is")
    print("  report --lines: %d lines as go tool pprof -top -lines" % len(want))


@case
def json_places(d):
    """speedscope's frames (file, line, col) and a .cpuprofile's call
    frames (url, lineNumber from 0) keep where functions are: the pprof
    export has them (go tool pprof -raw), and so do the flame graph's
    tooltips."""
    ss = os.path.join(d, "places.speedscope.json")
    with open(ss, "w") as f:
        json.dump({"$schema": "https://www.speedscope.app/file-format-schema.json",
                   "shared": {"frames": [{"name": "main", "file": "/src/main.c", "line": 10},
                                         {"name": "work", "file": "/src/work.c", "line": 42,
                                          "col": 7}]},
                   "profiles": [{"type": "sampled", "name": "p", "unit": "none", "startValue": 0,
                                 "endValue": 3, "samples": [[0, 1], [0]], "weights": [2, 1]}]},
                  f)
    cpu = os.path.join(d, "places.cpuprofile")
    with open(cpu, "w") as f:
        json.dump({"nodes": [
            {"id": 1, "callFrame": {"functionName": "(root)", "url": "", "lineNumber": -1}},
            {"id": 2, "parent": 1, "callFrame": {"functionName": "handler",
                                                 "url": "file:///app/server.js",
                                                 "lineNumber": 4, "columnNumber": 2}}],
                   "startTime": 0, "endTime": 3000, "samples": [2, 2, 2],
                   "timeDeltas": [1000, 1000, 1000]}, f)
    for path, want in ((ss, ["work /src/work.c:42", "main /src/main.c:10"]),
                       (cpu, ["handler file:///app/server.js:5"])):
        pb = path + ".pb.gz"
        golden.run(["convert", "--to", "pprof", path, "-o", pb])
        raw = golden.go(["tool", "pprof", "-raw", pb], d)
        for w in want:
            fn, place = w.split(" ", 1)
            if not re.search(re.escape(fn) + r" " + re.escape(place) + r" s=", raw):
                golden.fail("%s: pprof should place %s at %s:\n%s" % (path, fn, place, raw))
        svg, _, _ = golden.run(["flamegraph", path])
        fn, place = want[0].split(" ", 1)
        if not re.search(rb"<title>" + re.escape(fn.encode()) + rb" \([^)]*" +
                         re.escape(place.encode()) + rb"\)</title>", svg):
            golden.fail("%s: the flame graph's tooltip should say %s" % (path, place))


@case
def units_carry(d):
    """A CPU profile's unit goes through: speedscope nanoseconds, Chrome
    microseconds, pprof cpu/nanoseconds again."""
    prof = corpus("speedscope", "sample", "profiles", "pprof", "simple.prof")
    doc = json.loads(golden.run(["convert", "--to", "speedscope", prof])[0])
    if doc["profiles"][0]["unit"] != "nanoseconds" or doc["name"] != "simple.prof":
        golden.fail("speedscope of a CPU profile: unit %r, name %r" %
                    (doc["profiles"][0]["unit"], doc["name"]))
    ch = json.loads(golden.run(["convert", "--to", "chrome", prof])[0])
    end = max(e["ts"] + e["dur"] for e in ch["traceEvents"] if e["ph"] == "X")
    if end != 1500000:  # 1.5 s of samples, in us
        golden.fail("chrome: the CPU profile should last 1500000 us, not %r" % end)
    pb = os.path.join(d, "simple.pb.gz")
    golden.run(["convert", "--to", "pprof", prof, "-o", pb])
    text = golden.go(["tool", "pprof", "-top", pb], d)
    if "Type: cpu" not in text or "1.50s total" not in text:
        golden.fail("pprof of a CPU profile should stay cpu/nanoseconds:\n" + text[:800])


@case
def command_line(d):
    """--to is required and checked; pprof is never written to a terminal;
    every reader option works (a differential input gives two columns)."""
    path = corpus("inferno", "tests", "data", "flamegraph", "fractional-samples", "fractional.txt")
    for args, needle in ((["convert", path], "--to FORMAT is required"),
                         (["convert", "--to", "png", path], "unknown --to 'png'")):
        _, err, rc = golden.run(args, check=False)
        if rc != 2 or needle not in err:
            golden.fail("ember %s: expected exit 2 and %r, got %d %s" % (args, needle, rc, err))
    # the writers' table: --to svg is the flame graph, byte for byte
    svg, _, _ = golden.run(["convert", "--to", "svg", "--name", "x", path])
    flame, _, _ = golden.run(["flamegraph", "--subtitle", "x", path])
    strip = lambda b: re.sub(rb"<!--.*?-->", b"", b)
    if strip(svg) != strip(flame):
        golden.fail("convert --to svg should be the flame graph with its defaults")
    master, slave = pty.openpty()
    p = subprocess.run([golden.EMBER, "convert", "--to", "pprof", path], stdout=slave,
                       stderr=subprocess.PIPE, timeout=60)
    os.close(slave)
    os.close(master)
    if p.returncode != 2 or b"not writing it to a terminal" not in p.stderr:
        golden.fail("pprof to a terminal should be refused: %d %s" % (p.returncode, p.stderr))
    diff = os.path.join(d, "diff.folded")
    with open(diff, "w") as f:
        f.write("a;b 1 3\na;c 4 0\n")
    # (--format: the perf probe claims "stack N N" lines)
    data = golden.run(["convert", "--to", "csv", "--format", "folded", diff])[0]
    if data != b"stack,before,after\r\na;b,1,3\r\na;c,4,0\r\n":
        golden.fail("differential csv: %r" % data)
    pb = os.path.join(d, "diff.pb.gz")
    golden.run(["convert", "--to", "pprof", "--format", "folded", diff, "-o", pb])
    for t, want in (("before", b"a;b 1\na;c 4\n"), ("after", b"a;b 3\n"), (None, b"a;b 3\n")):
        got = collapse(pb, *(["--sample-type", t] if t else []))
        if got != want:
            golden.fail("differential pprof, sample type %s: %r" % (t, got))
    _, err, rc = golden.run(["convert", "--to", "speedscope", "--help"], check=False)
    if rc != 0:
        golden.fail("convert --help should exit 0")
    # a pprof file uncompressed (.pb) is detected as well as gzipped
    raw = os.path.join(d, "plain.pb")
    with open(raw, "wb") as f:
        f.write(gzip.decompress(open(pb, "rb").read()))
    if collapse(raw) != b"a;b 3\n":
        golden.fail("an uncompressed .pb should be read")


if __name__ == "__main__":
    main()
