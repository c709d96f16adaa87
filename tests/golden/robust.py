"""Failures around the work, not in the input: a read that fails at once,
a signal while an output is being written, an output that is a symlink or
an existing file with its own mode.

usage: robust.py WORKDIR
"""
import os
import random
import signal
import stat
import subprocess
import time

import golden

case, main = golden.cases()

READERS = [["collapse"], ["flamegraph"], ["report"], ["convert", "--to", "pprof"],
           ["convert", "--to", "speedscope"]]


def crashed(err, rc):
    return rc < 0 or "Sanitizer" in err or "runtime error" in err or "double free" in err


@case
def first_read_fails(d):
    """stdin closed, and a file whose first read gives EIO: a clear error,
    exit 1, for every reading command (was: a double free)."""
    runs = [(cmd, how, args, needle) for cmd in READERS
            for how, args, needle in (("stdin closed", [], "<stdin>: cannot read"),
                                      ("EIO", ["/proc/self/mem"], "/proc/self/mem: cannot read"))]
    runs.append((["diff"], "EIO", ["/proc/self/mem", "/proc/self/mem"], "/proc/self/mem: cannot read"))
    for cmd, how, args, needle in runs:
        p = subprocess.run(["sh", "-c", 'exec "$0" "$@" <&-', golden.EMBER] + cmd + args,
                           capture_output=True)
        err = p.stderr.decode(errors="replace")
        if crashed(err, p.returncode) or p.returncode != 1 or needle not in err:
            golden.fail("ember %s (%s): expected exit 1 and %r, got %d:\n%s" %
                        (" ".join(cmd + args), how, needle, p.returncode, err[:3000]))


def big_folded(path, stacks=60000):
    """Enough distinct stacks that writing the output takes a while."""
    rnd = random.Random(7)
    with open(path, "w") as f:
        for i in range(stacks):
            depth = rnd.randrange(8, 40)
            frames = ["fn_%d_%d" % (k, rnd.randrange(6)) for k in range(depth)]
            f.write("main;%s;leaf_%d %d\n" % (";".join(frames), i, rnd.randrange(1, 1000)))


def leftovers(d, keep):
    return sorted(set(os.listdir(d)) - set(keep))


@case
def signals_leave_no_debris(d):
    """SIGINT and SIGTERM at random moments while flamegraph, collapse and
    convert write large outputs with -o, 20 times each: nothing is left
    beside the target, and the target is absent or complete."""
    src = os.path.join(d, "in.folded")
    big_folded(src)
    rnd = random.Random(11)
    for cmd in (["flamegraph"], ["collapse"], ["convert", "--to", "speedscope"]):
        name = cmd[0]
        full = os.path.join(d, name + ".full")
        t0 = time.monotonic()
        golden.run(cmd + [src, "-o", full])
        took = time.monotonic() - t0
        want = open(full, "rb").read()
        os.unlink(full)
        out = os.path.join(d, name + ".out")
        for i in range(20):
            sig = signal.SIGINT if i % 2 == 0 else signal.SIGTERM
            p = subprocess.Popen([golden.EMBER] + cmd + [src, "-o", out],
                                 stderr=subprocess.PIPE)
            time.sleep(rnd.uniform(0.05, 1.0) * took)
            p.send_signal(sig)
            _, err = p.communicate(timeout=120)
            err = err.decode(errors="replace")
            if crashed(err, 0) or p.returncode not in (0, -sig):
                golden.fail("%s interrupted by %s: exit %d\n%s" %
                            (name, sig.name, p.returncode, err[:2000]))
            extra = leftovers(d, ["in.folded", name + ".out"])
            if extra:
                golden.fail("%s interrupted by %s left %s" % (name, sig.name, extra))
            if os.path.exists(out):
                if open(out, "rb").read() != want:
                    golden.fail("%s interrupted by %s: %s is incomplete" % (name, sig.name, out))
                os.unlink(out)


@case
def symlink_written_through(d):
    """-o onto a symlink replaces the file it leads to; the link stays."""
    src = os.path.join(d, "in.folded")
    with open(src, "w") as f:
        f.write("main;a 3\nmain;b 1\n")
    os.makedirs(os.path.join(d, "real"))
    target = os.path.join(d, "real", "out.folded")
    with open(target, "w") as f:
        f.write("old\n")
    link = os.path.join(d, "link.folded")
    os.symlink("real/out.folded", link)
    golden.run(["collapse", src, "-o", link])
    if not os.path.islink(link):
        golden.fail("-o onto a symlink replaced the link")
    if open(target).read() != "main;a 3\nmain;b 1\n":
        golden.fail("-o onto a symlink did not write its target: %r" % open(target).read())
    # a dangling link: the file is made where it points
    dangling = os.path.join(d, "dangling.folded")
    os.symlink("real/new.folded", dangling)
    golden.run(["collapse", src, "-o", dangling])
    if not os.path.islink(dangling) or not os.path.isfile(os.path.join(d, "real", "new.folded")):
        golden.fail("-o onto a dangling symlink should create the file it names")
    # a cycle: an error naming the output, nothing written
    loop = os.path.join(d, "loop")
    os.symlink("loop", loop)
    _, err, rc = golden.run(["collapse", src, "-o", loop], check=False)
    if rc != 1 or loop not in err:
        golden.fail("-o onto a symlink cycle: expected exit 1 naming it, got %d: %s" % (rc, err))
    if leftovers(d, ["in.folded", "real", "link.folded", "dangling.folded", "loop"]):
        golden.fail("-o left files: %s" % os.listdir(d))


@case
def mode_kept(d):
    """A replaced file keeps its mode; a new one gets 0666 less the umask."""
    src = os.path.join(d, "in.folded")
    with open(src, "w") as f:
        f.write("main;a 3\n")
    out = os.path.join(d, "out.svg")
    with open(out, "w") as f:
        f.write("old")
    os.chmod(out, 0o640)
    golden.run(["flamegraph", src, "-o", out])
    mode = stat.S_IMODE(os.stat(out).st_mode)
    if mode != 0o640:
        golden.fail("-o onto an existing 0640 file left mode %o" % mode)
    new = os.path.join(d, "new.svg")
    old_mask = os.umask(0o022)
    try:
        golden.run(["flamegraph", src, "-o", new])
    finally:
        os.umask(old_mask)
    mode = stat.S_IMODE(os.stat(new).st_mode)
    if mode != 0o644:
        golden.fail("a new -o file under umask 022 has mode %o, not 644" % mode)



@case
def record_output_mode(d):
    """ember trace record's trace copy: new files 0600 like the rings it copies,
    a replaced file keeps its mode (was: 0644 whatever the umask)."""
    traced = os.environ.get("TRACED")
    if not traced:
        return
    out = os.path.join(d, "t.trace")
    golden.run(["trace", "record", "-o", out, "--", traced, "20", "1"])
    mode = stat.S_IMODE(os.stat(out).st_mode)
    if mode != 0o600:
        golden.fail("ember trace record -o made a new file with mode %o, not 600" % mode)
    os.chmod(out, 0o640)
    golden.run(["trace", "record", "-o", out, "--", traced, "20", "1"])
    mode = stat.S_IMODE(os.stat(out).st_mode)
    if mode != 0o640:
        golden.fail("ember trace record -o onto a 0640 file left mode %o" % mode)



@case
def record_signals_leave_no_rings(d):
    """ember trace record keeps the traced program's rings in /tmp while it runs.
    SIGHUP (the terminal closed) stops the program like Ctrl-C and keeps what
    was recorded; SIGPIPE ends ember at once: either way the rings go."""
    traced = os.environ.get("TRACED")
    if not traced:
        return
    tmp = os.path.join(d, "tmp")  # TMPDIR: other tests may record at the same time
    os.makedirs(tmp)
    env = dict(os.environ, TMPDIR=tmp)
    out = os.path.join(d, "t.trace")
    for sig, kept in ((signal.SIGHUP, True), (signal.SIGPIPE, False)):
        p = subprocess.Popen([golden.EMBER, "trace", "record", "-o", out, "--", traced, "200000", "2"],
                             stderr=subprocess.PIPE, start_new_session=True, env=env)
        time.sleep(0.5)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
        left = set(os.listdir(tmp))
        if left or leftovers(d, ["tmp", "t.trace"] if kept else ["tmp"]):
            golden.fail("ember trace record ended by %s left %s %s" %
                        (sig.name, sorted(left), leftovers(d, [])))
        if kept:
            golden.run(["trace", "stats", out])
            os.unlink(out)

if __name__ == "__main__":
    main()
