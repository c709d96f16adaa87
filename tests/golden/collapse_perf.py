"""Golden test: `ember collapse --OPT INPUT` against stackcollapse-perf.pl's
expected output (FlameGraph's test suite) or inferno's.

usage: collapse_perf.py INPUT EXPECTED [ember options...]

Where ember is right and the script is wrong, this test says so:
- Inputs that do not end with a blank line: the script drops the last
  sample; ember keeps it. The test checks that ember's output without that
  sample is the expected file byte for byte, and that the full output adds
  exactly that sample.
- --java-l-fixed: the 8 --pid/--tid Java fixtures predate the script's own
  fix (it now strips Java's leading 'L' when the root is "java-PID"); the
  test applies that fix to the expected file and checks today's behaviour.
- --operator-fixed: inferno cuts "operator()" to "operator"; ember keeps it.
- --keeps-last: the expected output is inferno's, which keeps the last
  sample too: compare the whole output.
"""
import re
import sys

import golden


def java_l_fixed(expected):
    out = []
    for line in expected.split(b"\n"):
        if not line:
            continue
        frames = line.split(b";")
        if frames[0].startswith(b"java"):
            frames = [frames[0]] + [f[1:] if f.startswith(b"L") and b"/" in f else f
                                    for f in frames[1:]]
        out.append(b";".join(frames))
    # the stacks changed, so their sorted order may have too
    out.sort(key=lambda line: line.rpartition(b" ")[0])
    return b"".join(line + b"\n" for line in out)


def last_sample(data):
    """(text before the last sample, its period) if the input does not end
    with a blank line, else (None, None)."""
    body = data.rstrip(b"\n")
    if data.endswith(b"\n\n") or b"\n\n" not in body:
        return None, None
    cut = body.rindex(b"\n\n") + 2
    event = body[cut:].split(b"\n")[0]
    m = re.search(rb":\s*(\d+)?\s+(\S+):\s*$", event)
    period = int(m.group(1)) if m and m.group(1) else 1
    return data[:cut], period


def main():
    args = sys.argv[1:]
    fixes = [a for a in args if a in ("--java-l-fixed", "--operator-fixed", "--keeps-last")]
    args = [a for a in args if a not in fixes]
    inp, expected_path, opts = args[0], args[1], args[2:]
    with open(inp, "rb") as f:
        data = f.read()
    with open(expected_path, "rb") as f:
        expected = f.read()
    if "--java-l-fixed" in fixes:
        expected = java_l_fixed(expected)
    if "--operator-fixed" in fixes:
        expected = expected.replace(b"::operator;", b"::operator();")

    full, _, _ = golden.run(["collapse"] + opts + [inp])
    head, period = last_sample(data)
    if head is None or "--keeps-last" in fixes:
        golden.first_difference(full, expected, inp)
        return
    cut, _, _ = golden.run(["collapse"] + opts, stdin=head)
    golden.first_difference(cut, expected, inp + " (without its last sample)")
    a, b = golden.folded_dict(cut), golden.folded_dict(full)
    changed = {k: b.get(k, 0) - a.get(k, 0) for k in set(a) | set(b) if a.get(k) != b.get(k)}
    if len(changed) != 1 or list(changed.values())[0] != period:
        golden.fail("%s: keeping the last sample should add one stack of %d, got %r" %
                    (inp, period, changed))


if __name__ == "__main__":
    main()
