"""Bad trace files: the reader treats them as untrusted. A file that is not
a trace, a damaged header, site table, event or packet log each give a
clear error naming the file (and the ring, thread and packet for damaged
events), exit 1, and no partial output file or directory; hundreds of
randomly damaged copies never crash or hang the reader.

A file cut short (ring file or packet log, at any byte) is no error: every
tool reads every intact packet and the whole events of the packet the cut
goes through, exactly those (checked against a reading of the format
here), warns naming the file and each ring, thread and packet cut, and
exits 0; --follow reads the same. Only a file cut inside its tables is
refused.

usage: bad_trace.py TRACED WORKDIR
"""
import collections
import os
import random
import re
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402

# The ring file's layout (lib/wire/ring_format.h): the header's fields used here.
HEADER = struct.Struct("<QIIIIIIII8Q II")
PACKET_HEADER = 88
DESC_SIZE = 192
CTF_MAGIC = 0xC1FC1FC1


def header(data):
    f = HEADER.unpack_from(data)
    return {"packet_size": f[7], "strings_offset": f[13], "rings_offset": f[15],
            "data_offset": f[16], "ring_count": f[5], "packets_per_ring": f[6],
            "rings_claimed": f[17], "flags": f[8]}


def ember(args, timeout=60):
    p = subprocess.run([golden.EMBER] + args, capture_output=True, timeout=timeout)
    err = p.stderr.decode(errors="replace")
    if p.returncode < 0 or "Sanitizer" in err or "runtime error" in err:
        golden.fail("ember %s crashed (%d):\n%s" % (" ".join(args), p.returncode, err[-3000:]))
    return p.returncode, err


def expect_error(path, *needles):
    """Every reading command fails with the needles; no output is left."""
    out = path + ".out"
    for args in (["trace", "dump", path, "-o", out], ["trace", "stats", path, "-o", out],
                 ["trace", "latency", path, "-o", out],
                 ["trace", "export", "--format", "chrome", path, "-o", out],
                 ["trace", "export", "--format", "perfetto", path, "-o", out],
                 ["trace", "export", "--format", "ctf", path, "-o", out]):
        rc, err = ember(args)
        if rc != 1:
            golden.fail("ember %s: expected exit 1, got %d:\n%s" % (" ".join(args), rc, err))
        for n in (path,) + needles:
            if n not in err:
                golden.fail("ember %s: expected %r in:\n%s" % (" ".join(args), n, err))
        if os.path.exists(out):
            golden.fail("ember %s left a partial %s" % (" ".join(args), out))
    print("ok", os.path.basename(path), "->", err.strip().splitlines()[-1])


def damaged(src, dst, edit):
    data = bytearray(open(src, "rb").read())
    edit(data)
    with open(dst, "wb") as f:
        f.write(data)
    return dst


def poke(data, off, fmt, value):
    struct.pack_into(fmt, data, off, value)


def whole_events(data, off, have):
    """Events wholly in the have bytes of the packet at off: (count, bytes)."""
    at, n = PACKET_HEADER, 0
    while at + 16 <= have:
        size = struct.unpack_from("<I", data, off + at + 4)[0]
        if size > have - at:
            break
        at += size
        n += 1
    return n, at


def ring_file_model(data):
    """What the reader must get from a ring file cut to len(data) bytes:
    {tid: (events, [packet numbers cut])}."""
    h = header(data)
    P, N = h["packet_size"], h["packets_per_ring"]
    out = {}
    for i in range(min(h["rings_claimed"], h["ring_count"])):
        d = h["rings_offset"] + i * DESC_SIZE
        tid, head = struct.unpack_from("<I", data, d)[0], struct.unpack_from("<Q", data, d + 64)[0]
        events, cut = 0, []
        # the oldest slot is left out: a live writer's next packet goes there
        last = (head - 1) // P if head else -1
        for seq in range(max(last + 2 - N, 0), last + 1):
            off = h["data_offset"] + (i * N + seq % N) * P
            size = head - seq * P if seq == last else P
            have = max(0, min(size, len(data) - off))
            if have < PACKET_HEADER:
                cut.append(seq)
                continue
            magic = struct.unpack_from("<I", data, off)[0]
            content, num = struct.unpack_from("<Q", data, off + 40)[0], \
                struct.unpack_from("<Q", data, off + 56)[0]
            if magic != CTF_MAGIC or num != seq:
                continue
            if seq != last:
                size = content // 8
            if size > have:
                cut.append(seq)
                size = have
            events += whole_events(data, off, size)[0]
        out[tid] = (events, cut)
    return out


def log_model(data):
    """The same for a packet log: its records up to the cut, and the
    packets each ring's head says follow the last one it holds."""
    h = header(data)
    P, R = h["packet_size"], h["ring_count"]
    tids = [struct.unpack_from("<I", data, h["rings_offset"] + i * DESC_SIZE)[0] for i in range(R)]
    heads = [struct.unpack_from("<Q", data, h["rings_offset"] + i * DESC_SIZE + 64)[0]
             for i in range(R)]
    out = {tid: [0, []] for tid in tids}
    last = {}
    off = h["data_offset"]
    while off + 8 <= len(data):
        ring, size = struct.unpack_from("<II", data, off)
        have = min(size, len(data) - off - 8)
        if have >= PACKET_HEADER:
            last[ring] = struct.unpack_from("<Q", data, off + 8 + 56)[0]
            out[tids[ring]][0] += whole_events(data, off + 8, have)[0]
        else:  # its number is in the part cut: the next one
            last[ring] = last.get(ring, -1) + 1
        if have < size:
            out[tids[ring]][1].append(last[ring])
        off += 8 + size
    for i in range(R):
        want = (heads[i] - 1) // P if heads[i] else -1
        out[tids[i]][1] += list(range(last.get(i, -1) + 1, want + 1))
    return {tid: (n, cut) for tid, (n, cut) in out.items()}


def dump_by_thread(text):
    lines = collections.defaultdict(list)
    for line in text.splitlines():
        lines[int(line.split()[1])].append(line)
    return lines


def cut_warning(path, tid, cut):
    if len(cut) == 1:
        which = "number %d" % cut[0]
    else:
        which = "numbers %s%d to %d" % ("" if max(cut) - min(cut) + 1 == len(cut) else "between ",
                                        min(cut), max(cut))
    return re.compile(r"%s: ring \d+, thread %d( \([^)]*\))?: %d packets? cut off \(%s\)" % (
        re.escape(path), tid, len(cut), which))


def expect_cut(src, at, full_dump, d, name):
    """The file src cut to at bytes reads as the model says, with warnings
    and exit 0, from every tool."""
    data = open(src, "rb").read()[:at]
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(data)
    is_log = header(data)["flags"] & 0x100
    model = log_model(data) if is_log else ring_file_model(data)
    out = path + ".txt"
    rc, err = ember(["trace", "dump", path, "-o", out])
    if rc != 0 or "%s: cut short at byte %d" % (path, at) not in err:
        golden.fail("%s: dump of a file cut short: exit %d:\n%s" % (name, rc, err))
    got = dump_by_thread(open(out).read())
    for tid, (events, cut) in model.items():
        if len(got.get(tid, [])) != events:
            golden.fail("%s: thread %d: %d events read, %d intact before the cut" %
                        (name, tid, len(got.get(tid, [])), events))
        if not set(got.get(tid, [])) <= set(full_dump[tid]):
            golden.fail("%s: thread %d: events that the whole file does not have" % (name, tid))
        if cut and not cut_warning(path, tid, cut).search(err):
            golden.fail("%s: thread %d: expected a warning of packets %r cut:\n%s" %
                        (name, tid, cut, err))
        if not cut and re.search(r"thread %d\b[^\n]*cut off \(" % tid, err):
            golden.fail("%s: thread %d: nothing of it was cut:\n%s" % (name, tid, err))
    for tool in (["stats"], ["latency"], ["export", "--format", "chrome"],
                 ["export", "--format", "perfetto"]):
        rc, err2 = ember(["trace"] + tool + [path, "-o", path + ".out"])
        if tool == ["latency"] and not any(e for e, _ in model.values()) and rc == 1 and \
                "no spans in the trace" in err2 and "cut short" in err2:
            continue  # nothing left to show, and the warning says why
        if rc != 0 or "cut short" not in err2 or not os.path.getsize(path + ".out"):
            golden.fail("%s: %s of a file cut short: exit %d:\n%s" % (name, tool, rc, err2))
    ctf = path + ".ctf"
    rc, err2 = ember(["trace", "export", "--format", "ctf", path, "-o", ctf])
    babel = subprocess.run(["babeltrace2", ctf], capture_output=True, text=True)
    if rc != 0 or babel.returncode != 0 or \
            len(babel.stdout.splitlines()) != sum(e for e, _ in model.values()):
        golden.fail("%s: CTF of a file cut short: exit %d, babeltrace2 %d with %d events:\n%s%s" %
                    (name, rc, babel.returncode, len(babel.stdout.splitlines()), err2,
                     babel.stderr[-1000:]))
    shutil.rmtree(ctf)
    if not is_log:
        rc, err2 = ember(["trace", "dump", "--follow", path, "-o", out + ".follow"])
        if rc != 0 or err2 != err or open(out + ".follow").read() != open(out).read():
            golden.fail("%s: dump --follow of a file cut short: exit %d:\n%s" % (name, rc, err2))
    cuts = sum(len(c) for _, c in model.values())
    print("ok %s cut at byte %d: %d events read, %d packets cut, exit 0" %
          (name, at, sum(e for e, _ in model.values()), cuts))


def damaged_head(d):
    """A ring file whose head and dropped count are garbage (a fuzzer's
    find: the reader went round the ring forever, then said 2^64 - 1 events
    were lost): it is read to its cut, in well under the timeout, and no
    count is absurd."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "trace-bad",
                       "damaged-head.trace")
    try:
        rc, err = ember(["trace", "dump", src, "-o", os.path.join(d, "damaged.txt")], timeout=20)
    except subprocess.TimeoutExpired:
        golden.fail("a damaged ring head: trace dump did not end within 20 s")
    if rc != 0 or "cut short" not in err or re.search(r"\d{16,} events lost", err):
        golden.fail("a damaged ring head: exit %d, %r" % (rc, err))
    print("ok a damaged ring head is read to its cut")


def main():
    traced, d = sys.argv[1], sys.argv[2]
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    ring = os.path.join(d, "ring.trace")
    env = dict(os.environ, EMBER_TRACE=ring, EMBER_TRACE_RING="16384",
               EMBER_TRACE_PACKET="4096", EMBER_TRACE_THREADS="4")
    subprocess.run([traced, "100", "2"], env=env, check=True, stdout=subprocess.DEVNULL)
    log = os.path.join(d, "log.trace")
    env = dict(os.environ, EMBER_TRACE_PACKET="4096", EMBER_TRACE_THREADS="4")
    subprocess.run([golden.EMBER, "trace", "record", "-o", log, "--", traced, "400", "2"], env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for good in (ring, log):
        rc, err = ember(["trace", "dump", good, "-o", good + ".txt"])
        if rc != 0:
            golden.fail("the undamaged %s should read:\n%s" % (good, err))
    damaged_head(d)
    h = header(open(ring, "rb").read())
    first_event = h["data_offset"] + PACKET_HEADER

    expect_error(damaged(ring, os.path.join(d, "text"), lambda b: b.__setitem__(
        slice(None), b"time tid name\n" * 10)), "no ember trace header")
    expect_error(damaged(ring, os.path.join(d, "empty"), lambda b: b.clear()),
                 "no ember trace header")
    expect_error(damaged(ring, os.path.join(d, "version"), lambda b: poke(b, 8, "<I", 99)),
                 "unsupported version")
    expect_error(damaged(ring, os.path.join(d, "tables-cut"), lambda b: b.__delitem__(
        slice(h["rings_offset"] + 100, None))), "cut short at byte %d, before the end of its "
                 "site and ring tables" % (h["rings_offset"] + 100))
    expect_error(damaged(ring, os.path.join(d, "rings-offset"), lambda b: poke(
        b, 88, "<Q", 2**64 - 8)), "header fields out of range")
    expect_error(damaged(ring, os.path.join(d, "sites"), lambda b: poke(
        b, h["strings_offset"], "<I", 12)), "corrupt site table")
    expect_error(damaged(ring, os.path.join(d, "event-site"), lambda b: poke(
        b, first_event, "<I", 0xFFFFFF)), "a corrupt event in ring 0 (thread ", "packet 0")
    expect_error(damaged(ring, os.path.join(d, "event-size"), lambda b: poke(
        b, first_event + 4, "<I", 12)), "a corrupt event in ring 0")
    log_data = open(log, "rb").read()
    log_h = header(log_data)
    expect_error(damaged(log, os.path.join(d, "log-ring"), lambda b: poke(
        b, log_h["data_offset"], "<I", 77)), "corrupt packet log at byte %d" % log_h["data_offset"])

    # files cut short: the rings of a flight recorder that wrapped (and a
    # log) cut at every kind of place, read up to the cut
    wrap = os.path.join(d, "wrap.trace")
    env = dict(os.environ, EMBER_TRACE=wrap, EMBER_TRACE_RING="16384",
               EMBER_TRACE_PACKET="4096", EMBER_TRACE_THREADS="4")
    subprocess.run([traced, "2000", "2"], env=env, check=True, stdout=subprocess.DEVNULL)
    size, wh = os.path.getsize(wrap), header(open(wrap, "rb").read())
    slot = lambda ring, k: wh["data_offset"] + (ring * wh["packets_per_ring"] + k) * 4096
    full = {}
    for p in (wrap, log):
        if ember(["trace", "dump", p, "-o", p + ".txt"])[0] != 0:
            golden.fail("the undamaged %s should read" % p)
        full[p] = dump_by_thread(open(p + ".txt").read())
    for name, at in (("short-0.2%", size - size // 500), ("slot-boundary", slot(1, 2)),
                     ("mid-packet", slot(1, 1) + 1500), ("mid-event", slot(1, 3) + 88 + 20),
                     ("packet-header", slot(2, 0) + 40), ("no-data", wh["data_offset"])):
        expect_cut(wrap, at, full[wrap], d, "ring-" + name)
    # a damaged event in a closed packet: --follow says the trace is
    # corrupt (it looped on the packet forever, deaf to SIGTERM)
    def damage_closed(b):
        head = struct.unpack_from("<Q", b, wh["rings_offset"] + 64)[0]
        poke(b, slot(0, ((head - 1) // 4096 - 1) % wh["packets_per_ring"]) + PACKET_HEADER,
             "<I", 0xFFFFFF)
    closed = damaged(wrap, os.path.join(d, "closed-damaged"), damage_closed)
    for args in (["dump", "--follow", closed], ["dump", closed]):
        rc, err = ember(["trace"] + args, timeout=20)
        if rc != 1 or closed not in err or "corrupt" not in err:
            golden.fail("ember trace %s: exit %d:\n%s" % (" ".join(args), rc, err))
    # ... and leaves no -o file behind
    out = os.path.join(d, "closed-damaged.follow")
    rc, err = ember(["trace", "dump", "--follow", closed, "-o", out], timeout=20)
    debris = [f for f in os.listdir(d) if f.startswith(".closed-damaged.follow")]
    if rc != 1 or os.path.exists(out) or debris:
        golden.fail("dump --follow -o of a corrupt trace: exit %d, left %s" %
                    (rc, [out] * os.path.exists(out) + debris))
    print("ok a damaged closed packet: dump and dump --follow say it is corrupt")
    records, off = [], log_h["data_offset"]
    while off < len(log_data):
        records.append(off)
        off += 8 + struct.unpack_from("<I", log_data, off + 4)[0]
    for name, at in (("100-bytes", len(log_data) - 100), ("record-boundary", records[-2]),
                     ("packet-header", records[-1] + 8 + 40),
                     ("record-header", records[-3] + 4), ("half", records[len(records) // 2] + 200),
                     ("no-packets", log_h["data_offset"])):
        expect_cut(log, at, full[log], d, "log-" + name)

    # a CTF export replaces an earlier one, never a directory of other files
    ctf = os.path.join(d, "ctf")
    for _ in range(2):
        rc, err = ember(["trace", "export", "--format", "ctf", ring, "-o", ctf])
        if rc != 0 or not os.path.exists(os.path.join(ctf, "metadata")):
            golden.fail("exporting CTF over an earlier export failed:\n" + err)
    mine = os.path.join(d, "mine")
    os.makedirs(mine)
    with open(os.path.join(mine, "notes.txt"), "w") as f:
        f.write("keep me")
    rc, err = ember(["trace", "export", "--format", "ctf", ring, "-o", mine])
    if rc != 1 or "not an earlier result" not in err or os.listdir(mine) != ["notes.txt"]:
        golden.fail("CTF export over a directory of other files: exit %d, %s" % (rc, err))
    if [f for f in os.listdir(d) if f.startswith(".")]:
        golden.fail("temporary directories left: %s" % os.listdir(d))
    print("ok ctf directory replaced only when it is an earlier export")

    # random damage: an error or a reading, never a crash or a hang
    rnd = random.Random(7)
    outcomes = {0: 0, 1: 0}
    for i in range(150):
        src = log if i % 2 else ring
        data = bytearray(open(src, "rb").read())
        if i % 5 == 0:
            del data[rnd.randrange(len(data)):]
        else:
            hot = [0, h["strings_offset"], h["rings_offset"], h["data_offset"]]
            for _ in range(rnd.randint(1, 8)):
                at = rnd.choice(hot) + rnd.randrange(256) if rnd.random() < 0.7 \
                    else rnd.randrange(len(data))
                if at < len(data):
                    data[at] = rnd.randrange(256)
        path = os.path.join(d, "random")
        with open(path, "wb") as f:
            f.write(data)
        for cmd in (["dump"], ["stats"], ["export", "--format", "chrome"]):
            out = path + ".out"
            rc, err = ember(["trace"] + cmd + [path, "-o", out])
            if rc not in (0, 1) or (rc == 1 and path not in err):
                golden.fail("random damage %d, %s: exit %d:\n%s" % (i, cmd, rc, err))
            if rc == 1 and os.path.exists(out):
                golden.fail("random damage %d, %s: partial output left" % (i, cmd))
            if os.path.exists(out):
                os.unlink(out)
            outcomes[rc] += 1
    print("ok random damage: %d read, %d refused" % (outcomes[0], outcomes[1]))


if __name__ == "__main__":
    main()
