"""OCaml 5 runtime_events files (../shared/corpus/ocaml5/runtime-events):
`ember trace dump --format ocaml` prints what OCaml's own consumer library
printed for each (its *.expected.txt), byte for byte, lost words included;
the other tools read them with the same counts, warning of the words lost.
Their exports are read by their real clients: protoc decodes the Perfetto
export (a track per domain, counters on counter tracks, user spans as
slices), json the Chrome one, babeltrace2 the CTF one (written by ember:
runtime_events files have no CTF packets), each with the dump's events.
Damaged files (not runtime_events, another version, offsets outside the
file, cut short, a bad ring or message) give one clear error naming the
file and what is wrong, exit 1, and no output.

usage: ocaml.py WORKDIR
"""
import collections
import json
import os
import re
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402

FIXTURES = ("alloc", "alloc-killed", "custom", "domains", "domains-wrapped")
TOOLS = (["dump"], ["dump", "--format", "ocaml"], ["stats"], ["latency"],
         ["export", "--format", "chrome"], ["export", "--format", "perfetto"])


def ember(args, timeout=120):
    p = subprocess.run([golden.EMBER] + args, capture_output=True, timeout=timeout)
    err = p.stderr.decode(errors="replace")
    if p.returncode < 0 or "Sanitizer" in err or "runtime error" in err:
        golden.fail("ember %s crashed (%d):\n%s" % (" ".join(args), p.returncode, err[-3000:]))
    return p.returncode, p.stdout, err


def expected_counts(text):
    """Events per ring and lost words per ring from an expected.txt."""
    events, lost = collections.Counter(), collections.Counter()
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        f = line.split("\t")
        if f[2] == "LOST_WORDS":
            lost[int(f[0])] += int(f[5])
        else:
            events[int(f[0])] += 1
    return events, lost


def check_fixture(d, name):
    path = os.path.join(d, name + ".events")
    want = open(os.path.join(d, name + ".expected.txt"), "rb").read()
    rc, out, err = ember(["trace", "dump", "--format", "ocaml", path])
    if rc != 0 or out != want:
        got, exp = out.decode().splitlines(), want.decode().splitlines()
        diff = next((i for i, (a, b) in enumerate(zip(got, exp)) if a != b), min(len(got), len(exp)))
        golden.fail("%s: dump --format ocaml differs from OCaml's consumer at line %d:\n"
                    "  ember: %r\n  ocaml: %r\n%s" % (name, diff + 1, got[diff:diff + 1],
                                                      exp[diff:diff + 1], err))
    events, lost = expected_counts(want.decode())
    rc, out, err = ember(["trace", "dump", path])
    per_ring = collections.Counter(int(l.split()[1]) for l in out.decode().splitlines())
    if rc != 0 or per_ring != events:
        golden.fail("%s: dump has %r events per ring, OCaml's consumer %r" % (name, per_ring, events))
    for ring, words in lost.items():
        if "ring %d (domain-%d): %d words lost" % (ring, ring, words) not in err:
            golden.fail("%s: no warning of the %d words ring %d lost:\n%s" % (name, words, ring, err))
    if not lost and "lost" in err:
        golden.fail("%s: nothing was lost, ember says:\n%s" % (name, err))
    for tool in TOOLS[2:]:
        rc, out, err = ember(["trace"] + tool + [path])
        if rc != 0 or not out:
            golden.fail("%s: %s: exit %d\n%s" % (name, " ".join(tool), rc, err))
    print("ok %s: %d events, byte for byte as OCaml's consumer; %d lost words warned" %
          (name, sum(events.values()), sum(lost.values())))


HERE = os.path.dirname(os.path.abspath(__file__))


def dump_kinds(path):
    """Events per (ring, kind, name) from the generic dump."""
    rc, out, err = ember(["trace", "dump", path])
    kinds = collections.Counter()
    for line in out.decode().splitlines():
        f = line.split()
        kinds[(int(f[1]), f[3], f[4])] += 1
    return kinds


def check_perfetto(d, work, name):
    path, pb = os.path.join(d, name + ".events"), os.path.join(work, name + ".pb")
    rc, _, err = ember(["trace", "export", "--format", "perfetto", path, "-o", pb])
    with open(pb, "rb") as f:
        p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "--proto_path=" + HERE,
                            "perfetto_subset.proto"], stdin=f, capture_output=True, text=True)
    if rc != 0 or p.returncode != 0:
        golden.fail("%s: protoc could not decode the Perfetto export:\n%s%s" % (name, err, p.stderr))
    kinds = dump_kinds(path)
    rings = sorted({r for r, _, _ in kinds})
    threads = re.findall(r"tid: (\d+)\s+thread_name: \"([^\"]*)\"", p.stdout)
    if threads != [(str(r), "domain-%d" % r) for r in rings]:
        golden.fail("%s: Perfetto thread tracks %r, the dump has rings %r" % (name, threads, rings))
    counters = collections.Counter(re.findall(
        r'name: "([^"]*)"\s+parent_uuid: \d+\s+counter \{', p.stdout))
    want = collections.Counter(n for (r, k, n) in kinds if k == "counter")
    if counters != collections.Counter({n: len({r for (r, k, m) in kinds if m == n and k == "counter"})
                                        for n in want}):
        golden.fail("%s: counter tracks %r, the dump's counters %r" % (name, counters, want))
    types = collections.Counter(re.findall(r"type: TYPE_(\w+)", p.stdout))
    total = lambda kind: sum(v for (r, k, n), v in kinds.items() if k == kind)
    if types["COUNTER"] != total("counter") or types["INSTANT"] != total("instant") + \
            total("event") or types["SLICE_BEGIN"] != types["SLICE_END"] or \
            types["SLICE_BEGIN"] < min(total("begin"), total("end")) - 1:
        golden.fail("%s: Perfetto events %r, the dump %r" % (name, dict(types), kinds))
    return p.stdout, types


def check_exports(d, work):
    out, types = check_perfetto(d, work, "domains")
    _, utypes = check_perfetto(d, work, "custom")
    kinds = dump_kinds(os.path.join(d, "custom.events"))
    if kinds[(0, "begin", "fixture.batch")] != 1000 or kinds[(0, "counter", "fixture.items")] != 1000:
        golden.fail("custom: user spans and ints %r" % kinds)
    js = os.path.join(work, "custom.json")
    rc, _, err = ember(["trace", "export", "--format", "chrome", os.path.join(d, "custom.events"),
                        "-o", js])
    events = json.load(open(js))["traceEvents"]
    batches = [e for e in events if e.get("name") == "fixture.batch"]
    notes = [e for e in events if e.get("name") == "fixture.note"]
    if rc != 0 or len(batches) != 2000 or len(notes) != 11 or \
            notes[-1]["args"]["data"] != "finished":
        golden.fail("custom: Chrome export: %d batch B/E, %d notes %r" %
                    (len(batches), len(notes), notes[-1:]))
    for name in ("domains", "custom", "domains-wrapped"):
        ctf = os.path.join(work, name + ".ctf")
        rc, _, err = ember(["trace", "export", "--format", "ctf", os.path.join(d, name + ".events"),
                            "-o", ctf])
        babel = subprocess.run(["babeltrace2", ctf], capture_output=True, text=True)
        want = sum(dump_kinds(os.path.join(d, name + ".events")).values())
        if rc != 0 or babel.returncode != 0 or len(babel.stdout.splitlines()) != want:
            golden.fail("%s: CTF: exit %d, babeltrace2 %d with %d events (the dump %d):\n%s%s" %
                        (name, rc, babel.returncode, len(babel.stdout.splitlines()), want, err,
                         babel.stderr[-800:]))
        shutil.rmtree(ctf)
    print("ok exports: protoc decodes Perfetto (domains: %d slices, %d counters on their tracks; "
          "custom: %d slices with its 1000 user spans), Chrome has the user events, babeltrace2 "
          "reads the CTF" % (types["SLICE_BEGIN"], types["COUNTER"], utypes["SLICE_BEGIN"]))


def ocaml_escaped(b):
    """OCaml's String.escaped."""
    esc = {ord('"'): '\\"', ord('\\'): '\\\\', ord('\n'): '\\n', ord('\t'): '\\t',
           ord('\r'): '\\r', ord('\b'): '\\b'}
    return "".join(esc.get(c) or (chr(c) if 32 <= c <= 126 else "\\%03d" % c) for c in b)


def ocaml_int(v):
    """Val_long of a 64-bit word: OCaml's 63-bit int."""
    v = (v << 1) & (2**64 - 1)
    return (v - 2**64 if v >> 63 else v) >> 1


def message(length, user, typ, ident):
    return length << 54 | user << 53 | typ << 49 | ident << 36


def check_synthetic(work):
    """A runtime_events file written here, with what the fixtures lack: an
    allocation event, custom payloads that String.escaped escapes, OCaml
    ints with bit 62 set, lifecycle events with a payload of 0 and none,
    and more distinct messages (user events 0-299, twice) than the
    reader's table of known headers has slots, so that they collide."""
    R, NAMES = 4096, 8192
    data = 64 + 2 * 80
    names_off = data + 2 * R * 8
    rings, want = [[], []], []
    ts = [1000]

    def put(ring, length, user, typ, ident, payload, line):
        ts[0] += 7
        rings[ring] += [message(length, user, typ, ident), ts[0]] + payload
        want.append("%d\t%d\t%s" % (ring, ts[0], line))

    names = {i: "u%d" % i for i in range(300)}
    names.update({300: "note", 301: "tick", 302: "span"})
    put(0, 3, 0, 1, 0, [77], "LIFECYCLE\t0\tring_start\t77")
    put(1, 3, 0, 1, 6, [0], "LIFECYCLE\t6\tdomain_spawn\t-")
    for rep in range(2):
        for i in range(300):
            v = i * 1000 + rep
            put(i % 2, 3, 1, 1, i, [v], "USER_INT\t-\tu%d\t%d" % (i, v))
    payload = b'"\\\n\t\r\b\x01\xffa~ ' + bytes(range(0x7f, 0x83))
    words = (len(payload) + 8) // 8
    buf = bytearray(words * 8)
    buf[:len(payload)] = payload
    buf[-1] = words * 8 - 1 - len(payload)
    put(0, 2 + words, 1, 4, 300, list(struct.unpack("<%dQ" % words, bytes(buf))),
        "USER_CUSTOM\t-\tnote\t" + ocaml_escaped(payload))
    buckets = [i * 3 for i in range(19)] + [1 << 62]
    put(1, 22, 0, 5, 0, buckets,
        "ALLOC\t0\talloc\t" + " ".join(str(ocaml_int(b)) for b in buckets))
    put(0, 3, 0, 4, 5, [(1 << 62) | 5], "COUNTER\t5\tminor_allocated\t%d" % ocaml_int((1 << 62) | 5))
    put(0, 2, 1, 0, 301, [], "USER_UNIT\t-\ttick\t-")
    put(1, 2, 1, 2, 302, [], "USER_SPAN\t-\tspan\tbegin")
    put(1, 2, 1, 3, 302, [], "USER_SPAN\t-\tspan\tend")
    put(0, 3, 0, 1, 2, [0], "LIFECYCLE\t2\tring_pause\t-")
    put(0, 2, 0, 1, 1, [], "LIFECYCLE\t1\tring_stop\t-")
    f = bytearray(names_off + NAMES * 128)
    struct.pack_into("<8Q", f, 0, 1, 2, 80, R * 8, R, 64, data, names_off)
    for i, words in enumerate(rings):
        struct.pack_into("<2Q", f, 64 + i * 80, 0, len(words))
        struct.pack_into("<%dQ" % len(words), f, data + i * R * 8, *words)
    for i, n in names.items():
        f[names_off + i * 128:names_off + i * 128 + len(n)] = n.encode()
    path = os.path.join(work, "synthetic.events")
    with open(path, "wb") as out:
        out.write(f)
    rc, out, err = ember(["trace", "dump", "--format", "ocaml", path])
    got = [l for l in out.decode("latin-1").splitlines() if not l.startswith("#")]
    # OCaml's consumer reads ring by ring
    want = sorted(want, key=lambda l: int(l.split("\t")[0]))
    if rc != 0 or got != want:
        diff = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        golden.fail("synthetic: dump --format ocaml differs at event %d:\n  ember: %r\n  want:  %r\n%s"
                    % (diff + 1, got[diff:diff + 1], want[diff:diff + 1], err))
    rc, out, err = ember(["trace", "dump", "--ticks", path])
    ints = [l.split()[4:6] for l in out.decode("latin-1").splitlines() if l.split()[4].startswith("u")]
    expect = [["u%d" % i, "value=%d" % (i * 1000 + rep)] for rep in range(2) for i in range(300)]
    if rc != 0 or ints != expect:
        golden.fail("synthetic: dump's user ints are not the 600 written:\n%r" % ints[:10])
    print("ok synthetic: %d events (allocations, escapes, 63-bit ints, 303 user events) as "
          "OCaml's consumer reads them" % len(want))


def expect_error(path, *needles):
    out = path + ".out"
    for tool in TOOLS + (["export", "--format", "ctf"],):
        rc, _, err = ember(["trace"] + tool + [path, "-o", out])
        if rc != 1:
            golden.fail("%s on %s: exit %d, expected 1:\n%s" % (" ".join(tool), path, rc, err))
        for n in (path,) + needles:
            if n not in err:
                golden.fail("%s on %s: expected %r in:\n%s" % (" ".join(tool), path, n, err))
        if os.path.exists(out):
            golden.fail("%s on %s left a partial output" % (" ".join(tool), path))
    print("ok %s -> %s" % (os.path.basename(path), err.strip().splitlines()[-1]))


def damaged(src, dst, edit):
    data = bytearray(open(src, "rb").read())
    edit(data)
    with open(dst, "wb") as f:
        f.write(data)
    return dst


def poke(data, off, value):
    struct.pack_into("<Q", data, off, value)


def main():
    work = sys.argv[1]
    d = os.path.join(golden.CORPUS, "ocaml5", "runtime-events")
    if not os.path.isdir(d):
        print("SKIP: no OCaml fixtures in %s" % d)
        sys.exit(77)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for name in FIXTURES:
        check_fixture(d, name)
    check_exports(d, work)
    check_synthetic(work)

    src = os.path.join(d, "alloc-killed.events")
    hdr = struct.unpack_from("<8Q", open(src, "rb").read(64))
    data_off, names_off = hdr[6], hdr[7]
    size = os.path.getsize(src)
    w = lambda name: os.path.join(work, name)
    with open(w("notes.txt"), "w") as f:
        f.write("time tid name\n" * 10)
    expect_error(w("notes.txt"), "no ember trace header", "nor an OCaml runtime_events header")
    shutil.copy(w("notes.txt"), w("notes.events"))
    expect_error(w("notes.events"), "not a valid OCaml runtime_events file: no runtime_events "
                 "header (its first word")
    with open(w("short.events"), "wb") as f:
        f.write(struct.pack("<4Q", 1, 128, 80, 32768))
    expect_error(w("short.events"), "too short for its 64-byte header")
    with open(w("zeros.events"), "wb") as f:
        f.write(bytes(4096))
    expect_error(w("zeros.events"), "its header is all zeros")
    expect_error(damaged(src, w("version.events"), lambda b: poke(b, 0, 2)),
                 "unsupported version 2 (ember reads version 1)")
    expect_error(damaged(src, w("names-outside.events"), lambda b: poke(b, 56, size)),
                 "its header puts data outside the file", "the user-event names at %d" % size)
    expect_error(damaged(src, w("data-overlap.events"), lambda b: poke(b, 48, 128)),
                 "the ring data overlaps the ring headers")
    expect_error(damaged(src, w("ring-size.events"), lambda b: poke(b, 32, 4000)),
                 "ring_size_elements is not a power of two")
    expect_error(damaged(src, w("cut.events"), lambda b: b.__delitem__(slice(size // 2, None))),
                 "cut short at byte %d; its layout ends at byte %d" % (size // 2, size))
    expect_error(damaged(src, w("tail.events"), lambda b: poke(b, 64 + 8, 10)),
                 "ring 0: head 64284 and tail 10 are not a ring's extent")
    head = hdr[6] + (64284 % 4096) * 8  # ring 0's first message
    expect_error(damaged(src, w("msg-length.events"), lambda b: poke(b, head, 0)),
                 "ring 0, word 64284 (header 0x0000000000000000): length 0")
    expect_error(damaged(src, w("msg-type.events"), lambda b: poke(b, head, (2 << 54) | (9 << 49))),
                 "ring 0, word 64284", "an unknown runtime message type")
    expect_error(damaged(src, w("msg-long.events"), lambda b: poke(b, head, (5 << 54) | (2 << 49))),
                 "ring 0, word 64284", "a phase begin or end is 2 words long")
    for f in os.listdir(work):
        os.unlink(os.path.join(work, f))
    print("ok: bad runtime_events files are clear errors")


if __name__ == "__main__":
    main()
