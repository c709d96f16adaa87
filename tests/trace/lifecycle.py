"""The trace file's life: created 0600 with O_EXCL|O_NOFOLLOW, never
writing a file it did not create (an existing file or a symlink makes it
use PATH.1), a child after fork traces into a file of its own (keeping the
parent's call sites), a program after exec into a new one; and built with
-DEMBER_TRACE_DISABLE, nothing is left of the tracing but type checks.
Names with control bytes come out escaped, one event per line. When
EMBER_TRACE names a file that cannot be created, one line on stderr says
why tracing is off (once, not in each forked child); otherwise the library
prints nothing.

usage: lifecycle.py CC INCLUDE_DIR TRACE_LIB [CFLAGS] WORKDIR
(CFLAGS: what the library was built with that programs need too, such as
the sanitizers)
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import golden  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def names(trace):
    out, _, _ = golden.run(["trace", "dump", trace])
    return [l.split(None, 4)[4].split(" n=")[0].split(" child=")[0]
            for l in out.decode().splitlines()]


def main():
    cc, include, lib = sys.argv[1:4]
    work = sys.argv[-1]
    cflags = sys.argv[4].split() if len(sys.argv) > 5 else []
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    prog = os.path.join(work, "lifecycle")
    subprocess.run([cc, "-O2"] + cflags + ["-I", include, "-o", prog,
                                           os.path.join(HERE, "lifecycle_prog.c"), lib, "-lpthread"],
                   check=True)
    trace = os.path.join(work, "t.trace")

    # fork: the parent's file and the child's
    p = subprocess.run([prog, "fork"], env=dict(os.environ, EMBER_TRACE=trace),
                       capture_output=True, text=True, check=True)
    child = int(p.stdout)
    if names(trace) != ["parent before fork", "parent after fork"]:
        golden.fail("parent's trace: %r" % names(trace))
    child_trace = "%s.%d" % (trace, child)
    if names(child_trace) != ["child", "parent before fork"]:
        golden.fail("child's trace: %r" % names(child_trace))
    for t in (trace, child_trace):
        if os.stat(t).st_mode & 0o777 != 0o600:
            golden.fail("%s is not 0600" % t)

    # exec: before in PATH, after in a new file (PATH exists by then)
    trace = os.path.join(work, "e.trace")
    subprocess.run([prog, "exec"], env=dict(os.environ, EMBER_TRACE=trace), check=True)
    if names(trace) != ["before exec"] or names(trace + ".1") != ["after exec"]:
        golden.fail("exec: %r then %r" % (names(trace), names(trace + ".1")))

    # an existing file and a symlink are never written to
    victim = os.path.join(work, "victim")
    with open(victim, "w") as f:
        f.write("precious")
    for path in (os.path.join(work, "existing.trace"), os.path.join(work, "link.trace")):
        if "existing" in path:
            shutil.copy(victim, path)
        else:
            os.symlink(victim, path)
        subprocess.run([prog, "after-exec"], env=dict(os.environ, EMBER_TRACE=path), check=True)
        if open(victim).read() != "precious" or ("existing" in path and open(path).read() != "precious"):
            golden.fail("tracing wrote into a file it did not create: %s" % path)
        if names(path + ".1") != ["after exec"]:
            golden.fail("with %s taken, the trace should go to %s.1" % (path, path))

    # EMBER_TRACE that cannot be made: one line says why tracing is off
    # (the fork mode forks: still one line); a good one, or none: silence
    missing = os.path.join(work, "missing", "dir", "x.trace")
    for mode in ("after-exec", "fork"):
        p = subprocess.run([prog, mode], env=dict(os.environ, EMBER_TRACE=missing),
                           capture_output=True, text=True)
        want = "ember-trace: cannot create %s: No such file or directory; tracing is off\n" % missing
        if p.returncode != 0 or p.stderr != want:
            golden.fail("EMBER_TRACE=%s (%s): exit %d, stderr %r, expected %r" %
                        (missing, mode, p.returncode, p.stderr, want))
    quiet = os.path.join(work, "quiet.trace")
    for env in (dict(os.environ, EMBER_TRACE=quiet), {k: v for k, v in os.environ.items()
                                                       if k != "EMBER_TRACE"}):
        p = subprocess.run([prog, "fork"], env=env, capture_output=True, text=True)
        if p.returncode != 0 or p.stderr:
            golden.fail("a traced program should print nothing of tracing: %r" % p.stderr)

    # names with a newline, a tab, a control byte and a backslash: escaped
    # by dump, stats and latency, one event per line
    trace = os.path.join(work, "names.trace")
    subprocess.run([prog, "names"], env=dict(os.environ, EMBER_TRACE=trace), check=True)
    out, _, _ = golden.run(["trace", "dump", trace])
    lines = [l.split(" ", 1)[-1] for l in out.decode().splitlines()]
    tid = lines[0].split()[0] if lines else "?"
    want = ["%s main\\x09thread begin two\\x0alines" % tid,
            '%s main\\x09thread instant back\\\\slash s\\x01="v\\x0a"' % tid,
            "%s main\\x09thread end two\\x0alines" % tid]
    if lines != want:
        golden.fail("dump of names to escape:\n%s\nexpected:\n%s" % ("\n".join(lines), "\n".join(want)))
    out, _, _ = golden.run(["trace", "stats", trace])
    rows = out.decode().splitlines()
    if len(rows) != 2 or not rows[1].startswith("two\\x0alines ") or rows[1].split()[1] != "1":
        golden.fail("stats of names to escape:\n%s" % out.decode())
    out, _, _ = golden.run(["trace", "latency", trace, "--span", "two\nlines"])
    if not out.decode().startswith("# two\\x0alines: 1 spans, "):
        golden.fail("latency of names to escape:\n%s" % out.decode()[:300])

    # -DEMBER_TRACE_DISABLE: no tracing code, same type checks
    off = os.path.join(work, "off")
    subprocess.run([cc, "-O2", "-Wall", "-Werror", "-DEMBER_TRACE_DISABLE", "-I", include,
                    "-o", off, os.path.join(HERE, "..", "..", "examples", "traced.c"),
                    "-lpthread"], check=True)
    syms = subprocess.run(["nm", off], capture_output=True, text=True).stdout
    if "ember" in syms:
        golden.fail("compiled out, the program still refers to: %s" %
                    sorted(set(re.findall(r"\S*ember\S*", syms))))
    bad = os.path.join(work, "bad.c")
    with open(bad, "w") as f:
        f.write('#include <ember/trace.h>\nstruct s { int x; };\n'
                'int main(void) { struct s v = {0}; EMBER_COUNTER("c", v); '
                'EMBER_INSTANT("i", EMBER_I64("f", v)); return 0; }\n')
    p = subprocess.run([cc, "-c", "-DEMBER_TRACE_DISABLE", "-I", include, "-o", bad + ".o", bad],
                       capture_output=True, text=True)
    if p.returncode == 0:
        golden.fail("compiled out, a field of the wrong type should still be an error")
    print("ok: 0600, O_EXCL|O_NOFOLLOW, fork, exec, why tracing is off, names escaped, "
          "compiled out")


if __name__ == "__main__":
    main()
