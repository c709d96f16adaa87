"""`ember record` and OCaml 5's GC phases on one time axis (issue 11, item 5).

- clock: the samples are stamped with CLOCK_MONOTONIC, the clock of OCaml's
  runtime events; perf reads the file without a word, says "clockid:
  monotonic" in its header, and its sample times fall between two readings
  of CLOCK_MONOTONIC taken around the recording; perf script -F tod gives
  wall-clock times within seconds of ours (HEADER_CLOCK_DATA).
- follow: `ember record -o X.data` of the OCaml fixture (2 worker domains)
  keeps its runtime events in X.data.events (ember trace reads them: 3
  domains, the process recorded); the command's environment has
  OCAML_RUNTIME_EVENTS_START and the user's OCAMLRUNPARAM unchanged; a
  non-OCaml command leaves no X.data.events (an older one is removed) and
  prints one line, as before.
- filter: --outside gc and --during gc partition the samples exactly
  (collapse's sums add up to the unfiltered total, per stack), --during gc
  is dominated by the OCaml runtime's GC functions, --outside gc has few;
  flamegraph, report, convert and ember record take them; clear errors
  without GC data, for folded input, with a .data output.
- timeline: `ember record -o X.json` and `ember convert --to chrome X.data`
  are valid JSON with a GC track per domain and the samples per thread on
  the same clock; samples in the GC's functions lie inside GC phases;
  `-o X.pftrace` is decoded by protoc (a track per domain and thread,
  slices nested, in time order).

Skips (77) without perf or where perf_event_open is not permitted; the parts
that run the OCaml fixture skip without it.

usage: gc.py SOURCE_DIR WORKDIR
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402
import speedscope_chrome  # noqa: E402
from recording import perf, skip  # noqa: E402

FIXTURE = os.path.join(golden.CORPUS, "ocaml5", "bin", "fixture")


def record(work, args, env=None):
    """ember record ARGS in WORK: (exit code, stderr)."""
    p = subprocess.run([golden.EMBER, "record"] + args, capture_output=True, text=True,
                       cwd=work, env=env)
    return p.returncode, p.stderr


def check_probe(work):
    rc, err = record(work, ["-o", "probe.data", "--", "true"])
    if rc != 0 and ("perf_event_paranoid" in err or "not permitted" in err):
        skip("perf_event_open is not permitted here: " + err.strip())
    if rc != 0:
        golden.fail("ember record -- true: exit %d, %r" % (rc, err))


def test_clock(work):
    """Sample times are CLOCK_MONOTONIC ns, and perf says so."""
    data = os.path.join(work, "clock.data")
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    wall = time.time()
    rc, err = record(work, ["-o", data, "--", "sh", "-c", "i=0; while [ $i -lt 30000 ]; do "
                            "i=$((i+1)); done"])
    after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    if rc != 0:
        golden.fail("ember record: exit %d, %r" % (rc, err))
    header = perf(["report", "-i", data, "--header-only"])
    if "clockid: monotonic (1)" not in header or "use_clockid = 1" not in header:
        golden.fail("perf report --header: no 'clockid: monotonic (1)' / use_clockid:\n" +
                    "\n".join(line for line in header.splitlines() if "event" in line))
    times = [round(float(t) * 1e9) for t in
             re.findall(r"^\s*(\d+\.\d+):", perf(["script", "-i", data, "-F", "time", "--ns"]),
                        re.M)]
    if not times:
        golden.fail("perf script: no sample times")
    if min(times) < before or max(times) > after:
        golden.fail("sample times %d..%d ns are not within CLOCK_MONOTONIC's %d..%d around "
                    "the recording" % (min(times), max(times), before, after))
    tods = re.findall(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)",
                      perf(["script", "-i", data, "-F", "tod,time"]))
    first = time.mktime(time.strptime(tods[0].split(".")[0], "%Y-%m-%d %H:%M:%S")) \
        if tods else None
    if first is None or abs(first - wall) > 5:
        golden.fail("perf script -F tod: %r, expected about %s" %
                    (tods[:1], time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(wall))))
    return len(times)


GC_FUNCTIONS = ("caml_empty_minor_heap", "major_collection_slice", "caml_major_collection_slice",
                "caml_try_run_on_all_domains", "handle_incoming", "oldify", "pool_sweep",
                "caml_gc_log", "mark_slice", "caml_do_minor", "caml_minor_collection",
                "caml_stw_", "stw_handler", "adopt_orphaned_work", "ephe_", "caml_final",
                "caml_collect_", "sweep", "mark_stack", "caml_darken")


def is_gc_stack(stack):
    return any(g in stack for g in GC_FUNCTIONS)


def ember(args, check=True):
    out, err, rc = golden.run(args, check=check)
    return out.decode(), err, rc


def folded(text):
    got = {}
    for line in text.splitlines():
        stack, w = line.rsplit(" ", 1)
        got[stack] = got.get(stack, 0) + int(w)
    return got


def gc_share(stacks):
    total = sum(stacks.values())
    gc = sum(w for s, w in stacks.items() if is_gc_stack(s))
    return 100.0 * gc / total if total else 0.0


def test_follow(work):
    data = os.path.join(work, "fx.data")
    env = dict(os.environ, OCAMLRUNPARAM="v=0")
    rc, err = record(work, ["-F", "2000", "-o", data, "--", FIXTURE, "-domains", "2", "-iters",
                            "150"], env=env)
    if rc != 0 or err.count("\n") != 1 or "fx.data.events" not in err:
        golden.fail("ember record of the fixture: exit %d, expected one line naming "
                    "fx.data.events: %r" % (rc, err))
    events = data + ".events"
    if not os.path.exists(events):
        golden.fail("no %s beside the recording" % events)
    stats, _, _ = ember(["trace", "gc-stats", "--json", events])
    import json
    doc = json.loads(stats)
    domains = doc.get("domain_stats") or {}
    if len(domains) != 3:
        golden.fail("gc-stats of %s: %d domains, expected 3: %s" % (events, len(domains),
                                                                  stats[:500]))
    # (a loaded machine may lose samples: perf says so on stderr, which is not the point here)
    pids = set(re.findall(r"^\s*(\d+)\s*$", subprocess.run(
        ["perf", "script", "-i", data, "-F", "pid"], capture_output=True, text=True).stdout,
        re.M))
    dump, _, _ = ember(["trace", "dump", "--format", "ocaml", events])
    if len(pids) != 1 or ("ring_start\t%s" % list(pids)[0]) not in dump:
        golden.fail("the runtime events are not the recorded process's (%r)" % pids)
    # the command's environment: runtime events on, the user's OCAMLRUNPARAM as
    # it was, for a command that may run OCaml in its process (here the
    # fixture named in argv, as a wrapper that execs names it: sh's $0); a
    # command that does not is left alone, and needs no directory
    envfile = os.path.join(work, "env.txt")
    tmp = os.path.join(work, "tmp")
    os.makedirs(tmp)
    for cmd, ocaml in ((["sh", "-c", "env > " + envfile, FIXTURE], True),
                       (["sh", "-c", "env > %s; echo \"in TMPDIR: $(ls $TMPDIR)\" >> %s" %
                         (envfile, envfile)], False)):
        rc, err = record(work, ["-o", "env.data", "--"] + cmd, env=dict(env, TMPDIR=tmp))
        text = open(envfile).read()
        seen = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        if (rc != 0 or seen.get("OCAMLRUNPARAM") != "v=0" or
                seen.get("OCAML_RUNTIME_EVENTS_START") != ("1" if ocaml else None) or
                (not ocaml and text.splitlines()[-1] != "in TMPDIR: ")):
            golden.fail("the environment of %r: exit %d, OCAMLRUNPARAM=%r "
                        "OCAML_RUNTIME_EVENTS_START=%r, TMPDIR %s" %
                        (cmd, rc, seen.get("OCAMLRUNPARAM"),
                         seen.get("OCAML_RUNTIME_EVENTS_START"), text.splitlines()[-1:]))
    # a command that is not OCaml: nothing beside, nothing said; an older file goes
    stale = os.path.join(work, "c.data.events")
    open(stale, "w").write("older")
    rc, err = record(work, ["-o", "c.data", "--", "true"])
    if rc != 0 or err.count("\n") != 1 or "GC" in err or os.path.exists(stale):
        golden.fail("ember record -- true: exit %d, %r, c.data.events %s" %
                    (rc, err, "left" if os.path.exists(stale) else "gone"))
    # nor with -a or -p, whose GC phases are not followed: X.data must not
    # be read with another run's
    open(stale, "w").write("older")
    rc, err = record(work, ["-a", "--duration", "0.2", "-o", "c.data"])
    if rc != 0 or os.path.exists(stale):
        golden.fail("ember record -a -o c.data: exit %d, %r, c.data.events %s" %
                    (rc, err, "left" if os.path.exists(stale) else "gone"))
    return data, doc


def test_filter(work, data):
    whole = folded(ember(["collapse", data])[0])
    during = folded(ember(["collapse", "--during", "gc", data])[0])
    outside = folded(ember(["collapse", "--outside", "gc", data])[0])
    for stack in set(whole) | set(during) | set(outside):
        if during.get(stack, 0) + outside.get(stack, 0) != whole.get(stack, 0):
            golden.fail("--during + --outside != the whole for %s: %d + %d != %d" %
                        (stack[-200:], during.get(stack, 0), outside.get(stack, 0),
                         whole.get(stack, 0)))
    d_share, o_share = gc_share(during), gc_share(outside)
    if d_share < 70 or o_share > 15:
        golden.fail("--during gc has %.1f%% of its time in GC functions (expected >= 70), "
                    "--outside gc %.1f%% (expected <= 15)" % (d_share, o_share))
    for cmd in (["flamegraph", "-o", os.path.join(work, "during.svg")], ["report", "--top", "5"],
                ["convert", "--to", "folded"]):
        ember(cmd + ["--during", "gc", data])
    # errors: no GC data, not perf.data, a bad phase, both
    plain = os.path.join(work, "plain.data")
    record(work, ["-o", plain, "--", "true"])
    _, err, rc = ember(["collapse", "--during", "gc", plain], check=False)
    if rc == 0 or "plain.data.events" not in err:
        golden.fail("--during gc without GC data: exit %d, %r" % (rc, err))
    fold = os.path.join(work, "x.folded")
    open(fold, "w").write("a;b 1\n")
    _, err, rc = ember(["collapse", "--outside", "gc", fold], check=False)
    if rc == 0 or "not a perf.data recording" not in err:
        golden.fail("--outside gc on folded input: exit %d, %r" % (rc, err))
    # another program's runtime events, a cut one, a file that is none
    corpus = os.path.join(golden.CORPUS, "ocaml5", "runtime-events", "domains.events")
    if os.path.exists(corpus):
        _, err, rc = ember(["collapse", "--outside", "gc", "--gc-events", corpus, data],
                           check=False)
        if rc == 0 or "none of its samples is of process" not in err:
            golden.fail("--gc-events of another program: exit %d, %r" % (rc, err))
    cut = os.path.join(work, "cut.events")
    with open(data + ".events", "rb") as f, open(cut, "wb") as g:
        g.write(f.read(100000))
    for bad, said in ((cut, "cut short at byte 100000"), (fold, "nor an OCaml runtime_events")):
        out, err, rc = ember(["collapse", "--during", "gc", "--gc-events", bad, data],
                             check=False)
        if rc == 0 or out or said not in err or bad not in err:
            golden.fail("--gc-events %s: exit %d, %r" % (bad, rc, err))
    _, err, rc = ember(["collapse", "--during", "io", data], check=False)
    if rc != 2 or "expected gc" not in err:
        golden.fail("--during io: exit %d, %r" % (rc, err))
    _, err, rc = ember(["collapse", "--during", "gc", "--outside", "gc", data], check=False)
    if rc != 2:
        golden.fail("--during and --outside: exit %d, %r" % (rc, err))
    rc, err = record(work, ["--during", "gc", "-o", "x.data", "--", "true"])
    if rc != 2 or "keeps every sample" not in err:
        golden.fail("ember record --during gc -o x.data: exit %d, %r" % (rc, err))
    rc, err = record(work, ["--during", "gc", "-o", "x.folded", "--", "true"])
    if rc == 0 or "no OCaml runtime events" not in err:
        golden.fail("ember record --during gc of a non-OCaml command: exit %d, %r" % (rc, err))
    # ember record filters what it writes
    rc, err = record(work, ["-F", "2000", "--outside", "gc", "-o", "out.folded", "--", FIXTURE,
                            "-iters", "100"])
    rec_out = folded(open(os.path.join(work, "out.folded")).read()) if rc == 0 else {}
    if rc != 0 or gc_share(rec_out) > 15:
        golden.fail("ember record --outside gc: exit %d (%r), %.1f%% in GC functions" %
                    (rc, err, gc_share(rec_out)))
    total = sum(whole.values())
    return (sum(during.values()), sum(outside.values()), total, d_share, o_share)


def test_one_domain(work):
    """One domain: the main thread is domain 0, the filter is exact: --during
    gc is the GC's functions, --outside gc has almost none."""
    import json
    data = os.path.join(work, "one.data")
    rc, err = record(work, ["-F", "4000", "-o", data, "--", FIXTURE, "-iters", "200"])
    if rc != 0:
        golden.fail("ember record of the fixture: exit %d, %r" % (rc, err))
    whole = sum(folded(ember(["collapse", data])[0]).values())
    during = folded(ember(["collapse", "--during", "gc", data])[0])
    outside = folded(ember(["collapse", "--outside", "gc", data])[0])
    d_share, o_share = gc_share(during), gc_share(outside)
    share = 100.0 * sum(during.values()) / whole
    stats = json.loads(ember(["trace", "gc-stats", "--json", data + ".events"])[0])
    # the share of samples during GC is gc-stats' overhead on an idle machine (27.5% and
    # 26.8% here); on a loaded one wall time (gc-stats) and CPU time (samples) part: shown
    if d_share < 95 or o_share > 2:
        golden.fail("one domain: --during gc %.1f%% GC functions (>= 95), --outside gc %.1f%% "
                    "(<= 2)" % (d_share, o_share))
    return d_share, o_share, share, stats["gc_overhead"]


def check_timeline(path):
    """The Chrome trace at path: valid JSON that speedscope imports
    balanced, a GC track per domain, samples per thread; the share of
    samples in GC functions inside GC phases."""
    import json
    with open(path) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    warned = speedscope_chrome.warnings(ev)
    if warned:
        golden.fail("%s: speedscope would unbalance it: %s" % (path, warned[:3]))
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name"}
    domains = [k for k, v in names.items() if v.startswith("OCaml domain ")]
    if len(domains) != 3:
        golden.fail("%s: %d GC tracks, expected 3 (%r)" % (path, len(domains), names))
    gc = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev
                if e["ph"] == "X" and e.get("cat") == "gc")
    cpu = [e for e in ev if e["ph"] == "X" and e.get("cat") == "cpu"]
    if not gc or not cpu:
        golden.fail("%s: %d GC slices, %d sample spans" % (path, len(gc), len(cpu)))
    if max(e["ts"] for e in cpu) < gc[0][0] or min(e["ts"] for e in cpu) > gc[-1][1]:
        golden.fail("%s: samples and GC phases do not share a time axis" % path)
    starts = [a for a, _ in gc]
    ends = []
    m = 0
    for _, b in gc:
        m = max(m, b)
        ends.append(m)

    import bisect

    def inside(t):
        i = bisect.bisect_right(starts, t)
        return i > 0 and t <= ends[i - 1]

    gc_spans = [e for e in cpu if any(e["name"].startswith(g) for g in
                                      ("caml_empty_minor_heaps_once", "major_collection_slice"))]
    hits = sum(1 for e in gc_spans if inside(e["ts"] + e["dur"] / 2))
    share = 100.0 * hits / len(gc_spans) if gc_spans else 0
    if len(gc_spans) < 20 or share < 90:
        golden.fail("%s: %d of %d sample spans in the GC's functions lie inside GC phases "
                    "(%.1f%%, expected >= 90%%)" % (path, hits, len(gc_spans), share))
    return len(cpu), len(gc), share


def test_timeline(work, data):
    rc, err = record(work, ["-F", "2000", "-o", "tl.json", "--", FIXTURE, "-domains", "2",
                            "-iters", "150"])
    if rc != 0:
        golden.fail("ember record -o tl.json: exit %d, %r" % (rc, err))
    got = check_timeline(os.path.join(work, "tl.json"))
    conv = os.path.join(work, "conv.json")
    ember(["convert", "--to", "chrome", data, "-o", conv])
    check_timeline(conv)
    if shutil.which("protoc"):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "trace"))
        import gc_phases
        rc, err = record(work, ["-F", "2000", "-o", "tl.pftrace", "--", FIXTURE, "-domains",
                                "2", "-iters", "50"])
        with open(os.path.join(work, "tl.pftrace"), "rb") as f:
            tracks = gc_phases.perfetto_slices(f.read(), os.path.join(
                os.path.dirname(__file__), "..", "trace"))
        domains = [t for t in tracks if str(t).startswith("OCaml domain ")]
        threads = [t for t in tracks if str(t).startswith("fixture ")]
        if rc != 0 or len(domains) != 3 or not threads:
            golden.fail("ember record -o tl.pftrace: exit %d, tracks %r" % (rc, list(tracks)))
    return got


def main():
    src, work = sys.argv[1:3]
    del src
    if not shutil.which("perf"):
        skip("no perf here to read the files")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    check_probe(work)
    n = test_clock(work)
    print("ok: clock: %d samples on CLOCK_MONOTONIC, perf reads the clock's sections" % n)
    if not os.access(FIXTURE, os.X_OK):
        print("note: no OCaml fixture (%s): following, filter and timeline not checked" %
              FIXTURE)
        return
    data, _ = test_follow(work)
    print("ok: follow: fx.data.events beside fx.data, 3 domains; environment; non-OCaml "
          "commands leave nothing")
    d, o, t, ds, os_ = test_filter(work, data)
    print("ok: filter: during %d + outside %d = %d ns; GC functions %.1f%% during, %.1f%% "
          "outside" % (d, o, t, ds, os_))
    one = test_one_domain(work)
    print("ok: one domain: GC functions %.1f%% during, %.1f%% outside; %.1f%% of the samples "
          "during GC, gc-stats' overhead %.1f%%" % one)
    cpu, gc, share = test_timeline(work, data)
    print("ok: timeline: %d sample spans, %d GC slices; %.1f%% of the GC functions' samples "
          "inside GC phases" % (cpu, gc, share))


if __name__ == "__main__":
    main()
