# perfdata_loop.py - the DWARF workload of bench/run_perfdata.sh: python3
# (Debian's, built without frame pointers) serialising, parsing and
# matching JSON with a regular expression, so that the sampled stacks run
# deep through the interpreter, the json module's C accelerator and the
# re engine. Its work grows linearly with N (each round is at most 40
# objects), which is how the script scales it to the samples asked for.
#
# usage: python3 bench/perfdata_loop.py N
import json
import re
import sys

ID = re.compile(r'"id":\s*"([a-z]+)-(\d+)"')


def record(i):
    return {"id": "rec-%d" % i, "labels": ["x", "y", str(i % 7)],
            "inner": {"weight": i / 3.0, "even": i % 2 == 0}}


def rounds(n):
    acc = 0
    for i in range(n):
        text = json.dumps([record(j) for j in range(i % 40)])
        acc += sum(int(m.group(2)) for m in ID.finditer(text))
        acc += len(json.loads(text))
    return acc


if __name__ == "__main__":
    print(rounds(int(sys.argv[1])))
