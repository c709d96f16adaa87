"""The same input gives the same bytes: flame graphs drawn twice, and
collapse with one thread or several (chunks of the input are parsed in
parallel and merged).

usage: determinism.py [--generate GEN_PERF WORKDIR] INPUT...
(--generate writes a 24 MB perf script input with the benchmark generator,
large enough for many chunks per thread, and the edge cases of the threads'
byte ranges of 1 MiB, below.)

A file of perf script text is read by threads in byte ranges of 1 MiB, each
taking the samples that start in it (perf_script_ranges.c); a pipe in chunks.
edges.txt puts what a range may start or end in across 5 MB: CRLF samples,
comment lines, runs of blank lines, a sample of 1.5 MB (longer than a range),
1.3 MB of one-line samples with no blank line (ranges start at event lines),
unrecognized lines in several ranges (warnings, each with its line number),
two other events (the first one met is named); edges-cut.txt ends inside a
line (an error at its line). At -j 2, 4 and 8, from the file and from a
pipe, collapse's output and messages (in any order) and the exit status are
those of -j 1, and pprof and speedscope are the same bytes, as they are for
every perf script text of golden/data.
"""
import os
import random
import subprocess
import sys

import golden

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def sample(rng, comm, event, depth, eol):
    """One sample of perf script text, ending in its blank line."""
    lines = ["%s %d/%d [%03d] %d.%06d: %d %s: " %
             (comm, 100 + depth % 3, 100 + depth % 5, depth % 4, 1 + depth, rng.randrange(10**6),
              rng.randrange(1, 10**6), event)]
    for f in range(depth):
        lines.append("\t%x f%d+0x%x (/usr/lib/lib%d.so)" % (0x400000 + f * 16, rng.randrange(60),
                                                           f, f % 4))
    return eol.join(lines) + eol + eol


def edges_text(rng):
    """edges.txt's bytes (about 5 MB), as described above."""
    out = ["# ========\n# captured on: a test\n#\n\n\n"]
    size, other, long_done, flat = 0, False, False, False
    while size < 5 << 20:
        k = len(out)
        if size > 1200000 and not other:
            # the first other event, deep in the second range
            text, other = sample(rng, "other", "instructions", 3, "\n"), True
        elif size > 1500000 and not long_done:
            # then another, on the first line of a range's text
            text = sample(rng, "long", "cycles", 40000, "\n") + sample(rng, "other", "branches", 3,
                                                                        "\n")
            long_done = True
        elif size > 3000000 and not flat:
            # 1.3 MB of samples without stacks (perf record without -g): no
            # blank line, each line a sample
            text = "".join("flat %d [000] 2.%06d: %d cycles:  %x g%d (/bin/flat)\n" %
                           (i % 9, i, 1 + i % 5, 0x500000 + i % 77, rng.randrange(90))
                           for i in range(24000))
            flat = True
        elif k % 997 == 0:
            text = "unrecognized line %d\n\n" % k
        else:
            text = sample(rng, "prog%d" % (k % 7), "cycles", rng.randrange(1, 40),
                          "\r\n" if k % 5 == 0 else "\n")
            if k % 11 == 0:
                text = text.replace("\n\t", "\n# a comment in a sample\n\t", 1) + "\n\n"
        out.append(text)
        size += len(text)
    return "".join(out).encode()


def read_alike(path, many, what):
    """collapse at -j many reads path as -j 1: output, messages, status;
    and from a pipe."""
    one = golden.run(["collapse", "-j1", path], check=False)
    with open(path, "rb") as f:
        data = f.read()
    for label, args, stdin in (("file", [path], None), ("pipe", ["-"], data)):
        got = golden.run(["collapse", "-j%d" % many] + args, stdin=stdin, check=False)
        name = "%s (%s) with %d threads" % (what, label, many)
        golden.first_difference(got[0], one[0], name)
        if got[2] != one[2]:
            golden.fail("%s: exit %d, -j 1 exits %d" % (name, got[2], one[2]))
        want = sorted(one[1].replace("<stdin>", path).splitlines())
        if sorted(got[1].replace("<stdin>", path).splitlines()) != want:
            golden.fail("%s: messages differ:\n%s\n-j 1:\n%s" % (name, got[1], one[1]))
    return one


def same_exports(path, work):
    """pprof and speedscope: the same bytes at -j 1, 2, 4 and 8."""
    for to in ("pprof", "speedscope"):
        want = None
        for n in (1, 2, 4, 8):
            out = os.path.join(work, "j%d.%s" % (n, to))
            golden.run(["convert", "--to", to, "-j%d" % n, path, "-o", out])
            with open(out, "rb") as f:
                got = f.read()
            if want is not None and got != want:
                golden.fail("%s: convert --to %s with %d threads differs from -j 1" %
                            (path, to, n))
            want = got


def edges(work):
    """The threads' ranges read as one thread reads the whole input."""
    rng = random.Random(20)
    text = edges_text(rng)
    path, cut = os.path.join(work, "edges.txt"), os.path.join(work, "edges-cut.txt")
    with open(path, "wb") as f:
        f.write(text)
    with open(cut, "wb") as f:
        f.write(text + b"prog 1/1 [000] 9.0: 1 cycles: \n\t4000 main (/bin/pro")
    for n in (2, 4, 8):
        one = read_alike(path, n, "edges.txt")
        if one[2] != 0 or one[1].count("unrecognized line") < 4 or "'instructions'" not in one[1]:
            golden.fail("edges.txt: expected warnings, read fine:\n" + one[1])
        one = read_alike(cut, n, "edges-cut.txt")
        if one[2] == 0 or ":%d: truncated input" % (text.count(b"\n") + 2) not in one[1]:
            golden.fail("edges-cut.txt: expected an error at its last line:\n" + one[1])
    for name in sorted(os.listdir(DATA)) + [path]:
        if name.endswith(".txt") and "collapsed" not in name:
            same_exports(os.path.join(DATA, name), work)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--generate"]:
        gen, work = args[1], args[2]
        os.makedirs(work, exist_ok=True)
        big = os.path.join(work, "generated.txt")
        with open(big, "wb") as f:
            subprocess.run([gen, "24"], stdout=f, check=True)
        args = args[3:] + [big]
        edges(work)
    for inp in args:
        a, _, _ = golden.run(["flamegraph", inp])
        b, _, _ = golden.run(["flamegraph", inp])
        if a != b:
            golden.fail("%s: two flame graphs of the same input differ" % inp)
        one, _, _ = golden.run(["collapse", "-j1", inp])
        for n in (2, 3, 8):
            many, _, _ = golden.run(["collapse", "-j%d" % n, inp])
            golden.first_difference(many, one, "%s with %d threads" % (inp, n))


if __name__ == "__main__":
    main()
