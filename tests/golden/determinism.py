"""The same input gives the same bytes: flame graphs drawn twice, and
collapse with one thread or several (chunks of the input are parsed in
parallel and merged).

usage: determinism.py [--generate GEN_PERF WORKDIR] INPUT...
(--generate writes a 24 MB perf script input with the benchmark generator,
large enough for many chunks per thread.)
"""
import os
import subprocess
import sys

import golden


def main():
    args = sys.argv[1:]
    if args[:1] == ["--generate"]:
        gen, work = args[1], args[2]
        os.makedirs(work, exist_ok=True)
        big = os.path.join(work, "generated.txt")
        with open(big, "wb") as f:
            subprocess.run([gen, "24"], stdout=f, check=True)
        args = args[3:] + [big]
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
