"""Every field of pprof's profile.proto through ember (issue 17, items 9
and 10), read by pprof's own client, go tool pprof, and by protoc:

- go_round_trip: a real Go CPU profile (data/goprof.go: runtime/pprof,
  samples labelled by pprof.Do) and heap profile (samples labelled with
  their size) through `ember convert --to pprof`: `go tool pprof -raw`
  shows what it shows for the original: the header (comments, PeriodType,
  Period, Time, Duration), the sample types and their default, every sample
  with its values and labels, every location (address, mapping, "[F]" for
  folded, its lines: function, file, line, start line and system name), the
  mappings in order with their flags and build-ids.
- every_field: a profile that protoc writes from text, every field of
  profile.proto set (string labels, numeric labels with and without units,
  two of one key; mappings with each flag, an offset, a build-id, the main
  one not the lowest, one unused; locations folded, with an inline chain,
  columns, without a mapping, without lines; functions whose system name is
  the name, another, or none; start lines; drop_frames, keep_frames,
  time_nanos, duration_nanos, period_type, period, two comments,
  default_sample_type not the last, doc_url): protoc --decode of ember's
  file is the same profile, and so is go tool pprof -raw's view of it; the
  same through a transform (--focus, --demangle), and twice the values
  when it is given twice.
- perf_data: perf.data to pprof (perf 6.1's recording of `true` in the fuzz
  seeds, and recordings made here when perf can record: a fixed period, a
  count event, a child process that does the work): PeriodType and Period
  are the event's (perf report's header: its period, or for a clock in
  frequency mode 1e9 / frequency ns), the first Mapping (pprof's main
  binary, go tool pprof's "File:") is the executable of the process with
  the most samples, as perf script's samples and MMAP2 events say, and no
  Mapping is named after the input; from perf script's text, which has no
  exec nor maps, the program the most samples run in (no "File:" when no
  sample runs in it, as perf_to_profile does when it cannot tell).

Documented differences (what profile.proto leaves to the writer): ids and
the order of the string table; samples in ember's order, those with the
same locations and labels added up (as pprof's own Compact does); Functions
and Locations no sample uses are not written, identical ones are one;
ember's own comment when weights have decimals; default_sample_type is not
written when it is the last type (pprof's default either way).

usage: pprof_fields.py WORKDIR
"""
import collections
import gzip
import os
import re
import shutil
import subprocess
import sys

import golden

case, main = golden.cases()
HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "..", "..", "proto")
CORPUS_SEED = os.path.join(HERE, "..", "fuzz", "seeds", "perf-data", "true-fp.data")


# ---- go tool pprof -raw, ids replaced by what they stand for ---------------

def raw_view(path, cwd):
    """go tool pprof -raw of path: (header lines, sample types line,
    {(locations, labels): values}, mappings in order), a location being
    (address, mapping, folded, lines) and a mapping its line without its id."""
    text = golden.go(["tool", "pprof", "-raw", path], cwd)
    head, rest = text.split("Samples:\n", 1)
    types, rest = rest.split("\n", 1)
    samples_text, rest = rest.split("Locations\n", 1)
    locs_text, maps_text = rest.split("Mappings\n", 1)
    maps, order = {}, []
    for line in maps_text.splitlines():
        m = re.match(r"^(\d+): (.*)$", line)
        if m:
            maps[m.group(1)] = m.group(2)
            order.append(m.group(2))
    locs, cur = {}, None
    for line in locs_text.splitlines():
        m = re.match(r"^\s*(\d+): (0x[0-9a-f]+)(?: M=(\d+))?( \[F\])?(?: (.*))?$", line)
        if m:
            cur = locs[m.group(1)] = [m.group(2), maps.get(m.group(3)), bool(m.group(4)), []]
            if m.group(5) is not None:
                cur[3].append(m.group(5))
        elif line.strip() and cur:
            cur[3].append(line.strip())
    samples = []
    for line in samples_text.splitlines():
        m = re.match(r"^\s*(-?\d+(?:\s+-?\d+)*):((?: \d+)*) ?$", line)
        if m:
            samples.append([[int(v) for v in m.group(1).split()],
                            tuple((locs[i][0], locs[i][1], locs[i][2], tuple(locs[i][3]))
                                  for i in m.group(2).split()), ""])
        elif line.strip() and samples:  # the labels of the sample above
            samples[-1][2] += line.strip()
    merged = {}
    for values, stack, labels in samples:
        old = merged.get((stack, labels), [0] * len(values))
        merged[(stack, labels)] = [a + b for a, b in zip(old, values)]
    # go tool pprof merges what it reads: the main mapping first, then the
    # others as its samples first use them, which is the samples' order
    return head.splitlines(), types, merged, order[:1] + sorted(order[1:])


def compare_raw(name, a, b):
    for what, x, y in zip(("header", "sample types", "samples", "mappings"), a, b):
        if x != y:
            if what == "samples":
                diff = sorted(set((k, tuple(v)) for k, v in x.items()) ^
                              set((k, tuple(v)) for k, v in y.items()), key=repr)[:4]
                golden.fail("%s: go tool pprof -raw: samples differ: %r" % (name, diff))
            golden.fail("%s: go tool pprof -raw: %s differ:\n%r\n%r" % (name, what, x, y))


@case
def go_round_trip(d):
    """A Go program's CPU and heap profiles: go tool pprof -raw shows the
    same after `ember convert --to pprof`."""
    src = os.path.join(HERE, "data", "goprof.go")
    env = {"GOCACHE": os.path.join(d, "gocache"), "GOPATH": os.path.join(d, "gopath"),
           "GO111MODULE": "off", "GOFLAGS": "", "GOTOOLCHAIN": "local"}
    cpu, heap = os.path.join(d, "cpu.pb.gz"), os.path.join(d, "heap.pb.gz")
    golden.go(["run", src, cpu, heap], d, env)
    for path in (cpu, heap):
        back = path + ".ember.pb.gz"
        golden.run(["convert", "--to", "pprof", path, "-o", back])
        want, got = raw_view(path, d), raw_view(back, d)
        compare_raw(os.path.basename(path), got, want)
        labelled = sum(1 for k in want[2] if k[1])
        if not labelled or not any(l[3] for s in want[2] for l in s[0]):
            golden.fail("%s: expected labelled samples and lines (%d labelled)" % (path, labelled))
        print("  %s: %d samples (%d labelled), %d mappings, as go tool pprof -raw shows the "
              "original" % (os.path.basename(path), len(want[2]), labelled, len(want[3])))


# ---- protoc's view: every field ---------------------------------------------

def parse_text(text):
    """protoc's text format as nested dicts of lists (values as text)."""
    root, stack = {}, []
    stack.append(root)
    for line in text.splitlines():
        line = line.strip()
        if line.endswith("{"):
            child = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(child)
            stack.append(child)
        elif line == "}":
            stack.pop()
        elif line:
            key, _, value = line.partition(": ")
            stack[-1].setdefault(key, []).append(value)
    return root


def decode(path):
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    p = subprocess.run(["protoc", "--decode=perftools.profiles.Profile", "-I", PROTO,
                        os.path.join(PROTO, "profile.proto")], input=data, capture_output=True)
    if p.returncode != 0:
        golden.fail("protoc cannot decode %s: %s" % (path, p.stderr.decode()))
    return parse_text(p.stdout.decode("utf-8", "surrogateescape"))


def normalized(msg):
    """A Profile with ids and string indices replaced by what they stand
    for, and what the writer may choose (see the module's doc) evened out."""
    one = lambda m, k, dflt="0": m.get(k, [dflt])[0]
    table = msg.get("string_table", [])
    s = lambda i: table[int(i)] if int(i) else '""'
    flag = lambda m, k: one(m, k, "false") == "true"
    funcs = {one(f, "id"): (s(one(f, "name")), s(one(f, "system_name")), s(one(f, "filename")),
                            int(one(f, "start_line"))) for f in msg.get("function", [])}
    maps = collections.OrderedDict(
        (one(m, "id"), (int(one(m, "memory_start")), int(one(m, "memory_limit")),
                        int(one(m, "file_offset")), s(one(m, "filename")), s(one(m, "build_id")),
                        flag(m, "has_functions"), flag(m, "has_filenames"),
                        flag(m, "has_line_numbers"), flag(m, "has_inline_frames")))
        for m in msg.get("mapping", []))
    locs = {one(l, "id"): (maps.get(one(l, "mapping_id")), int(one(l, "address")),
                           flag(l, "is_folded"),
                           tuple((funcs[one(n, "function_id")], int(one(n, "line")),
                                  int(one(n, "column"))) for n in l.get("line", [])))
            for l in msg.get("location", [])}
    samples = {}
    for x in msg.get("sample", []):
        key = (tuple(locs[i] for i in x.get("location_id", [])),
               tuple((s(one(b, "key")), s(one(b, "str")), int(one(b, "num")),
                      s(one(b, "num_unit"))) for b in x.get("label", [])))
        values = [int(v) for v in x.get("value", [])]
        samples[key] = [a + b for a, b in zip(samples.get(key, [0] * len(values)), values)]
    types = [(s(one(t, "type")), s(one(t, "unit"))) for t in msg.get("sample_type", [])]
    dflt = s(one(msg, "default_sample_type"))
    pt = msg.get("period_type", [None])[0]
    head = {
        "sample_type": types,
        "default": dflt if dflt != '""' else (types[-1][0] if types else '""'),
        "period_type": (s(one(pt, "type")), s(one(pt, "unit"))) if pt else None,
        "comments": [s(c) for c in msg.get("comment", [])
                     if not s(c).startswith('"ember: values are in units of 10^-')],
    }
    for k in ("period", "time_nanos", "duration_nanos"):
        head[k] = int(one(msg, k))
    for k in ("drop_frames", "keep_frames", "doc_url"):
        head[k] = s(one(msg, k))
    return head, samples, list(maps.values())


def text_profile(strings):
    """The text of a Profile setting every field; strings is filled with
    its string table."""
    def i(text):
        if text not in strings:
            strings.append(text)
        return strings.index(text)
    strings.append("")
    st = lambda t, u: "sample_type { type: %d unit: %d }\n" % (i(t), i(u))
    lines = [st("samples", "count"), st("cpu", "nanoseconds"),
             "default_sample_type: %d\n" % i("samples")]
    label_s = lambda k, v: "label { key: %d str: %d }" % (i(k), i(v))
    label_n = lambda k, n, u: "label { key: %d num: %d%s }" % (
        i(k), n, " num_unit: %d" % i(u) if u else "")
    for locs, values, labels in (
            ([1, 2, 3], [1, 100], [label_s("phase", "alpha"), label_n("bytes", 4096, "bytes"),
                                  label_n("bytes", 8192, "bytes")]),
            ([1, 2, 3], [2, 200], [label_s("phase", "beta")]),
            ([1, 2, 3], [3, 300], []),
            ([4, 3], [4, 400], [label_n("request", 7, None)]),
            ([5, 3], [5, 500], [label_s("phase", "alpha")])):
        lines.append("sample { %s %s %s }\n" % (" ".join("location_id: %d" % l for l in locs),
                                              " ".join("value: %d" % v for v in values),
                                              " ".join(labels)))
    mapping = ("mapping { id: %d memory_start: %d memory_limit: %d file_offset: %d filename: %d"
               " build_id: %d has_functions: %s has_filenames: %s has_line_numbers: %s"
               " has_inline_frames: %s }\n")
    lines += [mapping % (1, 0x400000, 0x500000, 0, i("/opt/prog"), i("0badc0de"), "true", "true",
                         "true", "true"),
              mapping % (2, 0x7f0000001000, 0x7f0000100000, 0x1000, i("/lib/libx.so.1"), 0,
                         "true", "false", "false", "false"),
              mapping % (3, 0x1000, 0x2000, 0, i("[vdso]"), 0, "false", "false", "true",
                         "false"),
              mapping % (4, 0x3000, 0x4000, 0, i("[vsyscall]"), 0, "false", "false", "false",
                         "false")]
    line = lambda f, n, c: "line { function_id: %d line: %d column: %d }" % (f, n, c)
    lines += ["location { id: 1 mapping_id: 2 address: %d %s is_folded: true }\n" %
              (0x7f0000001234, line(1, 10, 3)),
              "location { id: 2 mapping_id: 1 address: %d %s %s }\n" %
              (0x401000, line(2, 20, 5), line(3, 30, 0)),
              "location { id: 3 mapping_id: 1 address: %d %s }\n" % (0x400100, line(4, 40, 0)),
              "location { id: 4 line { function_id: 5 } }\n",
              "location { id: 5 mapping_id: 3 address: %d }\n" % 0x1080]
    fn = "function { id: %d name: %d system_name: %d filename: %d start_line: %d }\n"
    lines += [fn % (1, i("Foo<int>::bar()"), i("_ZN3FooIiE3barEv"), i("foo.h"), 8),
              fn % (2, i("main.work"), i("main.work"), i("work.go"), 18),
              fn % (3, i("main.helper"), i("main.helper"), i("work.go"), 28),
              fn % (4, i("main.main"), i("main.main"), i("main.go"), 38),
              "function { id: 5 name: %d }\n" % i("no system name")]
    lines += ["drop_frames: %d\nkeep_frames: %d\n" % (i("^runtime\\."), i("^runtime\\.main$")),
              "time_nanos: 1700000000123456789\nduration_nanos: 2500000000\n",
              "period_type { type: %d unit: %d }\nperiod: 10000000\n" % (i("cpu"),
                                                                       i("nanoseconds")),
              "comment: %d\ncomment: %d\n" % (i("first comment"), i("second, ünïcode")),
              "doc_url: %d\n" % i("https://example.com/doc")]
    return "".join(lines)


def quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@case
def every_field(d):
    """Every field of profile.proto, set: protoc --decode and go tool pprof
    -raw see the same profile after `ember convert --to pprof`."""
    if not shutil.which("protoc"):
        print("  skip: no protoc")
        return
    strings = []
    body = text_profile(strings)
    text = body + "".join("string_table: %s\n" % quote(x) for x in strings)
    p = subprocess.run(["protoc", "--encode=perftools.profiles.Profile", "-I", PROTO,
                        os.path.join(PROTO, "profile.proto")], input=text.encode(),
                       capture_output=True)
    if p.returncode != 0:
        golden.fail("protoc --encode: " + p.stderr.decode())
    src, back = os.path.join(d, "all.pb.gz"), os.path.join(d, "all.ember.pb.gz")
    with open(src, "wb") as f:
        f.write(gzip.compress(p.stdout))
    golden.run(["convert", "--to", "pprof", src, "-o", back])
    want, got = normalized(decode(src)), normalized(decode(back))
    for what, x, y in zip(("header fields", "samples", "mappings (in order)"), want, got):
        if x != y:
            golden.fail("every field: %s differ after the round trip:\n want %r\n  got %r" %
                        (what, x, y))
    compare_raw("every field", raw_view(back, d), raw_view(src, d))
    # transforms rebuild the profile: what it says and its labels go along
    # (--focus main.main keeps every stack); two inputs add up, labels kept
    for args in (["--focus", "main.main"], ["--demangle"], [src]):
        out = os.path.join(d, "t.pb.gz")
        golden.run(["convert", "--to", "pprof"] + args + [src, "-o", out])
        head, samples, maps = normalized(decode(out))
        k = 2 if args == [src] else 1
        if (head, maps) != (want[0], want[2]) or samples != {
                key: [k * v for v in values] for key, values in want[1].items()}:
            golden.fail("every field: convert %s: the profile differs:\n want %r\n  got %r" %
                        (" ".join(args), want, (head, samples, maps)))
    print("  every field: %d samples, %d mappings, header %s: the same after the round trip, "
          "a transform, the sum of two" %
          (len(want[1]), len(want[2]), sorted(k for k, v in want[0].items() if v)))


# ---- perf.data: the event's period, the main program first ----------------

def perf_reference(data):
    """What perf says of a recording: (the event's period as pprof's
    Period, its unit's word, the main program's map (start, limit, offset,
    path)): perf report's header for the event; perf script's samples per
    process and the first executable file each maps after its exec."""
    head = subprocess.run(["perf", "report", "-i", data, "--header-only"], capture_output=True,
                          text=True).stdout
    ev = re.search(r"^# event : name = ([^,]+),.*\{ sample_period, sample_freq \} = (\d+),.*$",
                   head, re.M)
    if not ev:
        golden.fail("perf report --header-only: no event line:\n" + head[:1500])
    clock = re.match(r"(cpu|task)-clock", ev.group(1)) is not None
    freq = re.search(r", freq = 1(?:,|$)", ev.group(0)) is not None
    period = int(ev.group(2))
    period = (1000000000 // period if clock else 0) if freq else period
    text = subprocess.run(["perf", "script", "-i", data, "--show-mmap-events",
                           "--show-task-events", "-F", "pid,event"], capture_output=True,
                          text=True).stdout
    samples, exe = collections.Counter(), {}
    for line in text.splitlines():
        m = re.match(r"^\s*(\d+)\s+(.*)$", line)
        if not m:
            continue
        pid, rest = int(m.group(1)), m.group(2)
        if rest.startswith("PERF_RECORD_COMM exec"):
            exe.pop(pid, None)
        mm = re.match(r"PERF_RECORD_MMAP2 \d+/\d+: \[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ "
                      r"(0x[0-9a-f]+|0) .*\]: r-xp (/\S+)$", rest)
        if mm and pid not in exe:
            start, size = int(mm.group(1), 16), int(mm.group(2), 16)
            exe[pid] = (start, start + size, int(mm.group(3), 16), mm.group(4))
        elif not rest.startswith("PERF_RECORD"):
            samples[pid] += 1
    busiest = max((p for p in samples if p in exe), key=lambda p: samples[p])
    return ev.group(1), period, clock, exe[busiest]


def check_perf(d, data, name):
    event, period, clock, (start, limit, offset, path) = perf_reference(data)
    pb = os.path.join(d, name + ".pb.gz")
    golden.run(["convert", "--to", "pprof", data, "-o", pb])
    head, _, _, maps = raw_view(pb, d)
    base = re.sub(r"[:/].*", "", event)
    ptype = "cpu nanoseconds" if clock else base + " count"
    if head[:2] != ["PeriodType: " + ptype, "Period: %d" % period]:
        golden.fail("%s: pprof says %r, perf's event %s: PeriodType %s, Period %d" %
                    (name, head[:2], event, ptype, period))
    first = re.match(r"^(0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S+)", maps[0])
    if not first or (int(first.group(1), 16), int(first.group(2), 16), int(first.group(3), 16),
                     first.group(4)) != (start, limit, offset, path):
        golden.fail("%s: the first mapping %r, perf's busiest process maps %s at %#x-%#x @%#x" %
                    (name, maps[0], path, start, limit, offset))
    top = golden.go(["tool", "pprof", "-top", pb], d).splitlines()[0]
    if top != "File: " + os.path.basename(path):
        golden.fail("%s: go tool pprof -top says %r" % (name, top))
    if any(os.path.basename(data) in m for m in maps):
        golden.fail("%s: a mapping is named after the input: %r" % (name, maps))
    # perf script's text says less (no exec, no maps): the program that the
    # most samples run in, none (no "File:") when no sample runs in it
    text = os.path.join(d, name + ".txt")
    with open(text, "w") as f:
        subprocess.run(["perf", "script", "-i", data], stdout=f, check=True)
    golden.run(["convert", "--to", "pprof", text, "-o", pb])
    top = golden.go(["tool", "pprof", "-top", pb], d).splitlines()[0]
    want = "File: " + os.path.basename(path) if "(%s)" % path in open(text).read() else None
    if (want and top != want) or (not want and top.startswith("File:")):
        golden.fail("%s: perf script | convert --to pprof: go tool pprof -top says %r, "
                    "expected %r" % (name, top, want or "no File:"))
    print("  %s: PeriodType %s, Period %d, File: %s" % (name, ptype, period,
                                                        os.path.basename(path)))


@case
def perf_data(d):
    """perf.data to pprof: the event's period, the main program first."""
    if not shutil.which("perf"):
        print("  skip: no perf")
        return
    check_perf(d, CORPUS_SEED, "true-fp")
    cc = shutil.which("cc") or shutil.which("gcc")
    prog = os.path.join(d, "spin")
    with open(prog + ".c", "w") as f:
        f.write("volatile unsigned long s;\nint main(void) { for (unsigned long i = 0; "
                "i < 300000000UL; i++) s += i; return 0; }\n")
    if not cc or subprocess.run([cc, "-O1", "-o", prog, prog + ".c"]).returncode:
        print("  skip: no C compiler: recordings not made")
        return
    for name, args in (("fixed", ["-e", "cpu-clock", "-c", "100000"]),
                       ("faults", ["-e", "page-faults", "-c", "3"]),
                       ("child", ["-e", "cpu-clock", "-F", "999", "--", "/bin/sh", "-c",
                                  prog + "; true"])):
        data = os.path.join(d, name + ".data")
        cmd = ["perf", "record", "-q", "-g", "-o", data] + args
        p = subprocess.run(cmd + ([] if "--" in args else ["--", prog]), capture_output=True)
        if p.returncode != 0:
            print("  skip: perf record cannot record here: %s" % p.stderr.decode()[:200])
            return
        check_perf(d, data, name)


if __name__ == "__main__":
    main()
