"""The GC phases ember pairs from OCaml 5 runtime events (lib/traceview/gc_phases.c),
checked against the corpus's runtime_events files and what OCaml's own
consumer read from them (*.expected.txt): the GC tracks of the Chrome
timeline (`ember convert --to chrome --gc-events FILE RECORDING`) hold, per
domain, exactly the phases paired here from the expected events by the
rule ember/traceview.h states (every runtime phase but domain_condition_wait;
an end closes its innermost open phase of that name and those open inside
it; an end without its begin is left out; what is open at the end of the
trace ends at its last event, marked " (open)"), with their nesting depth
and times to the nanosecond. `--to perfetto` has the same slices, decoded
by protoc (when installed): each track's begins and ends nest, packets in
time order. Needs no perf: the samples come from a recording in the fuzz
seeds.

usage: gc_phases.py SOURCE_DIR WORKDIR
"""
import decimal
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402

SKIP = 77
FILES = ("domains", "domains-wrapped", "alloc", "alloc-killed", "custom")


def expected_slices(path):
    """{domain: [(begin, end, name, depth)]} in begin order, outer first."""
    rings = {}
    last = 0
    for line in open(path):
        if line.startswith("#"):
            continue
        f = line.rstrip("\n").split("\t")
        if f[2] == "LOST_WORDS":
            rings.setdefault(int(f[0]), []).append(("LOST", None, None))
            continue
        t = int(f[1])
        last = max(last, t)
        rings.setdefault(int(f[0]), []).append((f[2], t, f[4]))
    out = {}
    for ring, events in rings.items():
        slices, stack, seen_last = [], [], 0

        def close(keep, at, cut):
            while len(stack) > keep:
                i = stack.pop()
                b, _, name, depth = slices[i]
                slices[i] = (b, max(at, b), name + (" (open)" if cut else ""), depth)

        for kind, t, name in events:
            if kind == "LOST":
                close(0, seen_last, True)
                continue
            seen_last = t
            if name == "domain_condition_wait":
                continue
            if kind == "BEGIN":
                slices.append((t, t, name, len(stack)))
                stack.append(len(slices) - 1)
            elif kind == "END":
                for k in range(len(stack) - 1, -1, -1):
                    if slices[stack[k]][2] == name:
                        close(k, t, False)
                        break
        close(0, last, True)
        if slices:
            out[ring] = slices
    return out


def ns(us):
    whole, _, frac = us.partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


def dur_ns(us):
    """A dur in ns: exact (3 decimals), or shortened by a few ulps so that
    viewers' doubles keep children inside parents (wire/trace_time.h), which
    rounds to the exact ns: never more than 0.001 ns away."""
    exact = decimal.Decimal(us) * 1000
    n = int(exact.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
    if abs(exact - n) >= decimal.Decimal("0.001"):
        golden.fail("a dur of %s us is not a whole number of ns within 0.001 ns" % us)
    return n


def timeline_slices(text):
    """The GC tracks' slices, {domain: [(begin, end, name)]}, in file order."""
    doc = json.loads(text, parse_float=lambda s: s)
    got = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e.get("cat") == "gc":
            b = ns(e["ts"])
            got.setdefault(e["tid"] - 4194304, []).append((b, b + dur_ns(e["dur"]), e["name"]))
    return got


def perfetto_slices(data, proto_dir):
    """protoc's decoding of a Perfetto trace: {track name: [(begin, end,
    name)]} in begin order, outer first; fails on an end without a begin, a
    begin never ended, or packets out of time order."""
    p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "-I", proto_dir,
                        os.path.join(proto_dir, "perfetto_subset.proto")],
                       input=data, capture_output=True)
    if p.returncode != 0:
        golden.fail("protoc could not decode the Perfetto timeline: " + p.stderr.decode())
    names, events = {}, []
    packet = {}
    for line in p.stdout.decode().splitlines():
        line = line.strip()
        key, _, value = line.partition(": ")
        if line == "packet {":
            packet = {}
        elif key in ("timestamp", "uuid", "track_uuid"):
            packet[key] = int(value)
        elif key in ("type", "name", "thread_name"):
            packet[key] = json.loads(value) if value.startswith('"') else value
        elif line == "}" and "thread_name" in packet and "uuid" in packet:
            names[packet.pop("uuid")] = packet.pop("thread_name")
        elif line == "}" and "type" in packet and "timestamp" in packet:
            events.append(packet)
            packet = {}
    out, stacks, last = {}, {}, 0
    for e in events:
        if e["timestamp"] < last:
            golden.fail("Perfetto packets out of time order at %d" % e["timestamp"])
        last = e["timestamp"]
        track = names.get(e["track_uuid"], e["track_uuid"])
        st = stacks.setdefault(track, [])
        if e["type"] == "TYPE_SLICE_BEGIN":
            out.setdefault(track, []).append([e["timestamp"], None, e["name"]])
            st.append(out[track][-1])
        elif not st:
            golden.fail("Perfetto: an end without a begin on %s" % track)
        else:
            st.pop()[1] = e["timestamp"]
    if any(stacks.values()):
        golden.fail("Perfetto: slices never ended")
    return {k: [tuple(x) for x in v] for k, v in out.items()}


def main():
    src, work = sys.argv[1:3]
    corpus = os.path.join(golden.CORPUS, "ocaml5", "runtime-events")
    data = os.path.join(src, "..", "fuzz", "seeds", "perf-data", "true-fp.data")
    if not os.path.isdir(corpus):
        print("SKIP: no corpus at " + corpus)
        sys.exit(SKIP)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    counts = []
    for name in FILES:
        events = os.path.join(corpus, name + ".events")
        want = expected_slices(os.path.join(corpus, name + ".expected.txt"))
        out, _, _ = golden.run(["convert", "--to", "chrome", "--gc-events", events, data])
        got = timeline_slices(out.decode())
        for dm in sorted(set(want) | set(got)):
            w, g = want.get(dm, []), got.get(dm, [])
            w_flat = [(b, e, n) for b, e, n, _ in w]
            g_flat = g
            if w_flat != g_flat:
                for i, (x, y) in enumerate(zip(w_flat, g_flat)):
                    if x != y:
                        golden.fail("%s domain %d slice %d: expected %r, got %r" %
                                    (name, dm, i, x, y))
                golden.fail("%s domain %d: %d slices expected, %d got" %
                            (name, dm, len(w_flat), len(g_flat)))
        counts.append("%s %d" % (name, sum(len(v) for v in want.values())))
        if not shutil.which("protoc"):
            continue
        out, _, _ = golden.run(["convert", "--to", "perfetto", "--gc-events", events, data])
        pf = perfetto_slices(out, src)
        for dm in got:
            track = "OCaml domain %d: GC phases" % dm
            if pf.get(track) != got[dm]:
                golden.fail("%s: Perfetto's %s has %d slices, the Chrome timeline %d (first "
                            "difference: %r)" % (name, track, len(pf.get(track, [])),
                                                 len(got[dm]),
                                                 next((x for x in zip(pf.get(track, []),
                                                                      got[dm]) if x[0] != x[1]),
                                                      None)))
    print("ok: GC phases paired as OCaml's consumer's events say: " + ", ".join(counts) +
          ("; Perfetto's the same" if shutil.which("protoc") else "; no protoc: Perfetto "
           "not decoded"))


if __name__ == "__main__":
    main()
