"""A multi-threaded program traced end to end, and each export read by its
real client: babeltrace2 prints the same events as `ember trace dump`
(CTF), protoc decodes the Perfetto export, Python's json module the Chrome
export; stats and latency agree with the program's shape.

A program whose events all end in a string (string_tail.c) exported to
CTF is read whole by babeltrace2.

usage: exports.py TRACED STRING_TAIL WORKDIR
"""
import collections
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402
import speedscope_chrome  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REQUESTS, WORKERS = 400, 3


def dump_events(trace, threads=None):
    """(ticks, tid, "kind:name", {field: value as text}) from ember trace dump --ticks;
    the names of the threads with events are added to threads."""
    out, _, _ = golden.run(["trace", "dump", "--ticks", trace])
    events = []
    field = re.compile(r' (\w+)=("(?:[^"\\]|\\.)*"|\S+)')
    for line in out.decode().splitlines():
        m = re.match(r"(\d+) (\d+) (\S+) (begin|end|instant|counter|event) (.*)$", line)
        if not m:
            golden.fail("unexpected dump line: %r" % line)
        rest = m.group(5)
        first = field.search(rest)
        name = rest[:first.start()] if first else rest
        fields = {k: v.strip('"') for k, v in field.findall(rest)}
        events.append((int(m.group(1)), int(m.group(2)), m.group(4) + ":" + name, fields))
        if threads is not None:
            threads.add(m.group(3))
    return events


def babeltrace_events(ctf):
    p = subprocess.run(["babeltrace2", "--clock-cycles", ctf], capture_output=True, text=True)
    if p.returncode != 0:
        golden.fail("babeltrace2 could not read the CTF export:\n" + p.stderr[-2000:])
    events = []
    for line in p.stdout.splitlines():
        m = re.match(r"\[(\d+)\] \(\S+\) \S+ ([^:]+:[^:]*): \{ (.*?) \}, \{ ?(.*?) ?\}$", line)
        if not m:
            golden.fail("unexpected babeltrace2 line: %r" % line)
        ctx = dict(kv.split(" = ") for kv in m.group(3).split(", "))
        fields = {}
        for kv in re.findall(r'(\w+) = ("(?:[^"\\]|\\.)*"|[^,]+)', m.group(4)):
            fields[kv[0]] = kv[1].strip('"')
        events.append((int(m.group(1)), int(ctx["tid"]), m.group(2), fields))
    return events


def same_value(a, b):
    try:
        return float(a) == float(b)
    except ValueError:
        return a == b


def compare(dumped, babel):
    if len(dumped) != len(babel):
        golden.fail("dump has %d events, babeltrace2 %d" % (len(dumped), len(babel)))
    for d, b in zip(sorted(dumped, key=lambda e: (e[0], e[1])), sorted(babel, key=lambda e: (e[0], e[1]))):
        if d[:3] != b[:3] or d[3].keys() != b[3].keys() or \
                not all(same_value(d[3][k], b[3][k]) for k in d[3]):
            golden.fail("dump and babeltrace2 differ:\n  dump:       %r\n  babeltrace: %r" % (d, b))


def check_perfetto(trace, work, dumped, names):
    pb = os.path.join(work, "trace.pb")
    golden.run(["trace", "export", "--format", "perfetto", trace, "-o", pb])
    with open(pb, "rb") as f:
        p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace",
                            "--proto_path=" + HERE, "perfetto_subset.proto"],
                           stdin=f, capture_output=True, text=True)
    if p.returncode != 0:
        golden.fail("protoc could not decode the Perfetto export:\n" + p.stderr)
    types = collections.Counter(re.findall(r"type: TYPE_(\w+)", p.stdout))
    kinds = collections.Counter(e[2].split(":")[0] for e in dumped)
    want = {"SLICE_BEGIN": kinds["begin"], "SLICE_END": kinds["end"],
            "INSTANT": kinds["instant"] + kinds["event"], "COUNTER": kinds["counter"]}
    if dict(types) != {k: v for k, v in want.items() if v}:
        golden.fail("Perfetto event types %r, expected %r" % (dict(types), want))
    # a thread has a ring once it emits an event: on a loaded machine one
    # worker may take every request before the others run, and those have
    # none (the program's scheduling, not the reader's)
    threads = set(re.findall(r'thread_name: "([^"]*)"', p.stdout))
    if threads != names or not names <= {"producer"} | {"worker-%d" % i for i in range(WORKERS)} \
            or len(names) < 2:
        golden.fail("Perfetto thread names: %r, the dump has %r" % (threads, names))


def check_chrome(trace, work, dumped):
    js = os.path.join(work, "trace.json")
    golden.run(["trace", "export", "--format", "chrome", trace, "-o", js])
    with open(js) as f:
        events = json.load(f)["traceEvents"]
    phases = collections.Counter(e["ph"] for e in events)
    kinds = collections.Counter(e[2].split(":")[0] for e in dumped)
    if phases["B"] != kinds["begin"] or phases["E"] != kinds["end"] or \
            phases["i"] != kinds["instant"] or phases["C"] != kinds["counter"]:
        golden.fail("Chrome phases %r for %r" % (dict(phases), dict(kinds)))
    depth = collections.Counter()
    for e in events:
        if e["ph"] == "B":
            depth[e["tid"]] += 1
        elif e["ph"] == "E":
            depth[e["tid"]] -= 1
            if depth[e["tid"]] < 0:
                golden.fail("Chrome export: an E without its B on thread %d" % e["tid"])
    if any(depth.values()):
        golden.fail("Chrome export: spans left open %r" % dict(depth))
    warned = speedscope_chrome.warnings(events)
    if warned:
        golden.fail("Chrome export: speedscope would unbalance it: %s" % warned[:3])
    slow = [e for e in events if e["name"] == "slow path"]
    if not slow or slow[0]["args"]["why"] != "cache miss":
        golden.fail("Chrome export lost the fields of instants")


def check_views(trace):
    out, _, _ = golden.run(["trace", "stats", trace])
    rows = {l.split()[0]: l.split() for l in out.decode().splitlines()[1:]}
    for span in ("handle", "parse", "compute", "reply", "enqueue"):
        if span not in rows or int(rows[span][1]) != REQUESTS:
            golden.fail("stats: expected %d %s spans:\n%s" % (REQUESTS, span, out.decode()))
    out, _, _ = golden.run(["trace", "latency", trace, "--span", "handle"])
    text = out.decode()
    if "#[Max     =" not in text or "Total count    =          %d]" % REQUESTS not in text or \
            "1/(1-Percentile)" not in text:
        golden.fail("latency: not HdrHistogram's table:\n" + text[:1500])


def check_string_tails(string_tail, work):
    """Packets that end in an event whose last field is a string (padded to
    8 bytes after its NUL, where babeltrace2 sees the event end): their
    content ends at the NUL, else babeltrace2 reads the padding, or the
    next packet's header, as another event. Small packets: many end so,
    one after another, in a ring file and in a packet log."""
    n = 3000
    env = dict(os.environ, EMBER_TRACE_PACKET="4096")
    rec = os.path.join(work, "tails.trace")
    subprocess.run([golden.EMBER, "trace", "record", "-o", rec, "--", string_tail, str(n)],
                   env=env, check=True, capture_output=True)
    ring = os.path.join(work, "tails-ring.trace")
    subprocess.run([string_tail, str(n)], env=dict(env, EMBER_TRACE=ring), check=True)
    for trace in (ring, rec):
        ctf = trace + ".ctf"
        golden.run(["trace", "export", "--format", "ctf", trace, "-o", ctf])
        p = subprocess.run(["babeltrace2", ctf], capture_output=True, text=True)
        got = len(p.stdout.splitlines())
        if p.returncode != 0 or got != n:
            golden.fail("%s: babeltrace2 read %d of %d events (exit %d):\n%s" %
                        (os.path.basename(ctf), got, n, p.returncode, p.stderr[-1500:]))
    print("ok: %d events ending in strings, in 4 KiB packets: babeltrace2 reads them all" % n)


def main():
    traced, string_tail, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    trace = os.path.join(work, "traced.trace")
    env = dict(os.environ, EMBER_TRACE=trace)
    subprocess.run([traced, str(REQUESTS), str(WORKERS)], env=env, check=True,
                   capture_output=True)
    if os.stat(trace).st_mode & 0o777 != 0o600:
        golden.fail("the trace file should be created 0600")
    names = set()
    dumped = dump_events(trace, names)
    expected = REQUESTS * (2 * 5 + 2) + 2 + REQUESTS // 50
    if len(dumped) != expected:
        golden.fail("expected %d events, dump has %d" % (expected, len(dumped)))
    ctf = os.path.join(work, "ctf")
    golden.run(["trace", "export", "--format", "ctf", trace, "-o", ctf])
    compare(dumped, babeltrace_events(ctf))
    check_perfetto(trace, work, dumped, names)
    check_chrome(trace, work, dumped)
    check_views(trace)
    # the same program under `ember trace record`: the same events
    rec = os.path.join(work, "recorded.trace")
    golden.run(["trace", "record", "-o", rec, "--", traced, str(REQUESTS), str(WORKERS)])
    again = dump_events(rec)
    if collections.Counter(e[2] for e in again) != collections.Counter(e[2] for e in dumped):
        golden.fail("ember trace record did not capture the same events")
    print("ok: %d events; babeltrace2, protoc and json agree with dump; record too" % len(dumped))
    check_string_tails(string_tail, work)


if __name__ == "__main__":
    main()
