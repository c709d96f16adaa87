"""A real OCaml 5 program (../shared/corpus/ocaml5/bin/fixture) followed live
while two CPU hogs load the machine, 50 runs in a row:

- `ember trace record -- fixture ...` (2 worker domains, user events): every
  run attaches, and the recording holds exactly the events of the file the
  runtime preserved (OCAML_RUNTIME_EVENTS_PRESERVE, read after the exit):
  `dump --format ocaml` of both prints the same event lines;
- runs that end within milliseconds (-iters 0): attached all the same;
- `ember trace dump --follow PID` started before the program has made its
  file (it sleeps before working): the same events as the preserved file;
- tiny rings (OCAMLRUNPARAM=e=7, 128 words) that the program laps: what is
  lost is reported in words, the same by record and by every reading of the
  recording, which holds every event the preserved file kept; gc-stats
  says what was lost and prints no nan and no negative time.

Then gc-stats of a 2-domain run against sums computed here from the dump:
per-domain GC time (olly's rule), collection counts, allocations, wall time
(ring_start to ring_stop) and domain time (the sum of lifetimes), to the
nanosecond; and gc-stats of the corpus's SIGKILLed and wrapped files says so, with no nan.

usage: ocaml_live.py WORKDIR
"""
import collections
import decimal
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402

PAUSES = ("major", "stw_leader", "interrupt_remote")


def ember(args, env=None, timeout=300):
    p = subprocess.run([golden.EMBER] + args, capture_output=True, timeout=timeout,
                       env=dict(os.environ, **(env or {})))
    err = p.stderr.decode(errors="replace")
    if p.returncode < 0 or "Sanitizer" in err or "runtime error" in err:
        golden.fail("ember %s crashed (%d):\n%s" % (" ".join(args), p.returncode, err[-3000:]))
    return p.returncode, p.stdout.decode(errors="replace"), err


def event_lines(text):
    return [l for l in text.splitlines() if not l.startswith("#") and "\tLOST_WORDS\t" not in l]


def ocaml_dump(path):
    rc, out, err = ember(["trace", "dump", "--format", "ocaml", path])
    if rc != 0:
        golden.fail("dump --format ocaml %s: exit %d\n%s" % (path, rc, err))
    return out


def preserved(d):
    files = [f for f in os.listdir(d) if f.endswith(".events")]
    if len(files) != 1:
        golden.fail("expected the program's one preserved .events file in %s: %r" % (d, files))
    return os.path.join(d, files[0])


def record_run(work, n, fixture, args, env, tiny=False):
    d = os.path.join(work, "run%d" % n)
    os.makedirs(d)
    out = os.path.join(work, "rec%d.events" % n)
    env = dict(env, OCAML_RUNTIME_EVENTS_DIR=d, OCAML_RUNTIME_EVENTS_PRESERVE="1")
    rc, _, err = ember(["trace", "record", "-o", out, "--", fixture] + args, env=env)
    m = re.search(r"ember trace: (\d+) events, (\d+) words lost -> ", err)
    if rc != 0 or not m or int(m.group(1)) == 0:
        golden.fail("run %d: record -- fixture %s: exit %d, did not attach:\n%s" %
                    (n, " ".join(args), rc, err))
    kept, got = event_lines(ocaml_dump(preserved(d))), event_lines(ocaml_dump(out))
    lost = int(m.group(2))
    if not tiny and (lost or kept != got):
        golden.fail("run %d: %d words lost; the recording has %d events, the preserved file %d" %
                    (n, lost, len(got), len(kept)))
    if tiny:
        missing = collections.Counter(kept) - collections.Counter(got)
        if missing:
            golden.fail("run %d: events the preserved file kept are not in the recording: %r" %
                        (n, list(missing)[:3]))
        rc, text, err = ember(["trace", "gc-stats", out])
        said = sum(int(w) for w in re.findall(r"(\d+) words lost", err))
        if rc != 0 or re.search(r"nan|inf|\s-\d", text, re.I) or said != lost or \
                (lost and "words of events were lost" not in text):
            golden.fail("run %d: gc-stats of a lapped recording (%d words lost): exit %d\n%s%s" %
                        (n, lost, rc, text, err))
    shutil.rmtree(d)
    return len(got), lost, out


def follow_run(work, n, fixture, env):
    """dump --follow PID started at once: the program has not made its file."""
    d = os.path.join(work, "follow%d" % n)
    os.makedirs(d)
    env = dict(os.environ, **env, OCAML_RUNTIME_EVENTS_START="1", OCAML_RUNTIME_EVENTS_DIR=d,
               OCAML_RUNTIME_EVENTS_PRESERVE="1")
    prog = subprocess.Popen([fixture, "-sleep-ms", "150", "-iters", "10", "-domains", "1"],
                            env=env, stdout=subprocess.DEVNULL)
    rc, out, err = ember(["trace", "dump", "--follow", str(prog.pid)])
    prog.wait()
    if rc != 0:
        golden.fail("run %d: dump --follow: exit %d\n%s" % (n, rc, err))
    rc, whole, err2 = ember(["trace", "dump", preserved(d)])
    if out != whole:
        golden.fail("run %d: dump --follow read %d events, the preserved file has %d\n%s" %
                    (n, len(out.splitlines()), len(whole.splitlines()), err))
    shutil.rmtree(d)
    return len(out.splitlines())


def stress(work, fixture):
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        runs = collections.Counter()
        events = lost = 0
        fastest = 1e9
        for n in range(50):
            kind = ("record", "record", "short", "follow", "tiny")[n % 5]
            if kind == "record":
                got, _, _ = record_run(work, n, fixture,
                                       ["-iters", "20", "-domains", "2", "-user-events"], {})
            elif kind == "short":
                t0 = time.time()
                subprocess.run([fixture, "-iters", "0"], stdout=subprocess.DEVNULL, check=True)
                fastest = min(fastest, time.time() - t0)
                got, _, _ = record_run(work, n, fixture, ["-iters", "0"], {})
            elif kind == "follow":
                got = follow_run(work, n, fixture, {})
            else:
                got, w, _ = record_run(work, n, fixture, ["-iters", "30", "-domains", "2"],
                                       {"OCAMLRUNPARAM": "e=7"}, tiny=True)
                lost += w
            runs[kind] += 1
            events += got
            for f in os.listdir(work):
                os.unlink(os.path.join(work, f))
    finally:
        for h in hogs:
            h.kill()
    if not lost:
        golden.fail("rings of 128 words were never lapped: the test tests nothing")
    print("ok: 50 runs beside two CPU hogs (%s): all attached, %d events, the same as the "
          "preserved files; tiny rings lost %d words, reported; -iters 0 runs in %.1f ms" %
          (", ".join("%d %s" % (v, k) for k, v in sorted(runs.items())), events, lost,
           fastest * 1000))


def sums_from_dump(text):
    """gc-stats' numbers by its rules, from `dump --format ocaml`."""
    alive, since, life, gc, pause = {}, {}, collections.Counter(), collections.Counter(), {}
    counts = collections.Counter()
    wall = [None, None]
    for line in event_lines(text):
        f = line.split("\t")
        ring, ts, kind, name = int(f[0]), int(f[1]), f[2], f[4]
        if kind == "LIFECYCLE" and name in ("ring_start", "domain_spawn"):
            alive[ring], since[ring] = True, ts
            if name == "ring_start" and ring == 0:
                wall[0] = ts
        elif kind == "LIFECYCLE" and name in ("ring_stop", "domain_terminate") and alive.get(ring):
            life[ring] += ts - since[ring]
            alive[ring] = False
            if ring in pause:
                gc[ring] += ts - pause.pop(ring)[1]
            if name == "ring_stop" and ring == 0:
                wall[1] = ts
        elif kind == "COUNTER" and name in ("minor_allocated", "minor_promoted"):
            counts[name] += int(f[5]) // 8
        elif kind in ("BEGIN", "END"):
            if kind == "BEGIN" and ring == 0:
                counts[name] += 1
            if name not in PAUSES or not alive.get(ring):
                continue
            if kind == "BEGIN" and ring not in pause:
                pause[ring] = (name, ts)
            elif kind == "END" and pause.get(ring, ("",))[0] == name:
                gc[ring] += ts - pause.pop(ring)[1]
    return wall, life, gc, counts


def ns(value):
    return int(decimal.Decimal(value) * 1000000000)


def check_gc_stats(work, fixture):
    out = os.path.join(work, "two.events")
    rc, _, err = ember(["trace", "record", "-o", out, "--", fixture, "-iters", "40", "-domains",
                        "2"])
    if rc != 0:
        golden.fail("record: exit %d\n%s" % (rc, err))
    rc, text, err = ember(["trace", "gc-stats", "--json", out])
    if rc != 0:
        golden.fail("gc-stats --json: exit %d\n%s" % (rc, err))
    got = json.loads(text, parse_float=decimal.Decimal)
    wall, life, gc, counts = sums_from_dump(ocaml_dump(out))
    want = {"wall_time": wall[1] - wall[0], "domain_time": sum(life.values()),
            "gc_time": sum(gc.values())}
    for key, value in want.items():
        if ns(got[key]) != value:
            golden.fail("gc-stats %s %s s, the dump says %d ns" % (key, got[key], value))
    if set(got["domain_stats"]) != {"0", "1", "2"}:
        golden.fail("gc-stats domains %r" % list(got["domain_stats"]))
    for ring, st in got["domain_stats"].items():
        if ns(st["gc_time"]) != gc[int(ring)] or ns(st["wall_time"]) != life[int(ring)]:
            golden.fail("domain %s: gc-stats %r, the dump: GC %d ns of %d ns" %
                        (ring, st, gc[int(ring)], life[int(ring)]))
    col = got["collections"]
    if (col["minor"], col["major"], col["forced_major"], col["compactions"]) != \
            (counts["minor"], counts["major_gc_stw"],
             counts["explicit_gc_major"] + counts["explicit_gc_full_major"], counts["compaction"]):
        golden.fail("collections %r, the dump %r" % (col, counts))
    alloc = got["allocations"]
    if (alloc["minor_heap"], alloc["promoted_words"]) != \
            (counts["minor_allocated"], counts["minor_promoted"]):
        golden.fail("allocations %r, the dump %r" % (alloc, counts))
    if not got["clean_stop"] or got["notes"] or got["max_rss_kb"] is not None or \
            got["cpu_time"] is not None:
        golden.fail("a clean run read from a file: %r" % got)
    rc, text, err = ember(["trace", "gc-stats", "--", fixture, "-iters", "10", "-domains", "2"])
    if rc != 0 or not re.search(r"Max RSS \(kB\):\t[1-9]\d+\n", text):
        golden.fail("gc-stats -- CMD: exit %d, no max RSS:\n%s%s" % (rc, text, err))
    print("ok gc-stats of 2 domains: wall %d ns, domain time %d ns, GC %r ns per domain, %d minor "
          "and %d major collections: as summed from the dump" %
          (want["wall_time"], want["domain_time"], dict(gc), counts["minor"],
           counts["major_gc_stw"]))


def check_unclean(corpus):
    for name, needles in (("alloc-killed", ("did not stop cleanly", "ring_start is not in the trace",
                                            "words of events were lost")),
                          ("domains-wrapped", ("ring_start is not in the trace",
                                               "words of events were lost"))):
        rc, text, err = ember(["trace", "gc-stats", os.path.join(corpus, name + ".events")])
        if rc != 0 or re.search(r"nan|inf|\s-\d", text, re.I) or \
                not all(n in text for n in needles):
            golden.fail("gc-stats %s: exit %d, expected %r, no nan:\n%s%s" %
                        (name, rc, needles, text, err))
        rc, js, err = ember(["trace", "gc-stats", "--json", os.path.join(corpus, name + ".events")])
        got = json.loads(js)
        if rc != 0 or got["clean_stop"] != (name != "alloc-killed") or not got["notes"]:
            golden.fail("gc-stats --json %s: %r" % (name, got))
    print("ok gc-stats of a SIGKILLed and a wrapped file: said, no nan, no negative time")


def main():
    work = sys.argv[1]
    fixture = os.path.join(golden.CORPUS, "ocaml5", "bin", "fixture")
    if not os.access(fixture, os.X_OK) or \
            subprocess.run([fixture, "-iters", "0"], capture_output=True).returncode != 0:
        print("SKIP: the OCaml fixture %s does not run here" % fixture)
        sys.exit(77)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    check_unclean(os.path.join(golden.CORPUS, "ocaml5", "runtime-events"))
    check_gc_stats(work, fixture)
    stress(work, fixture)


if __name__ == "__main__":
    main()
