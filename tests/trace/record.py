"""`ember trace record -- CMD` (`ember record` until the sampler took the
name): a command that cannot run is one clear error and the shell's exit
status (127: not found, 126: found but not executable), with no output
file left; a command that runs but does not trace says so once and exits
with the command's status; an output that cannot be written is said before
the command runs; a traced one is recorded. Its help says that it drains
the program's rings.

usage: record.py TRACED WORKDIR
"""
import os
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402


def record(work, cmd):
    out = os.path.join(work, "out.trace")
    p = subprocess.run([golden.EMBER, "trace", "record", "-o", out, "--"] + cmd, capture_output=True,
                       text=True, cwd=work)
    left = sorted(os.listdir(work))
    return p.returncode, p.stderr, left


def check_help():
    p = subprocess.run([golden.EMBER, "trace", "record", "--help"], capture_output=True, text=True)
    text = " ".join(p.stdout.split())
    for want in ("drains its rings", "drain mode", "runtime_events rings as they fill",
                 "It was 'ember record', which now samples"):
        if p.returncode != 0 or want not in text:
            golden.fail("ember trace record --help does not say %r:\n%s" % (want, p.stdout))


def main():
    traced, work = sys.argv[1:3]
    check_help()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    plain = os.path.join(work, "plain")
    with open(plain, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(plain, 0o644)
    os.makedirs(os.path.join(work, "adir"))
    before = sorted(os.listdir(work))
    for cmd, status, why in ((["/nonexistent"], 127, "No such file or directory"),
                             (["no-such-command-anywhere"], 127, "No such file or directory"),
                             ([plain], 126, "Permission denied"),
                             ([os.path.join(work, "adir")], 126, "Permission denied")):
        rc, err, left = record(work, cmd)
        want = "ember trace: cannot run %s: %s\n" % (cmd[0], why)
        if rc != status or err != want or left != before:
            golden.fail("record -- %s: exit %d (expected %d), stderr %r (expected %r), files %r" %
                        (cmd[0], rc, status, err, want, left))
    rc, err, left = record(work, ["sh", "-c", "exit 3"])
    if rc != 3 or err.count("\n") != 1 or "did not trace" not in err or left != before:
        golden.fail("record of a program that does not trace: exit %d, %r, files %r" %
                    (rc, err, left))
    # one that succeeds but leaves no trace: no trace written is no success
    rc, err, left = record(work, ["true"])
    if rc != 1 or "did not trace" not in err or left != before:
        golden.fail("record of 'true': exit %d (expected 1), %r, files %r" % (rc, err, left))
    # an output that cannot be written is said before the command runs (the
    # command ran, and an OCaml one's events were lost at the end)
    for out in ("missing/x.trace", "adir"):
        p = subprocess.run([golden.EMBER, "trace", "record", "-o", out, "--", "sh", "-c",
                            "touch ran; sleep 3"], capture_output=True, text=True, cwd=work,
                           timeout=60)
        if p.returncode != 1 or out not in p.stderr or sorted(os.listdir(work)) != before:
            golden.fail("record -o %s: exit %d, %r, files %r (expected exit 1, the command not "
                        "run)" % (out, p.returncode, p.stderr, sorted(os.listdir(work))))
    rc, err, left = record(work, [traced, "10", "1"])
    if rc != 0 or "out.trace" not in left or "events" not in err:
        golden.fail("record of the traced example: exit %d, %r" % (rc, err))
    print("ok: a command that cannot run is one error, exit 127 or 126; one that does not "
          "trace says so; a traced one is recorded")


if __name__ == "__main__":
    main()
