"""Golden test: `ember collapse --format FORMAT INPUT` against the stacks and
weights that speedscope's importers produced for the same input (the Jest
snapshots in speedscope's src/import/__snapshots__/), or, for speedscope's
own file format, whose importer has no snapshot, against a model of its
rules written here from the file format's specification.

usage:
  readers_json.py snap FORMAT INPUT SNAPFILE "EXPORT NAME" [--event E] [--scale N] [--profile K]
  readers_json.py model-speedscope INPUT
  readers_json.py model-cpuprofile INPUT
  readers_json.py model-trace-events INPUT
  readers_json.py ember-trace TRACED WORKDIR
  readers_json.py generated WORKDIR
  readers_json.py roundtrip INPUT WORKDIR
  readers_json.py expect INPUT EXPECTED [ember options]
  readers_json.py invalid FORMAT INPUT LINE "MESSAGE PART"

What is compared, for a snapshot:
- per frame name, the self weight: exactly (the snapshot's Frame selfWeight,
  summed over its frames of one name: ember names a frame by its name alone,
  speedscope keys it by name, file, line and column);
- the stacks: the same set, and each stack's weight within the rounding of
  the snapshot's formatted values ("17.00ms" is 17000 +- 5 us).
Where ember differs on purpose:
- empty stacks: speedscope shows the time before a CPU profile's first
  sample and idle samples as a stack with no frame (" 11.57ms"); they are
  not stacks for ember (a folded line needs a frame), so they are left out;
- --profile K: the snapshot's K-th profile alone (callgrind: one per event
  type, each read with --event);
- several profiles in one file: ember has one profile, so each of
  speedscope's gets a root frame (named after its thread); the test
  compares each snapshot profile with the stacks under its root frame;
- --scale: callgrind's "Time_(10ns)" event counts units of 10 ns, which
  ember keeps (the file's own numbers, as callgrind_annotate shows them);
  speedscope multiplies them by 10 to show nanoseconds.
"""
import json
import os
import re
import sys
from decimal import Decimal

import golden

UNITS = {"ns": Decimal(1), "\u00b5s": Decimal(1000), "ms": Decimal(10**6), "s": Decimal(10**9),
         "B": Decimal(1), "KB": Decimal(1024), "MB": Decimal(1024**2), "GB": Decimal(1024**3)}


def snapshot(path, name):
    """The block exports[`name`] of a .snap file: {"frames": [(name, self)],
    "stacks": [(stack, value, tolerance, unit_kind)], "name": str}."""
    text = open(path, encoding="utf-8").read()
    start = text.find("exports[`%s`] = `" % name)
    if start < 0:
        golden.fail("%s: no snapshot %r" % (path, name))
    end = text.find("\n`;\n", start)
    block = text[start:end]
    frames = []
    for m in re.finditer(r'Frame \{(.*?)\n    \}', block, re.S):
        body = m.group(1)
        fname = json.loads(re.search(r'"name": ("(?:[^"\\]|\\.)*")', body).group(1))
        self_w = Decimal(re.search(r'"selfWeight": ([-0-9.e]+)', body).group(1))
        frames.append((fname, self_w))
    stacks = []
    sm = re.search(r'"stacks": \[(.*?)\n  \]', block, re.S)
    for line in (sm.group(1).strip().split("\n") if sm and sm.group(1).strip() else []):
        s = json.loads(line.strip().rstrip(","))
        stack, _, value = s.rpartition(" ")
        if value in UNITS or value == "":  # "4.88 KB": the unit after a space
            stack, _, number = stack.rpartition(" ")
            value = number + value
        m = re.fullmatch(r"([0-9.,]+)\s*([^0-9.,]*)", value)
        number, unit = m.group(1).replace(",", ""), m.group(2)
        digits = len(number.partition(".")[2])
        scale = UNITS.get(unit, Decimal(1))
        tol = Decimal(5) / (Decimal(10) ** (digits + 1)) * scale if digits else Decimal(0)
        stacks.append((stack, Decimal(number) * scale, tol, unit))
    pname = re.search(r'\n  "name": ("(?:[^"\\]|\\.)*")', block)
    return {"frames": frames, "stacks": stacks, "name": json.loads(pname.group(1)) if pname else ""}


def folded(out):
    got = {}
    for line in out.decode("utf-8", "surrogateescape").splitlines():
        stack, _, w = line.rpartition(" ")
        got[stack] = got.get(stack, Decimal(0)) + Decimal(w)
    return got


def self_by_name(stacks):
    out = {}
    for stack, w in stacks.items():
        leaf = stack.split(";")[-1]
        out[leaf] = out.get(leaf, Decimal(0)) + w
    return out


def under_root(got, root_part):
    """The stacks under the root frame that names root_part, without it."""
    roots = {s.split(";")[0] for s in got if root_part in s.split(";")[0]}
    if len(roots) != 1:
        golden.fail("expected one root frame naming %r, got %r" % (root_part, sorted(roots)))
    root = roots.pop()
    return {s[len(root) + 1:]: w for s, w in got.items() if s.startswith(root + ";")}


def compare(got, snap, scale, unit_ns, what):
    # the time before the first sample and idle time: not stacks for ember
    want, tol = {}, {}
    for stack, value, t, _ in snap["stacks"]:
        if not stack:
            continue
        want[stack] = want.get(stack, Decimal(0)) + value
        tol[stack] = tol.get(stack, Decimal(0)) + t
    got_in_snap_units = {s: w * scale * unit_ns for s, w in got.items()}
    if set(got_in_snap_units) != set(want):
        extra = sorted(set(got_in_snap_units) - set(want))[:5]
        missing = sorted(set(want) - set(got_in_snap_units))[:5]
        golden.fail("%s: stacks differ\n  only ember: %s\n  only speedscope: %s" %
                    (what, extra, missing))
    for s, w in want.items():
        if abs(got_in_snap_units[s] - w) > tol[s]:
            golden.fail("%s: stack %s weighs %s, speedscope %s (+-%s)" %
                        (what, s, got_in_snap_units[s], w, tol[s]))
    # exact: self weight per frame name
    want_self = {}
    for name, w in snap["frames"]:
        if w:
            want_self[name] = want_self.get(name, Decimal(0)) + w
    got_self = {n: w * scale for n, w in self_by_name(got).items()}
    if got_self != want_self:
        diff = {n: (got_self.get(n), want_self.get(n)) for n in set(got_self) | set(want_self)
                if got_self.get(n) != want_self.get(n)}
        golden.fail("%s: self weights differ (ember, speedscope): %s" % (what, dict(list(diff.items())[:8])))
    print("ok %s: %d stacks, %d frames" % (what, len(want), len(want_self)))


def run_snap(args):
    fmt, inp, snapfile, name = args[:4]
    opts = args[4:]
    scale, only = Decimal(1), None
    ember_opts = ["--format", fmt]
    i = 0
    while i < len(opts):
        if opts[i] == "--scale":
            scale = Decimal(opts[i + 1])
            i += 2
        elif opts[i] == "--profile":
            only = int(opts[i + 1])
            i += 2
        else:
            ember_opts.append(opts[i])
            i += 1
    out, _, _ = golden.run(["collapse"] + ember_opts + [inp])
    got = folded(out)
    # also detected without --format
    auto, _, _ = golden.run(["collapse"] + ember_opts[2:] + [inp])
    if auto != out:
        golden.fail("%s: `ember collapse` without --format reads it differently" % inp)
    # the snapshot's profiles: "NAME 1", "NAME 2"...
    snaps = []
    for k in range(1, 10):
        try:
            text = open(snapfile, encoding="utf-8").read()
        except OSError as e:
            golden.fail(str(e))
        if "exports[`%s %d`]" % (name, k) not in text:
            break
        s = snapshot(snapfile, "%s %d" % (name, k))
        if only is not None and k != only:
            continue
        if any(st for st, _, _, _ in s["stacks"]):
            snaps.append(s)
    # the snapshot's stacks show times in ns (ember's chrome weights are us);
    # its frames keep the profile's own unit
    unit_ns = Decimal(1000) if fmt == "chrome" else Decimal(1)
    if len(snaps) == 1:
        compare(got, snaps[0], scale, unit_ns, inp)
        return
    for s in snaps:
        thread = s["name"].split(" - ", 1)[1]
        compare(under_root(got, thread + " ("), s, scale, unit_ns, "%s [%s]" % (inp, thread))


# ---- models: speedscope's file format, and V8's CPU profiles ------------------------------------


def model_speedscope(doc):
    """Folded stacks of a speedscope file, by its specification."""
    names = [f["name"] for f in doc["shared"]["frames"]]
    profiles = []
    for p in doc["profiles"]:
        stacks = {}
        if p["type"] == "evented":
            stack, last = [], None
            for ev in p["events"]:
                at = Decimal(str(ev["at"]))
                if stack and last is not None and at > last:
                    key = ";".join(names[i] for i in stack)
                    stacks[key] = stacks.get(key, Decimal(0)) + at - last
                last = at
                if ev["type"] == "O":
                    stack.append(ev["frame"])
                else:
                    assert stack[-1] == ev["frame"]
                    stack.pop()
        else:
            for s, w in zip(p["samples"], p["weights"]):
                if s and w:
                    key = ";".join(names[i] for i in s)
                    stacks[key] = stacks.get(key, Decimal(0)) + Decimal(str(w))
        profiles.append((p.get("name", ""), stacks))
    weighed = [p for p in profiles if p[1]]
    out = {}
    for name, stacks in weighed:
        for s, w in stacks.items():
            key = name + ";" + s if len(weighed) > 1 else s
            out[key] = out.get(key, Decimal(0)) + w
    return out


def model_cpuprofile(doc):
    """Folded stacks of a .cpuprofile, by the rules of speedscope's chrome.ts."""
    nodes = {n["id"]: n for n in doc["nodes"]}
    parent = {}
    for n in doc["nodes"]:
        if "parent" in n:
            parent[n["id"]] = n["parent"]
        for c in n.get("children", []):
            parent[c] = n["id"]

    def name(n):
        cf = n["callFrame"]
        if cf.get("functionName"):
            return cf["functionName"]
        if cf.get("url"):
            return "(anonymous %s:%d)" % (cf["url"].split("/")[-1], cf["lineNumber"] + 1)
        return "(anonymous)"

    def ignored(n):
        cf = n["callFrame"]
        return cf.get("functionName") in ("(root)", "(idle)") or cf.get("url") == "native dummy.js"

    def on_top(n):
        return n["callFrame"].get("functionName") in ("(program)", "(garbage collector)")

    runs, elapsed, last, t = [], None, None, None
    for i, (s, d) in enumerate(zip(doc["samples"], doc["timeDeltas"])):
        elapsed = d if elapsed is None else elapsed + d
        if s != last:
            t = elapsed if t is None else max(t, elapsed)
            runs.append([s, t])
        last = s
    out, prev = {}, []
    for k, (s, t) in enumerate(runs):
        end = runs[k + 1][1] if k + 1 < len(runs) else max(t, elapsed)
        top = s
        lca = top
        while lca is not None and lca not in prev:
            lca = (prev[-1] if prev else None) if on_top(nodes[lca]) else parent.get(lca)
        while prev and prev[-1] != lca:
            prev.pop()
        opening, n = [], top
        while n is not None and n != lca and not ignored(nodes[n]):
            opening.append(n)
            n = (prev[-1] if prev else None) if on_top(nodes[n]) else parent.get(n)
        prev += reversed(opening)
        if prev and end > t:
            key = ";".join(name(nodes[x]) for x in prev)
            out[key] = out.get(key, Decimal(0)) + Decimal(end - t)
    return out


def jtext(v):
    """A pid or tid as ember keeps it: the JSON text of a number, or the string."""
    return v if isinstance(v, str) else json.dumps(v)


def model_trace_events(events):
    """Folded stacks of Chrome trace events, by the rules chrome.c states:
    per thread in time order (sorted, X by longer duration first on equal
    times), X spans close when an event starts at or after their end, an E
    closes the innermost open B of its name (or any, unnamed), spans still
    open close at the thread's last time; one root frame per thread."""
    us = Decimal(1)
    pnames, tnames, threads = {}, {}, {}
    for i, e in enumerate(events):
        key = (jtext(e.get("pid", "")), jtext(e.get("tid", "")))
        if e.get("ph") == "M" and "name" in e.get("args", {}):
            if e.get("name") == "process_name":
                pnames[key[0]] = e["args"]["name"]
            elif e.get("name") == "thread_name":
                tnames[key] = e["args"]["name"]
        elif e.get("ph") in ("B", "E", "X"):
            dur = Decimal(str(e.get("dur", e.get("tdur", 0)))) * us
            threads.setdefault(key, []).append((Decimal(str(e["ts"])) * us, e["ph"], dur,
                                                e.get("name"), i))
    out = {}
    for key, evs in threads.items():
        pid, tid = key
        if pid in pnames and key in tnames:
            root = "%s (pid %s), %s (tid %s)" % (pnames[pid], pid, tnames[key], tid)
        elif pid in pnames or key in tnames:
            root = "%s (pid %s, tid %s)" % (pnames.get(pid) or tnames[key], pid, tid)
        else:
            root = "pid %s, tid %s" % (pid, tid)
        evs.sort(key=lambda e: (e[0], -e[2] if e[1] == "X" else 0, e[4]))
        stack, last = [], Decimal(0)

        def close(at):
            name, start, end, kids, x = stack.pop()
            if stack:
                stack[-1][3] += at - start
            self_w = at - start - kids
            if self_w > 0:
                k = ";".join([root] + [s[0] for s in stack] + [name])
                out[k] = out.get(k, Decimal(0)) + self_w

        for ts, ph, dur, name, _ in evs:
            while stack and stack[-1][4] and stack[-1][2] <= ts:
                close(stack[-1][2])
            last = max(last, ts + dur if ph == "X" else ts)
            if ph == "E":
                if stack and not stack[-1][4] and (name is None or name == stack[-1][0]):
                    close(ts)
                continue
            end = ts + dur if ph == "X" else None
            if end is not None and stack and stack[-1][4] and end > stack[-1][2]:
                end = stack[-1][2]
            stack.append([name if name is not None else "(unnamed)", ts, end, Decimal(0), ph == "X"])
        while stack:
            close(stack[-1][2] if stack[-1][4] else max(last, stack[-1][1]))
    return out


def run_model(kind, inp):
    doc = json.load(open(inp, encoding="utf-8"))
    if kind == "model-trace-events":
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        want = model_trace_events(events)
    else:
        want = model_speedscope(doc) if kind == "model-speedscope" else model_cpuprofile(doc)
    fmt = "speedscope" if kind == "model-speedscope" else "chrome"
    out, _, _ = golden.run(["collapse", "--format", fmt, inp])
    got = folded(out)
    auto, _, _ = golden.run(["collapse", inp])
    if auto != out:
        golden.fail("%s: `ember collapse` without --format reads it differently" % inp)
    if got != want:
        diff = {s: (got.get(s), want.get(s)) for s in set(got) | set(want) if got.get(s) != want.get(s)}
        golden.fail("%s: %d stacks differ from the model (ember, model): %s" %
                    (inp, len(diff), dict(list(diff.items())[:5])))
    print("ok %s: %d stacks" % (inp, len(want)))


def run_invalid(fmt, inp, line, message):
    _, err, rc = golden.run(["collapse", "--format", fmt, inp], check=False)
    where = "%s:%s:" % (inp, line)
    if rc != 1 or where not in err or message not in err:
        golden.fail("%s: expected exit 1 and %r with %r, got %d:\n%s" % (inp, where, message, rc, err))
    print("ok %s: %s" % (inp, err.strip()))


def run_ember_trace(traced, workdir):
    """ember's own trace of examples/traced.c, exported as Chrome JSON, read
    back: the stacks of the model, and per span name the totals that
    `ember trace stats` counts from the trace itself."""
    import os
    import shutil
    import subprocess
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    trace, exported = os.path.join(workdir, "t.trace"), os.path.join(workdir, "t.json")
    subprocess.run([traced, "300", "2"], env=dict(os.environ, EMBER_TRACE=trace), check=True,
                   capture_output=True)
    golden.run(["trace", "export", "--format", "chrome", trace, "-o", exported])
    run_model("model-trace-events", exported)
    # span totals: every span's self weight summed under its name and below
    out, _, _ = golden.run(["collapse", exported])
    totals = {}
    for stack, w in folded(out).items():
        for name in set(stack.split(";")[1:]):
            totals[name] = totals.get(name, Decimal(0)) + w
    stats, _, _ = golden.run(["trace", "stats", trace])
    for line in stats.decode().splitlines()[1:]:
        f = line.split()
        m = re.fullmatch(r"([0-9.]+)(ns|us|ms|s)", f[2])
        total = Decimal(m.group(1)) * {"ns": Decimal("0.001"), "us": 1, "ms": 1000, "s": 10**6}[m.group(2)]
        digits = len(m.group(1).partition(".")[2])
        tol = Decimal(5) / Decimal(10) ** (digits + 1) * {"ns": Decimal("0.001"), "us": 1, "ms": 1000,
                                                           "s": 10**6}[m.group(2)]
        if abs(totals.get(f[0], Decimal(0)) - total) > tol:
            golden.fail("span %s: %s us in the flame graph, %s in `ember trace stats`" %
                        (f[0], totals.get(f[0]), f[2]))
    print("ok: %d spans match `ember trace stats`" % (len(stats.splitlines()) - 1))


def run_generated(workdir):
    """Long traces written in time order (streamed), as Chrome and clang
    write them, each "X" when it ends (buffered, sorted), and in order but
    for spans that start together (the longer one holds the other): the
    same stacks."""
    import os
    os.makedirs(workdir, exist_ok=True)
    spans = []

    def tree(ts, depth, i):
        # a span of 100 us with two children of 30 us, three levels deep
        kids = []
        if depth < 3:  # the first child of a root starts with it
            kids = [tree(ts + (0 if depth == 0 else 10), depth + 1, 2 * i),
                    tree(ts + 50, depth + 1, 2 * i + 1)]
        dur = 100 if depth == 0 else 30 if depth == 1 else 12 if depth == 2 else 5
        return {"name": "f%d_%d" % (depth, i % 3), "ts": ts, "dur": dur, "kids": kids}

    def pre(s):
        yield s
        for k in s["kids"]:
            yield from pre(k)

    def post(s):
        for k in s["kids"]:
            yield from post(k)
        yield s

    def ties(s):
        # in order, but past the first WINDOW events of chrome.c (read before
        # a thread streams), the first child written before the root it
        # starts with
        walk = list(pre(s))
        if s["ts"] > 200 * 1500:
            walk[0], walk[1] = walk[1], walk[0]
        yield from walk

    roots = [tree(200 * n + 0.125, 0, n) for n in range(3000)]
    for order, walk in (("in-order", pre), ("post-order", post), ("ties", ties)):
        events = [{"ph": "X", "pid": 7, "tid": 1, "ts": s["ts"], "dur": s["dur"], "name": s["name"]}
                  for r in roots for s in walk(r)]
        path = os.path.join(workdir, order + ".json")
        with open(path, "w") as f:
            json.dump({"traceEvents": events}, f)
        run_model("model-trace-events", path)


def run_roundtrip(inp, workdir):
    """ember's own writers read back: `convert --to speedscope` (sampled and
    evented) and `--to chrome` give the stacks of the input again (the
    Chrome export adds a root frame per thread, which is taken off, and
    counts microseconds: a profile in seconds comes back scaled)."""
    import os
    os.makedirs(workdir, exist_ok=True)
    want, _, _ = golden.run(["collapse", inp])
    for to, opts, strip in (("speedscope", [], False), ("speedscope", ["--time-order"], False),
                            ("chrome", [], True)):
        out = os.path.join(workdir, "%s%s.json" % (to, "".join(opts)))
        golden.run(["convert", "--to", to] + opts + [inp, "-o", out])
        got, _, _ = golden.run(["collapse", out])
        if strip:
            # Chrome traces count microseconds: times in other units come back
            # scaled by a power of ten, the same for every stack
            got = {s.split(";", 1)[1]: w for s, w in folded(got).items()}
            w0 = folded(want)
            k = sum(got.values()) / sum(w0.values())
            if k not in (Decimal(10) ** e for e in range(-3, 7)):
                golden.fail("%s -> chrome: weights scaled by %s, not a power of ten" % (inp, k))
            got = b"".join(b"%s %s\n" % (s.encode(), str((w / k).normalize()).encode())
                           for s, w in sorted(got.items()))
            want = b"".join(b"%s %s\n" % (s.encode(), str(w.normalize()).encode())
                            for s, w in sorted(w0.items()))
        golden.first_difference(got, want, "%s -> %s %s -> folded" % (inp, to, " ".join(opts)))
    print("ok %s: speedscope, evented speedscope and chrome read back the same" % inp)


def run_expect(inp, expected, *opts):
    """Inputs written for these tests, with their expected stacks worked out
    by hand (each input says how): the same bytes, detected or not."""
    want = open(expected, "rb").read()
    for fmt in ([], ["--format", os.path.basename(os.path.dirname(inp))]):
        got, _, _ = golden.run(["collapse"] + fmt + list(opts) + [inp])
        golden.first_difference(got, want, "%s %s" % (inp, " ".join(fmt + list(opts))))
    print("ok %s %s" % (inp, " ".join(opts)))


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "snap":
        run_snap(args)
    elif mode == "ember-trace":
        run_ember_trace(*args)
    elif mode == "generated":
        run_generated(*args)
    elif mode == "roundtrip":
        run_roundtrip(*args)
    elif mode == "expect":
        run_expect(*args)
    elif mode.startswith("model-"):
        run_model(mode, args[0])
    elif mode == "invalid":
        run_invalid(*args)
    else:
        golden.fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
