"""Bad trace files: the reader treats them as untrusted. A file that is not
a trace, a truncated one, a damaged header, site table, event or packet
log each give a clear error naming the file (and the ring, thread and
packet for damaged events), exit 1, and no partial output file or
directory; hundreds
of randomly damaged copies never crash or hang the reader.

usage: bad_trace.py TRACED WORKDIR
"""
import os
import random
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402

# The ring file's layout (lib/ring/format.h): the header's fields used here.
HEADER = struct.Struct("<QIIIIIIII8Q II")
PACKET_HEADER = 88


def header(data):
    f = HEADER.unpack_from(data)
    return {"packet_size": f[7], "strings_offset": f[13], "rings_offset": f[15],
            "data_offset": f[16], "ring_count": f[5]}


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
    subprocess.run([golden.EMBER, "record", "-o", log, "--", traced, "40", "2"], env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for good in (ring, log):
        rc, err = ember(["trace", "dump", good, "-o", good + ".txt"])
        if rc != 0:
            golden.fail("the undamaged %s should read:\n%s" % (good, err))
    h = header(open(ring, "rb").read())
    first_event = h["data_offset"] + PACKET_HEADER

    expect_error(damaged(ring, os.path.join(d, "text"), lambda b: b.__setitem__(
        slice(None), b"time tid name\n" * 10)), "no ember trace header")
    expect_error(damaged(ring, os.path.join(d, "empty"), lambda b: b.clear()),
                 "no ember trace header")
    expect_error(damaged(ring, os.path.join(d, "version"), lambda b: poke(b, 8, "<I", 99)),
                 "unsupported version")
    expect_error(damaged(ring, os.path.join(d, "truncated"), lambda b: b.__delitem__(
        slice(h["data_offset"] + 5000, None))), "header fields out of range")
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
    expect_error(damaged(log, os.path.join(d, "log-cut"), lambda b: b.__delitem__(
        slice(len(b) - 100, None))), "corrupt packet log at byte")
    expect_error(damaged(log, os.path.join(d, "log-ring"), lambda b: poke(
        b, log_h["data_offset"], "<I", 77)), "corrupt packet log at byte %d" % log_h["data_offset"])

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
