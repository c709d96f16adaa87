"""`ember record`, the sampler, checked with perf's own reader: the
perf.data files it writes are read by `perf script` and `perf report`
without a warning, with as many samples as ember says; the known-answers
program (known.c: 60/30/10 of its calls through a frameless leaf) has those
shares when perf unwinds ember's DWARF recording, and shows perf's
frame-pointer blind spot in fp mode; the exit status is the command's; a
command that cannot run is one clear error and 127; Ctrl-C still writes the
file; -p records every thread of a running process; threads and a forked
child are all there (perf script's pid/tid columns); build-ids are the
files'; -a records the system, and says which sysctl and capabilities it
needs to someone without them.

Skips (77) without cc or perf, or where perf_event_open is not permitted.

usage: record.py SOURCE_DIR WORKDIR
"""
import os
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402
from recording import compile_c, perf, skip  # noqa: E402


def record(work, args, check=True, env=None):
    """ember record ARGS in WORK: (exit code, stderr, samples it says)."""
    p = subprocess.run([golden.EMBER, "record"] + args, capture_output=True, text=True,
                       cwd=work, env=env)
    m = re.search(r"ember record: (\d+) samples of ", p.stderr)
    if check and not m:
        golden.fail("ember record %s: exit %d, no summary: %r" %
                    (" ".join(args), p.returncode, p.stderr))
    return p.returncode, p.stderr, int(m.group(1)) if m else None


def samples_of(data, fields="comm,pid,tid,ip,sym"):
    """perf script's samples: lists of frames' symbols (leaf first), with
    the header line's fields."""
    out = perf(["script", "-i", data, "-F", fields])
    samples = []
    for block in out.split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        frames = [line.split()[1] if len(line.split()) > 1 else "?" for line in lines[1:]]
        samples.append((lines[0].split(), frames))
    return samples


def check_readable(data, said):
    """perf script and perf report read DATA without a word on stderr, and
    perf script's samples are ember's count."""
    n = len(samples_of(data))
    if n != said:
        golden.fail("%s: perf script has %d samples, ember record said %d" % (data, n, said))
    perf(["report", "-i", data, "--stdio"])
    # its header rounds ("1K"): the sample column by process, summed
    rows = perf(["report", "-i", data, "--stdio", "--no-children", "-s", "pid", "-F", "sample",
                 "-g", "none"])
    counted = sum(int(line.split()[0]) for line in rows.splitlines()
                  if line.strip() and not line.startswith("#"))
    if counted != said:
        golden.fail("%s: perf report counts %d samples, ember record said %d" %
                    (data, counted, said))


def shares(samples, names):
    """The share (percent) of samples under each of names, among those
    under any."""
    counts = dict.fromkeys(names, 0)
    for _, frames in samples:
        for f in frames:
            if f in counts:
                counts[f] += 1
                break
    total = sum(counts.values())
    return {k: 100.0 * v / total for k, v in counts.items()} if total else None, total


def check_probe(work):
    rc, err, _ = record(work, ["-o", "probe.data", "--", "true"], check=False)
    if rc != 0 and ("perf_event_paranoid" in err or "not permitted" in err):
        skip("perf_event_open is not permitted here: " + err.strip())
    if rc != 0:
        golden.fail("ember record -- true: exit %d, %r" % (rc, err))
    # the outputs made by reading the recording back need the perf.data reader
    rc, err, _ = record(work, ["-o", "probe.folded", "--", "true"], check=False)
    return "cannot read perf.data files back" not in err


def test_fp(work, known):
    data = os.path.join(work, "fp.data")
    rc, err, said = record(work, ["-o", data, "--", known, "1500"])
    if rc != 7:
        golden.fail("the exit status is the command's: 7 expected, got %d (%r)" % (rc, err))
    if err.count("\n") != 1:
        golden.fail("one line of summary expected, got %r" % err)
    if os.stat(data).st_mode & 0o777 != 0o600:
        golden.fail("a new perf.data is 0600 as perf's, not %o" % (os.stat(data).st_mode & 0o777))
    check_readable(data, said)
    check_build_id(data, known)
    # the leaf stack is there by default, and perf reads the callchain as
    # frame pointers all the same: its blind spot, the reason for issue 10's
    # item 2, the leaf's callers skipped, main right above the leaf
    stacks = {len(s) for _, _, _, s in perf_data_samples(data)}
    if stacks != {128}:
        golden.fail("fp: samples carry %r bytes of stack, expected 128" % stacks)
    leafs = [f for _, f in samples_of(data) if f and f[0] == "leaf"]
    above_main = sum(1 for f in leafs if len(f) > 1 and f[1] == "main")
    if len(leafs) < 100 or above_main < 0.95 * len(leafs):
        golden.fail("fp: %d samples in leaf, %d with main above it (perf's walk skips the "
                    "frameless leaf's caller)" % (len(leafs), above_main))
    return said


def test_dwarf(work, known_omit):
    data = os.path.join(work, "dwarf.data")
    rc, err, said = record(work, ["--call-graph", "dwarf", "-o", data, "--", known_omit,
                                  "5000"])
    if rc != 7:
        golden.fail("dwarf: exit %d, expected 7 (%r)" % (rc, err))
    check_readable(data, said)
    samples = samples_of(data)
    got, total = shares(samples, ["f60", "f30", "f10"])
    if total < 200:
        golden.fail("dwarf: only %d samples under f60, f30, f10" % total)
    for name, want in (("f60", 60), ("f30", 30), ("f10", 10)):
        if abs(got[name] - want) > 3:
            golden.fail("dwarf: %s has %.1f%% of the samples, expected %d%% within 3 points "
                        "(%r)" % (name, got[name], want, got))
    in_leaf = [f for _, f in samples if f and f[0] == "leaf"]
    with_main = sum(1 for f in in_leaf if "main" in f)
    if with_main < 0.99 * len(in_leaf):
        golden.fail("dwarf: main reached in %d of %d samples in leaf" % (with_main, len(in_leaf)))
    return got


def perf_data_samples(path):
    """The samples of an ember recording, parsed here from the file: (ip,
    callchain, user regs by bit, user stack bytes). Only the layout ember
    writes: one attr, sample_type IP|TID|TIME|CPU|PERIOD|CALLCHAIN and
    maybe REGS_USER|STACK_USER."""
    with open(path, "rb") as f:
        b = f.read()
    head = struct.unpack_from("<8sQQ6Q", b)
    attrs, data, size = head[3], head[5], head[6]
    sample_type, = struct.unpack_from("<Q", b, attrs + 24)
    regs_mask, = struct.unpack_from("<Q", b, attrs + 80)
    bits = [i for i in range(64) if regs_mask >> i & 1]
    out = []
    off = data
    while off < data + size:
        rtype, _, rsize = struct.unpack_from("<IHH", b, off)
        if rtype == 9:  # PERF_RECORD_SAMPLE
            p = off + 8
            ip, = struct.unpack_from("<Q", b, p)
            p += 40  # ip, pid/tid, time, cpu, period
            nr, = struct.unpack_from("<Q", b, p)
            chain = struct.unpack_from("<%dQ" % nr, b, p + 8)
            p += 8 + 8 * nr
            regs, stack = {}, b""
            if sample_type & (1 << 12):  # REGS_USER
                abi, = struct.unpack_from("<Q", b, p)
                p += 8
                if abi:
                    regs = dict(zip(bits, struct.unpack_from("<%dQ" % len(bits), b, p)))
                    p += 8 * len(bits)
            if sample_type & (1 << 13):  # STACK_USER
                n, = struct.unpack_from("<Q", b, p)
                stack = b[p + 8:p + 8 + n]
            out.append((ip, chain, regs, stack))
        off += rsize
    return out


def symbols(binary):
    """{name: (start, end)} of a (non-PIE) binary's functions, from nm."""
    out = subprocess.run(["nm", "-S", binary], capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tT":
            syms[f[3]] = (int(f[0], 16), int(f[0], 16) + int(f[1], 16))
    return syms


def test_leaf_stack(work, known_nopie):
    """--leaf-stack: each fp sample carries the top of the user stack (and
    no registers: perf's tools keep reading frame pointers), where a
    frameless leaf's return address is: the leaf's callers f60, f30, f10
    that perf's walk loses have their 60/30/10 there (leaf pushes nothing,
    so its return address is the first word)."""
    data = os.path.join(work, "leaf.data")
    rc, err, said = record(work, ["--leaf-stack", "64", "-o", data, "--", known_nopie, "5000"])
    if rc != 7:
        golden.fail("--leaf-stack: exit %d (%r)" % (rc, err))
    check_readable(data, said)
    syms = symbols(known_nopie)
    leaf = syms["leaf"]
    counts = dict.fromkeys(["f60", "f30", "f10"], 0)
    in_leaf = 0
    for ip, chain, regs, stack in perf_data_samples(data):
        if not leaf[0] <= ip < leaf[1]:
            continue
        in_leaf += 1
        if len(stack) != 64 or regs:
            golden.fail("--leaf-stack: a sample in leaf without 64 bytes of stack alone: "
                        "%d bytes, regs %r" % (len(stack), regs))
        ret, = struct.unpack_from("<Q", stack)
        for name in counts:
            if syms[name][0] <= ret < syms[name][1]:
                counts[name] += 1
    total = sum(counts.values())
    if in_leaf < 200 or total < 0.99 * in_leaf:
        golden.fail("--leaf-stack: %d of %d samples in leaf return into f60, f30 or f10" %
                    (total, in_leaf))
    got = {k: 100.0 * v / total for k, v in counts.items()}
    for name, want in (("f60", 60), ("f30", 30), ("f10", 10)):
        if abs(got[name] - want) > 3:
            golden.fail("--leaf-stack: %s has %.1f%%, expected %d%% within 3 points" %
                        (name, got[name], want))
    return got


def test_cannot_run(work, reader):
    sub = os.path.join(work, "cannot")
    os.makedirs(sub)
    for out in ("x.data", "x.svg") if reader else ("x.data",):
        rc, err, _ = record(sub, ["-o", out, "--", "/nonexistent/prog"], check=False)
        want = "ember record: cannot run /nonexistent/prog: No such file or directory\n"
        if rc != 127 or err != want or os.listdir(sub):
            golden.fail("-o %s -- /nonexistent/prog: exit %d (127 expected), stderr %r "
                        "(expected %r), files %r" % (out, rc, err, want, os.listdir(sub)))
    rc, err, _ = record(sub, ["-o", "x.data", "-p", "999999"], check=False)
    if rc != 1 or "999999" not in err or os.listdir(sub):
        golden.fail("-p of no process: exit %d, %r, files %r" % (rc, err, os.listdir(sub)))
    rc, err, _ = record(sub, ["-o", "x.data"], check=False)
    if rc != 2 or "what to record" not in err:
        golden.fail("nothing to record: exit %d, %r" % (rc, err))


def wait_recording(pid):
    """Until ember (pid) writes a recording with records from the kernel
    (more than its header and attr), and a second more: a loaded machine
    may be slow to start ember and the command. The file has no name (it
    is unnamed until renamed onto -o, or ember's alone): it is found among
    ember's descriptors."""
    deadline = time.time() + 60
    fds = "/proc/%d/fd" % pid
    while time.time() < deadline:
        for fd in os.listdir(fds) if os.path.exists(fds) else []:
            try:
                st = os.stat(os.path.join(fds, fd))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size > 2000:
                time.sleep(1)
                return
        time.sleep(0.05)
    golden.fail("ember record (pid %d) wrote no recording in 60 s" % pid)


def test_output_first(work):
    """An -o that cannot be written is said before the command runs, in
    well under a second (the whole command ran, then 'cannot create' and
    exit 1: the run was lost): a missing directory, whatever the format;
    a directory where the file would go."""
    sub = os.path.join(work, "unwritable")
    os.makedirs(os.path.join(sub, "dir.svg"))
    for out in ("/nonexistent-dir/y.svg", "missing/y.data", "missing/y.folded",
                "missing/y.json", "missing/y.pftrace", "missing/y.pb.gz", "dir.svg"):
        start = time.time()
        rc, err, _ = record(sub, ["-o", out, "--", "sh", "-c", "touch ran; sleep 3"],
                            check=False)
        took = time.time() - start
        if (rc != 1 or out not in err or err.count("\n") != 1 or took > 1 or
                os.listdir(sub) != ["dir.svg"]):
            golden.fail("-o %s: exit %d after %.2f s, %r, files %r (expected exit 1 at once, "
                        "the command not run)" % (out, rc, took, err, os.listdir(sub)))


def leaves_nothing(work, known, out):
    """kill -9 of ember record -o OUT while it records: nothing of it is
    left, in TMPDIR or beside OUT; while it recorded, nothing was in TMPDIR
    (a command that is not OCaml needs no directory)."""
    sub = os.path.join(work, "kill9-" + out)
    tmp = os.path.join(sub, "tmp")
    os.makedirs(tmp)
    p = subprocess.Popen([golden.EMBER, "record", "-o", out, "--", known, "1000000"], cwd=sub,
                         env=dict(os.environ, TMPDIR=tmp), stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        wait_recording(p.pid)
        during = os.listdir(tmp)
        p.kill()
        p.wait()
    finally:
        os.killpg(p.pid, signal.SIGKILL)  # the command, which outlives ember
    beside = sorted(set(os.listdir(sub)) - {"tmp"})
    if during or beside or os.listdir(tmp):
        golden.fail("kill -9 of ember record -o %s: TMPDIR held %r while recording, %r after; "
                    "%r beside the output" % (out, during, os.listdir(tmp), beside))


def test_kill9(work, known):
    """Nothing ember record makes for itself outlives it (it left
    /tmp/ember-record-XXXX.data, /tmp/ember-record.XXXX/ and .OUT.XXXX):
    the recording read back for an SVG, and a perf.data on its way to -o."""
    leaves_nothing(work, known, "k.svg")
    leaves_nothing(work, known, "k.data")


def test_kill9_ocaml(work):
    """An OCaml program opens its runtime events by path: they go to a
    directory of ember's in TMPDIR, which kill -9 cannot take away; the next
    ember record removes it (its owner is gone), though the program, still
    running, writes on."""
    fixture = os.path.join(golden.CORPUS, "ocaml5", "bin", "fixture")
    if not os.path.exists(fixture):
        print("note: no OCaml fixture (%s): kill -9 of an OCaml recording not checked" % fixture)
        return
    sub = os.path.join(work, "kill9-ocaml")
    tmp = os.path.join(sub, "tmp")
    os.makedirs(tmp)
    env = dict(os.environ, TMPDIR=tmp)
    p = subprocess.Popen([golden.EMBER, "record", "-o", "fx.svg", "--", fixture, "-iters",
                          "1000000"], cwd=sub, env=env, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        wait_recording(p.pid)
        p.kill()
        p.wait()
        stale = os.listdir(tmp)
        rc, err, _ = record(sub, ["-o", "t.folded", "--", "sh", "-c", "i=0; while [ $i -lt "
                                  "30000 ]; do i=$((i+1)); done"], env=env)
        after = os.listdir(tmp)
    finally:
        os.killpg(p.pid, signal.SIGKILL)
    if len(stale) != 1 or rc != 0 or after:
        golden.fail("kill -9 of ember record of an OCaml program: TMPDIR held %r; the next "
                    "ember record: exit %d, %r, and TMPDIR holds %r" % (stale, rc, err, after))


def test_names(work):
    """Messages name what the user named, not a file of ember's own: no
    samples in -p PID of a process asleep (it said 'no samples in
    /tmp/ember-record-XXXX.data')."""
    sub = os.path.join(work, "names")
    tmp = os.path.join(sub, "tmp")
    os.makedirs(tmp)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        # asleep: exec'd and in its nanosleep (while it starts, under load,
        # a sample may still catch it)
        deadline = time.time() + 10
        while time.time() < deadline:
            with open("/proc/%d/stat" % sleeper.pid) as f:
                stat = f.read()
            if stat.startswith("%d (sleep) S " % sleeper.pid):
                break
            time.sleep(0.01)
        time.sleep(0.2)
        rc, err, _ = record(sub, ["-o", "x.svg", "-p", str(sleeper.pid), "--duration", "0.3"],
                            check=False, env=dict(os.environ, TMPDIR=tmp))
    finally:
        sleeper.kill()
        sleeper.wait()
    want = "no samples in the recording of process %d" % sleeper.pid
    if rc != 1 or want not in err or tmp in err or "ember-record" in err or os.listdir(sub) != [
            "tmp"] or os.listdir(tmp):
        golden.fail("-p of a process asleep: exit %d, %r (expected %r), files %r" %
                    (rc, err, want, os.listdir(sub)))


def test_ctrl_c(work, known):
    data = os.path.join(work, "int.data")
    p = subprocess.Popen([golden.EMBER, "record", "-o", data, "--", known, "1000000"],
                         stderr=subprocess.PIPE, text=True, cwd=work)
    wait_recording(p.pid)
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        golden.fail("ember record did not stop within 30 s of SIGINT")
    m = re.search(r"(\d+) samples", err)
    # the command was ended by SIGTERM, as perf does: its status is 128 + 15
    if p.returncode != 128 + signal.SIGTERM or not m or not os.path.exists(data):
        golden.fail("SIGINT: exit %d (143 expected), %r, file %s" %
                    (p.returncode, err, os.path.exists(data)))
    check_readable(data, int(m.group(1)))
    if int(m.group(1)) == 0:
        golden.fail("SIGINT after 1.5 s: no samples")


def test_lost(work, forks):
    """Samples the kernel could not write (64 KB of stack per sample, 20 kHz,
    three threads: the rings overflow) are counted as perf counts them:
    the sum of the PERF_RECORD_LOST records perf script shows."""
    data = os.path.join(work, "lost.data")
    p = subprocess.run([golden.EMBER, "record", "-F", "20000", "--call-graph", "dwarf,65528",
                        "-o", data, "--", forks, "0.5"], capture_output=True, text=True)
    m = re.search(r"(\d+) samples of .*, (\d+) lost", p.stderr)
    if p.returncode != 0 or not m:
        golden.fail("lost: exit %d, %r" % (p.returncode, p.stderr))
    out = subprocess.run(["perf", "script", "-i", data, "--show-lost-events", "-F",
                          "comm,pid,tid,ip"], capture_output=True, text=True).stdout
    lost = sum(int(line.split()[-1]) for line in out.splitlines()
               if "PERF_RECORD_LOST lost" in line)
    if lost != int(m.group(2)):
        golden.fail("lost: ember says %s lost, perf script's LOST records %d" % (m.group(2), lost))
    return int(m.group(1)), lost


def pids_tids(data):
    pairs = set()
    for head, _ in samples_of(data, "pid,tid,ip,sym"):
        pid, tid = head[0].split("/")
        pairs.add((int(pid), int(tid)))
    return pairs


def test_threads(work, forks):
    data = os.path.join(work, "forks.data")
    rc, err, said = record(work, ["-o", data, "--", forks, "0.5"])
    if rc != 0:
        golden.fail("forks: exit %d, %r" % (rc, err))
    check_readable(data, said)
    pairs = pids_tids(data)
    pids = {p for p, _ in pairs}
    # the parent: main and two threads; the child: main and one thread
    if len(pids) != 2 or len(pairs) != 5:
        golden.fail("forks: expected 2 processes and 5 threads with samples, got %r" %
                    sorted(pairs))


def test_pid(work, forks):
    p = subprocess.Popen([forks, "10"])
    try:
        time.sleep(0.5)
        data = os.path.join(work, "pid.data")
        rc, err, said = record(work, ["-o", data, "-p", str(p.pid), "--duration", "1"])
        if rc != 0:
            golden.fail("-p: exit %d, %r" % (rc, err))
        check_readable(data, said)
        check_build_id(data, forks)
        rc, err, said = record(work, ["-o", data, "-p", str(p.pid), "--", "sleep", "0.3"])
        if rc != 0 or {pid for pid, _ in pids_tids(data)} != {p.pid}:
            golden.fail("-p PID -- sleep: exit %d, %r, pids %r" % (rc, err, pids_tids(data)))
        tids = {t for pid, t in pids_tids(data) if pid == p.pid}
        others = {pid for pid, _ in pids_tids(data)} - {p.pid}
        if len(tids) != 3 or others:
            golden.fail("-p %d: expected its 3 threads alone, got tids %r, other pids %r" %
                        (p.pid, sorted(tids), sorted(others)))
        comm = perf(["script", "-i", data, "-F", "comm"]).split()
        if not comm or set(comm) != {"forks"}:
            golden.fail("-p: the threads' names come from /proc: %r" % sorted(set(comm))[:5])
    finally:
        p.kill()
        p.wait()
    # without --duration, the recording ends with the process
    p = subprocess.Popen([forks, "1"])
    try:
        time.sleep(0.3)
        start = time.time()
        rc, err, said = record(work, ["-o", os.path.join(work, "pid-end.data"), "-p",
                                      str(p.pid)])
        if rc != 0 or time.time() - start > 20:
            golden.fail("-p until the process ends: exit %d after %.1f s, %r" %
                        (rc, time.time() - start, err))
    finally:
        p.kill()
        p.wait()


def elf_build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def check_build_id(data, binary):
    """The file's HEADER_BUILD_ID has binary with the id its ELF notes give
    (the kernel's from mmap2 records, or read with libelf for -p's maps)."""
    want = elf_build_id(binary)
    listed = perf(["buildid-list", "-i", data]).splitlines()
    if want and "%s %s" % (want, binary) not in listed:
        golden.fail("%s: perf buildid-list has no '%s %s': %r" % (data, want, binary, listed))


def test_system_wide(work):
    data = os.path.join(work, "all.data")
    rc, err, said = record(work, ["-a", "--duration", "0.5", "-o", data])
    if rc != 0 or said == 0:
        golden.fail("-a: exit %d, %r" % (rc, err))
    check_readable(data, said)
    # with a command, -a records as long as it runs, and its status is ours
    rc, err, said = record(work, ["-a", "-o", data, "--", "sh", "-c", "sleep 0.3; exit 4"])
    if rc != 4:
        golden.fail("-a -- sh -c 'exit 4': exit %d, %r" % (rc, err))
    check_readable(data, said)
    # someone without the privilege is told which sysctl and capabilities
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        if int(f.read()) <= 0:
            return
    # user nobody cannot reach the build directory where the clone is in a
    # private home (mode 0700): the binary and the output directory are in
    # a directory of their own under /tmp, which anyone may enter
    top = tempfile.mkdtemp(prefix="ember-nobody-")
    try:
        os.chmod(top, 0o755)
        ember = shutil.copy(golden.EMBER, os.path.join(top, "ember"))
        sub = os.path.join(top, "out")
        os.makedirs(sub)
        os.chmod(sub, 0o777)
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            ember, "record", "-a", "--duration", "0.2", "-o",
                            os.path.join(sub, "x.data")], capture_output=True, text=True)
        if (p.returncode != 1 or "kernel.perf_event_paranoid" not in p.stderr or
                "CAP_PERFMON" not in p.stderr or p.stderr.count("\n") != 1 or os.listdir(sub)):
            golden.fail("-a without the privilege: exit %d, %r, files %r" %
                        (p.returncode, p.stderr, os.listdir(sub)))
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_duration_values(work):
    """--duration takes seconds above 0: -1, 0, nan, inf and words are one
    clear error (exit 2) before anything runs (-1 used to be accepted, and
    the command run)."""
    sub = os.path.join(work, "duration")
    os.makedirs(sub)
    for value in ("-1", "0", "-0.5", "nan", "inf", "abc", "1s"):
        rc, err, _ = record(sub, ["--duration", value, "-o", "x.data", "--", "touch", "ran"],
                            check=False)
        if rc != 2 or "--duration" not in err or value not in err or os.listdir(sub):
            golden.fail("--duration %s: exit %d (2 expected), %r, files %r" %
                        (value, rc, err, os.listdir(sub)))


def test_sigterm_ignored(work):
    """A command that ignores SIGTERM is still ended at --duration: SIGKILL
    2 s later, said on stderr, and its status is 128 + 9 (it used to be
    waited for as long as it ran)."""
    data = os.path.join(work, "deaf.data")
    start = time.time()
    p = subprocess.Popen([golden.EMBER, "record", "--duration", "0.5", "-o", data, "--", "sh",
                          "-c", "trap '' TERM; exec sleep 60"], stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        _, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        golden.fail("--duration 0.5 of a command ignoring SIGTERM: still running after 20 s")
    took = time.time() - start
    m = re.search(r"(\d+) samples of .*, (\d+\.\d+) s, wrote", err)
    if (p.returncode != 128 + signal.SIGKILL or "SIGKILL" not in err or not m or
            not 2.4 < took < 10 or float(m.group(2)) > 1.5):
        golden.fail("--duration 0.5 of a command ignoring SIGTERM: exit %d after %.1f s, %r" %
                    (p.returncode, took, err))
    check_readable(data, int(m.group(1)))


def test_help_groups(work):
    """--help lists each option under its own heading: the GC options of
    every reading command under theirs, not under the last format's
    ("DTrace options:", where they were), and a command's first options
    apart from its description's examples."""
    for cmd in ("collapse", "flamegraph", "diff", "report", "convert", "record"):
        text = subprocess.run([golden.EMBER, cmd, "--help"], capture_output=True,
                              text=True).stdout
        heading = None
        for line in text.splitlines():
            if line and not line.startswith(" "):
                heading = line
            m = re.match(r"\s+(?:-\w, )?--(during|outside|gc-events)\b", line)
            if m and cmd != "record" and (not heading or "GC" not in heading):
                golden.fail("ember %s --help: --%s under %r" % (cmd, m.group(1), heading))
            if m and cmd == "record" and heading != "Options:":
                golden.fail("ember record --help: --%s under %r" % (m.group(1), heading))


def folded_shares(path, names):
    """Shares (percent) of folded weight under each of names, among stacks
    under any (None when they hold less than 90% of leaf's weight); and the
    share of stacks through leaf that reach main."""
    counts = dict.fromkeys(names, 0.0)
    leaf = leaf_main = 0.0
    with open(path) as f:
        for line in f:
            stack, _, w = line.rstrip("\n").rpartition(" ")
            frames, w = stack.split(";"), float(w)
            for name in names:
                if name in frames:
                    counts[name] += w
                    break
            if "leaf" in frames:
                leaf += w
                leaf_main += w if "main" in frames else 0
    total = sum(counts.values())
    if total < 0.9 * leaf:  # the callers are lost (perf's walk): no shares
        return None, 100.0 * leaf_main / leaf if leaf else 0.0
    return ({k: 100.0 * v / total for k, v in counts.items()},
            100.0 * leaf_main / leaf if leaf else 0.0)


def test_outputs(work, known, known_omit):
    """Outputs made by reading the recording back: the known answers in
    DWARF mode, and in fp mode too (the leaf's callers that perf's walk
    loses, put back from the stack copy)."""
    names = ["f60", "f30", "f10"]
    folded = os.path.join(work, "dwarf.folded")
    rc, err, _ = record(work, ["--call-graph", "dwarf", "-o", folded, "--", known_omit, "5000"])
    got, reach = folded_shares(folded, names)
    if rc != 7 or not got:
        golden.fail("dwarf .folded: exit %d, %r, shares %r" % (rc, err, got))
    for name, want in zip(names, (60, 30, 10)):
        if abs(got[name] - want) > 3:
            golden.fail("dwarf .folded: %s has %.1f%%, expected %d%% within 3 points" %
                        (name, got[name], want))
    if reach < 99:
        golden.fail("dwarf .folded: main reached in %.1f%% of leaf's weight" % reach)
    folded = os.path.join(work, "fp.folded")
    rc, err, _ = record(work, ["-o", folded, "--", known, "5000"])
    fp, _ = folded_shares(folded, names)
    if rc != 7:
        golden.fail("fp .folded: exit %d, %r" % (rc, err))
    # better than perf: the leaf's callers, put back from the stack copy
    if not fp or any(abs(fp[n] - w) > 3 for n, w in zip(names, (60, 30, 10))):
        golden.fail("fp .folded: shares %r, expected 60/30/10 within 3 points" % fp)
    print("ok fp .folded: %s" % ", ".join("%s %.1f%%" % (n, fp[n]) for n in names))
    # pprof: the program is the main binary (go tool pprof's "File:"), not
    # the dynamic loader mapped before it
    if shutil.which("go"):
        pb = os.path.join(work, "fp.pb.gz")
        rc, err, _ = record(work, ["-o", pb, "--", known, "500"])
        top = subprocess.run(["go", "tool", "pprof", "-top", pb], capture_output=True, text=True,
                             env=dict(os.environ, HOME=work, GOCACHE=os.path.join(work, "gocache")))
        first = top.stdout.splitlines()[0] if top.stdout else top.stderr
        if rc != 7 or first != "File: " + os.path.basename(known):
            golden.fail("pprof of a recording: %r (exit %d, %r)" % (first, rc, err))
        print("ok pprof: %s" % first)
    # the recording lived in TMPDIR and is gone, also after Ctrl-C
    tmp = os.path.join(work, "tmp")
    os.makedirs(tmp)
    env = dict(os.environ, TMPDIR=tmp)
    interrupted = os.path.join(work, "int.folded")
    p = subprocess.Popen([golden.EMBER, "record", "-o", interrupted, "--", known, "1000000"],
                         stderr=subprocess.PIPE, text=True, env=env)
    wait_recording(p.pid)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    if p.returncode != 128 + signal.SIGTERM or not os.path.getsize(interrupted) or os.listdir(tmp):
        golden.fail("Ctrl-C with -o .folded: exit %d, %r, TMPDIR holds %r" %
                    (p.returncode, err, os.listdir(tmp)))
    svg = os.path.join(work, "known.svg")
    record(work, ["-o", svg, "--", known, "200"])
    with open(svg) as f:
        if "<svg" not in f.read(2000):
            golden.fail("%s is not an SVG" % svg)
    return got, fp


def main():
    src, work = sys.argv[1:3]
    if not shutil.which("perf"):
        skip("no perf here to read the files")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    reader = check_probe(work)
    known = compile_c(os.path.join(src, "known.c"), os.path.join(work, "known"),
                      ["-O2", "-fno-omit-frame-pointer"])
    known_omit = compile_c(os.path.join(src, "known.c"), os.path.join(work, "known-omit"),
                           ["-O2", "-fomit-frame-pointer"])
    known_nopie = compile_c(os.path.join(src, "known.c"), os.path.join(work, "known-nopie"),
                            ["-O2", "-fno-omit-frame-pointer", "-no-pie", "-fno-pie"])
    forks = compile_c(os.path.join(src, "forks.c"), os.path.join(work, "forks"),
                      ["-O2", "-pthread"])
    said = test_fp(work, known)
    got = test_dwarf(work, known_omit)
    leaf = test_leaf_stack(work, known_nopie)
    test_cannot_run(work, reader)
    test_output_first(work)
    test_duration_values(work)
    test_sigterm_ignored(work)
    test_help_groups(work)
    test_ctrl_c(work, known)
    test_kill9(work, known)
    test_kill9_ocaml(work)
    test_names(work)
    test_threads(work, forks)
    test_pid(work, forks)
    test_system_wide(work)
    lost = test_lost(work, forks)
    outputs = test_outputs(work, known, known_omit) if reader else None
    print("ok: fp %d samples read by perf script and report; dwarf shares %s; fp's leaf "
          "stacks %s; exit status, cannot run, Ctrl-C, threads and fork, -p, -a; %d samples "
          "and %d lost as perf counts" %
          (said, ", ".join("%s %.1f%%" % kv for kv in sorted(got.items())),
           ", ".join("%s %.1f%%" % kv for kv in sorted(leaf.items())), lost[0], lost[1]))
    if not outputs:
        print("note: no perf.data reader in this ember: .folded and .svg outputs not checked")
    else:
        print("ok: read back, dwarf .folded shares %r; fp .folded %s" %
              (outputs[0], outputs[1] or "main;leaf as perf's walk gives (the reader does not "
               "use the leaf stack yet)"))


if __name__ == "__main__":
    main()
