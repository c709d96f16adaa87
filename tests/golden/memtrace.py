"""memtrace traces (.ctf) read by ember's commands, against the numbers of
memtrace's own reader (the shared corpus's *.expected.txt), and bad input:
a cut trace is read up to the cut with a warning naming the packet; a
corrupt one is an error naming the packet, its byte offset and what was
expected, with no output file.

usage: memtrace.py WORKDIR MEMTRACE_DUMP
"""
import os
import re
import struct
import subprocess
import sys

import golden

case, main = golden.cases()
DUMP = sys.argv[2] if len(sys.argv) > 2 else "memtrace_dump"
MT = os.path.join(golden.CORPUS, "memtrace")
TRACES = ["steady", "leak", "leak_ext", "deep", "long"]


def expected(name):
    """The header of NAME.expected.txt as {key: value}."""
    out = {}
    with open(os.path.join(MT, name + ".expected.txt")) as f:
        for line in f:
            if line.startswith("=="):
                break
            key, sep, value = line.rstrip("\n").partition(": ")
            if sep:
                out[key] = value
    return out


def trace(name):
    return os.path.join(MT, name + ".ctf")


def collapse_total(path, event, extra=()):
    out, _, _ = golden.run(["collapse", "--event", event, *extra, path])
    return sum(golden.folded_dict(out).values()), out


def by_leaf(folded):
    sums = {}
    for stack, n in golden.folded_dict(folded).items():
        leaf = stack.split(";")[-1]
        sums[leaf] = sums.get(leaf, 0) + n
    return sums


@case
def totals_equal_memtrace(d):
    """Every value's total, for each trace, is memtrace's number."""
    for name in TRACES:
        e = expected(name)
        want = {"samples": int(e["total_samples"]), "words": int(e["total_words"]),
                "live_samples": int(e["live_samples"]), "live_words": int(e["live_words"])}
        want["bytes"] = want["words"] * int(e["word_size"]) // 8
        want["live_bytes"] = want["live_words"] * int(e["word_size"]) // 8
        for event, n in want.items():
            got, _ = collapse_total(trace(name), event)
            if got != n:
                golden.fail("%s --event %s: total %d, memtrace says %d" % (name, event, got, n))
        out, _, _ = golden.run(["report", trace(name)])
        if ("total %d samples" % want["samples"]).encode() not in out:
            golden.fail("%s: report's total is not %d samples:\n%s" %
                        (name, want["samples"], out[:300].decode()))


@case
def sources_as_frames(d):
    """--memtrace-source: each source's samples and words under its frame."""
    for name in ["leak_ext", "deep"]:
        e = expected(name)
        for event, field in [("samples", 1), ("words", 2)]:
            _, out = collapse_total(trace(name), event, ["--memtrace-source"])
            roots = {}
            for stack, n in golden.folded_dict(out).items():
                root = stack.split(";")[0]
                roots[root] = roots.get(root, 0) + n
            for src in ["minor", "major", "external"]:
                fields = re.findall(r"\d+", e["alloc_" + src])
                if roots.get("[%s]" % src, 0) != int(fields[field]):
                    golden.fail("%s [%s] %s: %s, memtrace says %s" %
                                (name, src, event, roots.get("[%s]" % src), fields[field]))


@case
def steady_split(d):
    """steady's 60/30/10 by site, in samples (the default), and in the report."""
    _, out = collapse_total(trace("steady"), "samples")
    leaves = by_leaf(out)
    want = {"Steady.path_a": 60162, "Steady.path_b": 29764, "Steady.path_c": 9938}
    if leaves != want:
        golden.fail("steady by site: %s, memtrace says %s" % (leaves, want))
    rep, _, _ = golden.run(["report", trace("steady")])
    for line in [b"60162  60.24%", b"29764  29.80%", b"9938   9.95%"]:
        if line not in rep:
            golden.fail("steady report lacks %r:\n%s" % (line, rep.decode()))


@case
def leak_live(d):
    """leak: what is live at the end is exactly the three leak_step sites."""
    e = expected("leak")
    _, out = collapse_total(trace("leak"), "live_bytes")
    stacks = golden.folded_dict(out)
    if set(s.split(";")[-1] for s in stacks) != {"Leak.leak_step"}:
        golden.fail("leak: live stacks other than leak_step's: %s" % list(stacks))
    if sum(stacks.values()) != int(e["live_words"]) * 8:
        golden.fail("leak: live bytes %d, memtrace says %d words" %
                    (sum(stacks.values()), int(e["live_words"])))
    svg = os.path.join(d, "leak.svg")
    golden.run(["flamegraph", "--event", "live_bytes", trace("leak"), "-o", svg])
    text = open(svg, encoding="utf-8").read()
    if "Leak.leak_step" not in text or "make_garbage" in text:
        golden.fail("leak.svg (live_bytes) should show leak_step and no make_garbage")
    rep, _, _ = golden.run(["report", "--event", "live_bytes", trace("leak")])
    if not re.search(rb"1\.44 MiB 100\.00% 100\.00%\s+1\.44 MiB 100\.00%\s+Leak\.leak_step", rep):
        golden.fail("leak report (live_bytes) should give leak_step all:\n" + rep.decode())


@case
def inlined_frames(d):
    """deep's inlined pair: one code, two frames, the inner one inlined."""
    _, out = collapse_total(trace("deep"), "samples")
    if not any(s.endswith("Deep.via_inline;Deep.inlined_pair") for s in golden.folded_dict(out)):
        golden.fail("deep: no stack ends in Deep.via_inline;Deep.inlined_pair")


def profile(path, *window):
    p = subprocess.run([DUMP, "--profile", path, *map(str, window)], capture_output=True)
    if p.returncode != 0:
        golden.fail("memtrace_dump --profile %s: %s" % (path, p.stderr.decode()))
    lines = p.stdout.decode().splitlines()
    vals = {l.split()[0]: int(l.split()[1]) for l in lines[:6]}
    return vals, lines[6:]


@case
def window_and_counter(d):
    """--from/--to keep the allocations made in the window (steady's first
    five, from memtrace's own first event lines); the heap counter ends at
    the live bytes, at most two points a millisecond; the meta's times."""
    vals, rest = profile(trace("steady"), 0, 366000)
    if vals != {"samples": 5, "words": 34, "bytes": 272, "live_samples": 5, "live_words": 34,
                "live_bytes": 272}:
        golden.fail("steady [0, 366 us): %s, memtrace's first lines say 5 samples, 34 words" % vals)
    vals, _ = profile(trace("steady"), 353000, 366000)
    if vals["samples"] != 4 or vals["words"] != 20:
        golden.fail("steady [353, 366 us): %s, expected 4 samples of 5 words" % vals)
    # the same through the command line's --from/--to
    for window, samples, words in [(["--to", "366us"], 5, 34),
                                   (["--from", "353us", "--to", "0.366ms"], 4, 20)]:
        got = [collapse_total(trace("steady"), ev, window)[0] for ev in ["samples", "words"]]
        if got != [samples, words]:
            golden.fail("steady %s: %s, expected %d samples, %d words" %
                        (" ".join(window), got, samples, words))
    for name in ["leak", "long"]:
        e = expected(name)
        full, rest = profile(trace(name))
        cut = int(e["last_event_dt_us"]) * 500  # half way, in ns
        a, _ = profile(trace(name), 0, cut)
        b, _ = profile(trace(name), cut, 0)
        if a["samples"] + b["samples"] != full["samples"] or a["words"] + b["words"] != full["words"]:
            golden.fail("%s: the two halves %s + %s are not the whole %s" % (name, a, b, full))
        if b["live_samples"] > full["live_samples"] or a["live_samples"] < 0:
            golden.fail("%s: live in the second half exceeds the whole" % name)
        m = re.match(r"counter heap bytes points (\d+) most_per_ms (\d+) peak (\d+) at_ns "
                     r"(\d+) last (-?\d+)", rest[0])
        if not m or int(m.group(5)) != int(e["live_words"]) * 8 or int(m.group(2)) > 2:
            golden.fail("%s: heap counter %s; expected it to end at %d bytes" %
                        (name, rest[0], int(e["live_words"]) * 8))
        if rest[1] != "time_nanos %d duration_nanos %d" % (int(e["start_time_us"]) * 1000,
                                                         int(e["last_event_dt_us"]) * 1000):
            golden.fail("%s: meta %s" % (name, rest[1]))
        if e["context"] not in rest[2] or "sample_rate %s" % e["sample_rate"] not in rest[2]:
            golden.fail("%s: comment %s" % (name, rest[2]))


def packets(data):
    """[(offset, size)] of a trace's packets, by their headers."""
    out, at = [], 0
    while at + 8 <= len(data):
        magic, bits = struct.unpack_from("<II", data, at)
        if magic != 0xc1fc1fc1 or bits < 8:
            break
        out.append((at, bits // 8))
        at += bits // 8
    return out


def ember(args):
    p = subprocess.run([golden.EMBER] + args, capture_output=True, timeout=120)
    err = p.stderr.decode(errors="replace")
    if p.returncode < 0 or "Sanitizer" in err or "runtime error" in err:
        golden.fail("ember %s crashed (%d):\n%s" % (" ".join(args), p.returncode, err))
    return p.returncode, p.stdout, err


def expect_error(d, data, name, *needles):
    path = os.path.join(d, name + ".ctf")
    with open(path, "wb") as f:
        f.write(data)
    out = os.path.join(d, name + ".svg")
    rc, _, err = ember(["flamegraph", path, "-o", out])
    if rc != 1 or os.path.exists(out):
        golden.fail("%s: expected exit 1 and no %s, got %d:\n%s" % (name, out, rc, err))
    for n in (path + ":",) + needles:
        if n not in err:
            golden.fail("%s: expected %r in the message, got:\n%s" % (name, n, err))


def steady_bytes():
    with open(trace("steady"), "rb") as f:
        return f.read()


def event_packets(data):
    """The packets with allocations (alloc_id_end > alloc_id_begin)."""
    out = []
    for o, s in packets(data)[1:]:
        begin, end = struct.unpack_from("<QQ", data, o + 50)
        if end > begin:
            out.append((o, s))
    return out


@case
def cut_trace(d):
    """A trace cut inside packet 10 reads the 9 before it, with a warning
    naming the packet; the totals are those of the 9 whole packets."""
    data = steady_bytes()
    off, size = packets(data)[9]
    whole = os.path.join(d, "whole9.ctf")
    cut = os.path.join(d, "cut.ctf")
    open(whole, "wb").write(data[:off])
    open(cut, "wb").write(data[:off + size // 2])
    rc, a, err = ember(["collapse", whole])
    if rc != 0 or err:
        golden.fail("steady cut between packets: %d %s" % (rc, err))
    rc, b, err = ember(["collapse", cut])
    want = "truncated input: expected %d bytes (the packet's size in its header), found %d; " \
           "9 packets before it read (the input ends inside packet 10 at byte %d)" % (
               size, size // 2, off)
    if rc != 0 or want not in err or cut not in err:
        golden.fail("steady cut in packet 10: exit %d, expected the warning %r, got:\n%s" %
                    (rc, want, err))
    if a != b or not a:
        golden.fail("steady cut in packet 10: not the 9 whole packets' stacks")
    expect_error(d, data[:40], "cut_first", "truncated input", "packet 1 at byte 0")


@case
def corrupt_packets(d):
    data = steady_bytes()
    pk = packets(data)
    ev = event_packets(data)
    # bad magic
    b = bytearray(data)
    b[pk[2][0]] = 0
    expect_error(d, bytes(b), "magic", "memtrace packet 3 at byte %d: expected the packet magic "
                 "0xc1fc1fc1, found 0xc1fc1f00" % pk[2][0])
    # bad size
    b = bytearray(data)
    struct.pack_into("<I", b, pk[4][0] + 4, 8)
    expect_error(d, bytes(b), "size", "memtrace packet 5 at byte %d: packet size 1 bytes: "
                 "expected 66 (its header) to" % (pk[4][0] + 4))
    # unknown event code in the first packet with allocations
    o, _ = ev[0]
    n = pk.index(ev[0]) + 1
    b = bytearray(data)
    hdr = struct.unpack_from("<I", b, o + 66)[0]
    struct.pack_into("<I", b, o + 66, (77 << 25) | (hdr & 0x1ffffff))
    expect_error(d, bytes(b), "code", "memtrace packet %d at byte %d: event code 77: expected 1 "
                 "(location)" % (n, o + 66))
    # a location code used before any location event defined it: the
    # location-only packets before the first allocation left out (they
    # carry no allocation, so the ids still follow)
    if pk.index(ev[0]) < 2:
        golden.fail("steady: no location packet before the first allocations")
    b = data[:pk[1][0]] + data[ev[0][0]:]
    expect_error(d, b, "undefined", "memtrace packet 2 at byte ",
                 "used before a location event defined it")
    # a cache verifier that does not match
    checked = [p for p in ev if struct.unpack_from("<H", data, p[0] + 38)[0] != 0xffff]
    o, _ = checked[0]
    b = bytearray(data)
    b[o + 42] ^= 0xff
    expect_error(d, bytes(b), "verifier", "memtrace packet %d at byte %d: backtrace cache "
                 "verifier" % (pk.index(checked[0]) + 1, o + 38), "does not match")


@case
def other_ctf_not_claimed(d):
    """A CTF packet with memtrace's magic (ember's own CTF has it) but no
    trace-info event at its start time is not taken for a memtrace trace."""
    b = bytearray(steady_bytes()[:4096])
    struct.pack_into("<Q", b, 8, struct.unpack_from("<Q", b, 8)[0] + 1)
    path = os.path.join(d, "other.ctf")
    open(path, "wb").write(bytes(b))
    rc, _, err = ember(["collapse", path])
    if rc != 1 or "unknown profile format" not in err:
        golden.fail("a CTF packet not memtrace's: %d\n%s" % (rc, err))


@case
def long_backtrace_repeated(d):
    """A backtrace of 1,024,001 frames (4,000 codewords predicting 255 each)
    repeated by 50,000 allocations of 10 bytes each (common prefix = all):
    read in time linear in the input, never in frames x allocations."""
    t0 = 1700000000000000

    def header(size, id0, id1):
        return struct.pack("<IIQQIHQHHQQQ", 0xc1fc1fc1, size * 8, t0, t0, 0, 2, 7, 0xffff, 0,
                           0, id0, id1)

    def ev(code):
        return struct.pack("<I", code << 25 | (t0 & 0x1ffffff))

    info = ev(0) + struct.pack("<dB", 1e-3, 64) + b"x\0h\0p\0" + struct.pack("<Q", 7) + b"\0"
    loc = ev(1) + struct.pack("<QB", 0x1234, 0)
    bt = struct.pack("<HQ", 5 << 2 | 3, 0x1234) + struct.pack("<HB", 5 << 2 | 2, 255) * 4000
    evs = ev(2) + bytes([5, 1, 0, 0]) + struct.pack("<H", 4001) + bt
    evs += (ev(101) + bytes([254]) + struct.pack("<I", 4000 * 256 + 1) + bytes([0])) * 50000
    data = (header(66 + len(info), 0, 0) + info + header(66 + len(loc), 0, 0) + loc +
            header(66 + len(evs), 0, 50001) + evs)
    path = os.path.join(d, "deep.ctf")
    open(path, "wb").write(data)
    rc, out, err = ember(["collapse", path])
    stacks = golden.folded_dict(out)
    if rc != 0 or len(stacks) != 1 or list(stacks.values()) != [50001] or \
            list(stacks)[0].count(";") != 4000 * 256:
        golden.fail("a repeated 1,024,001-frame backtrace: %d %s" % (rc, err))


@case
def skipped_packets(d):
    """A packet written twice (a replay: out of order) and one of another
    process (a fork's child writing to the same file: here the last one)
    are skipped as memtrace's reader skips them, with a warning each; the
    stacks are those of the other packets."""
    data = steady_bytes()
    pk = packets(data)
    (o, s), (last, _) = event_packets(data)[2], pk[-1]
    n = pk.index((o, s)) + 1
    other = bytearray(data[last:])
    struct.pack_into("<Q", other, 30, 99999)
    path = os.path.join(d, "replayed.ctf")
    open(path, "wb").write(data[:o + s] + data[o:o + s] + data[o + s:last] + bytes(other))
    short = os.path.join(d, "short.ctf")
    open(short, "wb").write(data[:last])
    rc, got, err = ember(["collapse", path])
    _, want, _ = ember(["collapse", short])
    for needle in ["memtrace packet %d at byte %d skipped, as memtrace does: it begins at" %
                   (n + 1, o + s), "memtrace packet %d at byte %d skipped, as memtrace does: it "
                   "was written by process 99999, the trace is of" % (len(pk) + 1, last + s)]:
        if needle not in err:
            golden.fail("skipped packets: expected %r, got:\n%s" % (needle, err))
    if rc != 0 or got != want:
        golden.fail("skipped packets: exit %d, or stacks other than the other packets'" % rc)

if __name__ == "__main__":
    main()
