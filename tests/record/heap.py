#!/usr/bin/env python3
"""heap.py - `ember record --heap` and libember-heap.so against known answers.

Builds heap_sites.c and heap_new.cpp, records each of their modes with
`ember record --heap -o X.heap`, decodes the recording with heapfile.py
(independent of ember's reader) and checks every number against what the
program is written to do: counts, bytes and live blocks per call site
(the allocating function), in every-allocation mode exactly; the same with
frame pointers; --sample-bytes 1 equal to the default; glibc's results and
errno unchanged by the preload; threads freeing each other's blocks;
fork without exec (the child's own file), fork and exec (the new image's
own file, the old one ended by END exec); a SIGKILL (everything up to it);
a static program and a set-user-ID one refused before they run; C++ new and delete; sampled mode
with a fixed seed within 10% per site (sites above 5% of the bytes) and 5%
in total after pprof's scaling; nothing left in TMPDIR.

Every check runs and says what it found; HEAP_TEST_BREAK=1 offsets each
expected number by one, to see every check fail.

Usage: heap.py SRC_DIR WORK_DIR (EMBER: the ember program). Exits 77 when
there is no C compiler.
"""

import math
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heapfile  # noqa: E402

EMBER = os.environ.get("EMBER", "ember")
BREAK = 1 if os.environ.get("HEAP_TEST_BREAK") else 0
failures = []


def check(what, got, expected):
    if BREAK and isinstance(expected, bool):
        expected = not expected
    elif BREAK and not isinstance(expected, int):
        expected = ("broken", expected)
    elif isinstance(expected, int) and not isinstance(expected, bool):
        expected += BREAK
    ok = got == expected
    print(("ok   " if ok else "FAIL ") + f"{what}: {got!r}" + ("" if ok else f", expected {expected!r}"))
    if not ok:
        failures.append(what)


def build(src, work):
    cc = shutil.which("cc") or shutil.which("gcc")
    cxx = shutil.which("c++") or shutil.which("g++")
    if not cc or not cxx:
        print("no C/C++ compiler: skipped")
        sys.exit(77)
    hs, hn = os.path.join(work, "heap_sites"), os.path.join(work, "heap_new")
    subprocess.run([cc, "-O1", "-g", "-pthread", "-Wno-alloc-size-larger-than", "-o", hs, os.path.join(src, "heap_sites.c")],
                   check=True)
    subprocess.run([cxx, "-O1", "-g", "-o", hn, os.path.join(src, "heap_new.cpp")], check=True)
    return hs, hn


def record(work, name, cmd, options=(), env=None):
    """Records cmd into WORK/name.heap: (exit status, stderr, processes)."""
    out = os.path.join(work, name + ".heap")
    if os.path.exists(out):
        os.unlink(out)
    r = subprocess.run([EMBER, "record", "--heap", *options, "-o", out, "--", *cmd],
                       capture_output=True, text=True, env=env)
    procs = heapfile.read_paths([out]) if os.path.exists(out) else []
    return r.returncode, r.stderr, procs


def by_site(p, names):
    """Per allocating function in names (the innermost frame among them):
    [count, bytes, live count, live bytes]."""
    out = {}
    for key, v in heapfile.site_lines(p).items():
        frames = [f for f in key.split(";") if f in names]
        if frames:
            acc = out.setdefault(frames[-1], [0, 0, 0, 0])
            for i in range(4):
                acc[i] += v[i]
    return out


SITES = ("site_a", "site_b", "site_grow")


def test_three(work, hs):
    rc, err, procs = record(work, "three", [hs, "three"])
    check("three: exit status", rc, 0)
    check("three: processes", len(procs), 1)
    _, total = heapfile.replay(procs[0])
    check("three: allocations (none of the recorder's or libunwind's)", total["allocs"], 3)
    check("three: END exit and the sequence counter", procs[0].ends, [(0, 4)])
    check("three: sites", by_site(procs[0], SITES),
          {"site_a": [2 + BREAK, 300, 1, 200], "site_b": [1, 300, 1, 300]})
    return rc


def test_sites(work, hs):
    truth = {"site_a": [1000 + BREAK, 100000, 0, 0], "site_b": [10, 10000, 10, 10000],
             "site_grow": [50, 81600, 0, 0]}
    runs = {}
    for name, options in (("sites", []), ("sites-fp", ["--call-graph", "fp"]),
                          ("sites-1", ["--sample-bytes", "1"])):
        rc, err, procs = record(work, name, [hs, "sites"], options)
        check(f"{name}: exit status", rc, 0)
        check(f"{name}: sites", by_site(procs[0], SITES), truth)
        runs[name] = procs[0]
    check("--sample-bytes 1: the default's stacks and numbers",
          heapfile.site_lines(runs["sites-1"]) == heapfile.site_lines(runs["sites"]), True)
    check("--sample-bytes 1: every allocation (flags)", runs["sites-1"].flags, 0)


def test_aligned(work, hs):
    alone = subprocess.run([hs, "aligned"], capture_output=True, text=True).stdout
    out = os.path.join(work, "aligned.heap")
    r = subprocess.run([EMBER, "record", "--heap", "-o", out, "--", hs, "aligned"],
                       capture_output=True, text=True)
    check("aligned: glibc's results and errno unchanged", r.stdout == alone, True)
    check("aligned: lines compared", len(alone.splitlines()), 36)
    p = heapfile.read_paths([out])[0]
    _, total = heapfile.replay(p)
    # one block per "ptr" line, and stdout's buffer
    ptrs = sum(1 for line in alone.splitlines() if ": ptr " in line)
    check("aligned: allocations (one per block returned, and stdout's buffer)", total["allocs"],
          ptrs + 1)


def test_threads(work, hs):
    rc, err, procs = record(work, "threads", [hs, "threads"])
    check("threads: exit status", rc, 0)
    check("threads: streams", procs[0].streams >= 5, True)
    sites = by_site(procs[0], ("thread_main",))
    check("threads: blocks allocated and still live", sites.get("thread_main"),
          [4000 + BREAK, 192000, 28, 1344])


def test_short_threads(work, hs):
    rc, err, procs = record(work, "short-threads", [hs, "short-threads"])
    check("short threads: a stream each", procs[0].streams, 201)
    check("short threads: their blocks", by_site(procs[0], ("short_main",)).get("short_main"),
          [200 + BREAK, 20000, 0, 0])
    st = os.stat(os.path.join(work, "short-threads.heap"))
    print(f"     {st.st_size} B long, {st.st_blocks * 512} B on disk")
    check("short threads: the archive keeps the chunks' holes", st.st_blocks * 512 < 8 << 20, True)


def test_closer(work, hs):
    mine = os.path.join(work, "closer-file")
    rc, err, procs = record(work, "closer", [hs, "closer", mine])
    check("closed descriptors: exit status", rc, 0)
    check("closed descriptors: every allocation", by_site(procs[0], SITES),
          {"site_a": [300000 + BREAK, 19200000, 0, 0]})
    with open(mine, "rb") as f:
        check("closed descriptors: the program's own file untouched", f.read(), b"mine\n")


def test_library(work, hs):
    env = dict(os.environ, EMBER_HEAP_LIB=os.path.join(work, "nowhere.so"))
    rc, err, procs = record(work, "nolib", [hs, "three"], env=env)
    check("EMBER_HEAP_LIB: a missing library refused", rc, 1)
    check("EMBER_HEAP_LIB: says which", "EMBER_HEAP_LIB=" in err and "nowhere.so" in err, True)
    check("EMBER_HEAP_LIB: no output", procs, [])


def test_fork(work, hs):
    rc, err, procs = record(work, "fork", [hs, "fork"])
    check("fork: processes", len(procs), 2)
    parent, child = procs
    check("fork: the child's parent", child.ppid, parent.pid)
    check("fork: parent's sites", by_site(parent, SITES), {"site_a": [3 + BREAK, 900, 3, 900]})
    check("fork: child's sites", by_site(child, SITES), {"site_b": [7 + BREAK, 490, 7, 490]})
    check("fork: child's free of its parent's block (no allocation in its file)",
          heapfile.replay(child)[1]["unknown_frees"], 1)
    rc, err, procs = record(work, "forkexec", [hs, "forkexec"])
    check("fork+exec: processes (parent, child, the child's new image)", len(procs), 3)
    check("fork+exec: the child's image ended by exec", procs[1].ends, [(1, 0)])
    check("fork+exec: the new image's sites", by_site(procs[2], SITES),
          {"site_a": [2 + BREAK, 300, 1, 200], "site_b": [1, 300, 1, 300]})
    check("fork+exec: same pid, two files", procs[1].pid, procs[2].pid)
    rc, err, procs = record(work, "vfork", [hs, "vfork"])
    check("vfork+exec: processes (parent, the child's new image)", len(procs), 2)
    check("vfork+exec: the parent's file not ended by the child's exec", procs[0].ends,
          [(0, 2 + BREAK)])
    check("vfork+exec: the parent's sites", by_site(procs[0], SITES),
          {"site_a": [2 + BREAK, 600, 2, 600]})


def test_kill(work, hs):
    rc, err, procs = record(work, "kill", [hs, "kill"])
    check("SIGKILL: exit status 128 + 9", rc, 137)
    check("SIGKILL: no END", procs[0].ends, [])
    check("SIGKILL: every allocation before it", by_site(procs[0], SITES),
          {"site_a": [5000 + BREAK, 160000, 5000, 160000]})


def test_static(work, src):
    cc = shutil.which("cc") or shutil.which("gcc")
    prog, marker = os.path.join(work, "static"), os.path.join(work, "static-ran")
    with open(prog + ".c", "w") as f:
        f.write('#include <stdio.h>\nint main(int c, char **v) { fclose(fopen(v[1], "w"));'
                ' return 0; }\n')
    if subprocess.run([cc, "-static", "-o", prog, prog + ".c"]).returncode != 0:
        print("skip static: no static libc")
        return
    rc, err, procs = record(work, "static", [prog, marker])
    check("static: refused (exit 1)", rc, 1)
    check("static: says why", "statically linked" in err and "cannot be recorded" in err, True)
    check("static: did not run", os.path.exists(marker), False)
    check("static: no output", os.path.exists(os.path.join(work, "static.heap")), False)


def test_other_class(work, hs):
    """A 32-bit program (here heap_sites with its ELF class byte changed:
    no multilib needed) is refused before it runs."""
    prog = os.path.join(work, "class32")
    with open(hs, "rb") as f:
        data = bytearray(f.read())
    data[4] = 1  # ELFCLASS32
    with open(prog, "wb") as f:
        f.write(data)
    os.chmod(prog, 0o755)
    rc, err, procs = record(work, "class32", [prog, "three"])
    check("32-bit: refused (exit 1)", rc, 1)
    check("32-bit: says why", "is a 32-bit program" in err, True)


def test_setuid(work, hs):
    """A set-user-ID program is refused before it runs: the dynamic loader
    would ignore LD_PRELOAD and the recording would be empty."""
    prog = os.path.join(work, "setuid")
    shutil.copyfile(hs, prog)
    os.chmod(prog, 0o4755)
    rc, err, procs = record(work, "setuid", [prog, "three"])
    check("setuid: refused (exit 1)", rc, 1)
    check("setuid: says why", "set-user-ID" in err and "LD_PRELOAD" in err, True)
    check("setuid: no output", os.path.exists(os.path.join(work, "setuid.heap")), False)


def test_cxx(work, hn):
    rc, err, procs = record(work, "new", [hn])
    check("C++: exit status", rc, 0)
    check("C++: new and delete per site", by_site(procs[0], ("_ZL10make_arrayv", "_ZL8make_objv")),
          {"_ZL10make_arrayv": [4 + BREAK, 256, 2, 128], "_ZL8make_objv": [3, 72, 0, 0]})


def scaled(p, sample_bytes):
    """Per site, bytes as pprof scales samples (count and bytes by 1/(1-exp(-size/N)))."""
    est = {}
    for seq, kind, addr, size, sid, t in p.events:
        if kind != heapfile.ALLOC:
            continue
        frames = [heapfile.name_of(p, pc) for pc in p.stacks[sid]]
        site = next((f for f in frames if f in SITES), "?")
        est[site] = est.get(site, 0) + size / (1 - math.exp(-size / sample_bytes))
    return est


def sizes(p):
    return [e[3] for e in p.events if e[1] == heapfile.ALLOC]


def test_sampled(work, hs):
    env = dict(os.environ, EMBER_HEAP_SEED="12345")
    truth = {"site_a": 20000 * 1000, "site_b": 2000 * 5000, "site_grow": 100000 * 16}
    rc, err, procs = record(work, "sampled", [hs, "sampled"], ["--sample-bytes", "16384"], env)
    p = procs[0]
    check("sampled: flags and mean", (p.flags, p.sample_bytes), (1, 16384))
    check("sampled: seed", p.seed, 12345)
    est = scaled(p, 16384)
    total = sum(truth.values())
    for site, bytes_ in truth.items():
        if bytes_ > total * 0.05:
            err_ = abs(est.get(site, 0) - bytes_) / bytes_
            print(f"     {site}: {est.get(site, 0):.0f} B estimated, {bytes_} B true ({err_:.1%})")
            check(f"sampled: {site} within 10%", err_ <= 0.10, True)
    err_ = abs(sum(est.values()) - total) / total
    print(f"     total: {sum(est.values()):.0f} B estimated, {total} B true ({err_:.1%})")
    check("sampled: total within 5%", err_ <= 0.05, True)
    check("sampled: every sampled block's free recorded", heapfile.replay(p)[1]["live"], 0)
    rc, err, again = record(work, "sampled2", [hs, "sampled"], ["--sample-bytes", "16384"], env)
    check("sampled: the same seed, the same samples (sizes in order, per site)",
          (sizes(again[0]), scaled(again[0], 16384)) == (sizes(p), est), True)


def start_waiting(work, name, hs):
    """ember record --heap of `heap_sites wait`, once it has allocated."""
    out = os.path.join(work, name + ".heap")
    r = subprocess.Popen([EMBER, "record", "--heap", "-o", out, "--", hs, "wait"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(f"{name}: the command started", r.stdout.readline(), "ready\n")
    return r, out


def test_stop(work, hs):
    r, out = start_waiting(work, "ctrl-c", hs)
    r.send_signal(signal.SIGINT)
    _, err = r.communicate(timeout=30)
    check("Ctrl-C: the command's status (SIGTERM)", r.returncode, 128 + signal.SIGTERM)
    procs = heapfile.read_paths([out]) if os.path.exists(out) else []
    check("Ctrl-C: still written", [by_site(p, SITES) for p in procs],
          [{"site_a": [10 + BREAK, 640, 10, 640]}])
    # kill -9: the private directory stays until the next run sweeps it
    r, out = start_waiting(work, "kill-9", hs)
    tmp = os.environ["TMPDIR"]
    dirs = [d for d in os.listdir(tmp) if d.startswith("ember-run.")]
    pids = [int(f.split(".")[1]) for d in dirs for f in os.listdir(os.path.join(tmp, d))]
    r.kill()
    r.wait()
    for pid in pids:  # the command, orphaned
        os.kill(pid, signal.SIGKILL)
    check("kill -9: its directory left", len(dirs), 1)
    check("kill -9: no output", os.path.exists(out), False)
    record(work, "after-kill", [hs, "three"])  # sweeps it


def test_sampled_threads(work, hs):
    rc, err, procs = record(work, "sampled-threads", [hs, "threads"], ["--sample-bytes", "512"])
    _, total = heapfile.replay(procs[0])
    live = by_site(procs[0], ("thread_main",))["thread_main"]
    print(f"     {live[0]} of 4000 blocks sampled, {live[2]} live at the end")
    check("sampled threads: every free is of a sampled block", total["unknown_frees"], 0)
    check("sampled threads: the blocks still live are among the 28", live[2] <= 28, True)


def test_read_back(work, hs):
    """Other outputs: the recording read back through ember's reader (once
    the registry has the heap format): the summary's totals."""
    out = os.path.join(work, "sites.folded")
    r = subprocess.run([EMBER, "record", "--heap", "-o", out, "--", hs, "sites"],
                       capture_output=True, text=True)
    if "cannot read heap recordings back" in r.stderr:
        print("skip read back: this ember has no heap reader")
        return
    check("read back: exit status", r.returncode, 0)
    check("read back: the summary's totals",
          "1060 allocations of 191600 B, peak 13200 B" in r.stderr and "in 1 process," in r.stderr,
          True)
    check("read back: written", os.path.getsize(out) > 0, True)


def main():
    src, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    tmp = os.path.join(work, "tmp")
    os.makedirs(tmp)
    os.environ["TMPDIR"] = tmp
    hs, hn = build(src, work)
    test_three(work, hs)
    test_sites(work, hs)
    test_aligned(work, hs)
    test_threads(work, hs)
    test_short_threads(work, hs)
    test_closer(work, hs)
    test_library(work, hs)
    test_fork(work, hs)
    test_kill(work, hs)
    test_static(work, src)
    test_setuid(work, hs)
    test_other_class(work, hs)
    test_cxx(work, hn)
    test_sampled(work, hs)
    test_sampled_threads(work, hs)
    test_stop(work, hs)
    test_read_back(work, hs)
    check("nothing left in TMPDIR", os.listdir(tmp), [])
    if failures:
        print(f"{len(failures)} checks failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
