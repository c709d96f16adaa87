"""Golden tests of the macOS-side readers (and `go tool pprof -raw`):
`ember collapse --format FORMAT INPUT` against the reference tools' own
expected results, and the same output when the format is detected.

usage: readers_macos.py MODE ARGS...
  sample INPUT EXPECTED [ember options]   inferno's collapse-sample results
  sample-top INPUT                        leaves against sample's own table
  xctrace INPUT EXPECTED                  inferno's collapse-xctrace results
  dtrace INPUT EXPECTED [ember options]   inferno's collapse-dtrace results
  dtrace-offsets INPUT EXPECTED           --include-offset, offsets stripped
  instruments INPUT SNAPSHOT NAME         speedscope's Jest snapshot NAME
  pprof-raw INPUT EXPECTED SCRIPT [opts]  ember's and stackcollapse-go.pl's
  detect FORMAT FILE...                   auto-detection reads FILEs as FORMAT

Differences from the reference tools, each checked here:
- inferno writes a line per leaf in input order, repeating stacks; ember
  merges and sorts: expected files are merged and sorted before comparing.
- speedscope reads Instruments' weights with parseInt: "73.35 MB" counts
  as 73 MB, "2.45 s" as 2 s, and a frame's self weight is its total minus
  its children's (so the truncations pile up: "start;main 1.00 MB" where
  Instruments says main has no self bytes). ember keeps the decimals and
  the Self column where there is one. So stacks must be the same, and each
  frame's total weight must lie within one display unit of speedscope's
  (the unit Instruments shows for that total: 1 ms, 1 s, 1 MB, 1 Gc...),
  exactly where no value was truncated.
- stackcollapse-go.pl reads only the first function of a location, so a
  location with inlined calls shows only its innermost function; ember
  shows the inlined callers too. The script's output is compared with
  ember's on the input without the inlined lines (what the script reads).
"""
import collections
import gzip
import re
import sys
from decimal import Decimal

import golden


def merged(data):
    """Folded lines summed per stack, sorted bytewise, as ember writes them."""
    out = collections.OrderedDict()
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        stack, _, count = line.rpartition(b" ")
        out[stack] = out.get(stack, Decimal(0)) + Decimal(count.decode())
    return b"".join(b"%s %s\n" % (k, str(out[k]).encode()) for k in sorted(out))


def collapse(fmt, inp, opts=(), stdin=None, detect=True):
    """ember's output with --format, checked equal to the detected one."""
    args = ["collapse"] + list(opts)
    got, err, _ = golden.run(args + ["--format", fmt] + ([inp] if inp else []), stdin=stdin)
    if detect:
        auto, _, _ = golden.run(args + ([inp] if inp else []), stdin=stdin)
        golden.first_difference(auto, got, "%s: without --format (detected)" % inp)
    return got, err


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read()


def mode_sample(inp, expected, *opts):
    """inferno 0.12 keeps the last count of a stack met several times (its
    result for sample.txt has "__open 2" where the graph has 7 + 5 + 2):
    ember adds them up. So: the same stacks as inferno, none lighter, and
    all the samples of the call graph's leaves (the waiting ones aside)."""
    got, _ = collapse("sample", inp, opts)
    ours, theirs = golden.folded_dict(got), golden.folded_dict(merged(read(expected)))
    if set(ours) != set(theirs):
        golden.fail("%s: stacks differ from inferno's: %s" % (inp, set(ours) ^ set(theirs)))
    for k, v in theirs.items():
        if ours[k] < v:
            golden.fail("%s: %s has %d samples, inferno %d" % (inp, k, ours[k], v))
    if sum(ours.values()) != sum(leaf_counts(read(inp).decode()).values()):
        golden.fail("%s: %d samples, the leaves of the call graph have %d" %
                    (inp, sum(ours.values()), sum(leaf_counts(read(inp).decode()).values())))
    if ours == theirs:
        golden.fail("%s: expected repeated stacks that inferno does not add up" % inp)


def leaf_counts(text):
    """{leaf function: samples} over the leaves of sample's call graph (lines
    not followed by a deeper one), without waiting functions."""
    graph = text.split("Call graph:")[1].split("Total number in stack")[0]
    rows = []
    for line in graph.splitlines():
        m = re.match(r"^    ([ +|:!]*)(\d+) (.*)$", line)
        if m:
            rows.append((len(m.group(1)), int(m.group(2)), m.group(3)))
    out = collections.Counter()
    for i, (depth, count, rest) in enumerate(rows):
        if i + 1 < len(rows) and rows[i + 1][0] > depth:
            continue
        func = re.split(r"\s+\(in |  \[", rest)[0]
        if not func.split("(")[0].rstrip().endswith(SAMPLE_IDLE):
            out[func] += count
    return out


SAMPLE_IDLE = ("__psynch_cvwait", "__select", "__semwait_signal", "__ulock_wait", "__wait4",
               "__workq_kernreturn", "kevent", "mach_msg_trap", "read", "semaphore_wait_trap")


def sample_name(text):
    """A function as ember names it: module`function, cut at its parameters
    (only for names without templates or nested parentheses, which the
    caller checks)."""
    m = re.match(r"(.*?)\s+\(in (.*?)\)", text)
    func, mod = m.group(1), m.group(2)
    func = func.split("(")[0].rstrip()
    if mod.endswith(".dylib"):
        mod = mod[:-6]
    return "%s`%s" % (mod, func)


def mode_sample_top(inp):
    """sample prints, after the call graph, the samples of each function at
    the top of the stack ("Sort by top of stack", rows of 5 and more): the
    leaves of ember's stacks must add up to it, function by function."""
    text = read(inp).decode()
    got, _ = collapse("sample", inp)
    leaves = collections.Counter()
    for line in got.decode().splitlines():
        stack, _, count = line.rpartition(" ")
        leaves[stack.split(";")[-1]] += int(count)
    graph = text.split("Call graph:")[1].split("Total number in stack")[0]
    raw = collections.defaultdict(set)  # ember's name -> the functions it stands for
    for line in graph.splitlines():
        m = re.match(r"\s{4}[ +|:!]*\d+ (.*?)\s+\(in ", line)
        if m:
            raw[sample_name(line.split(" ", 1)[1].lstrip("+|:! ").split(" ", 1)[1])].add(
                m.group(1))
    table = text.split("Sort by top of stack, same collapsed (when >= 5):")[1]
    checked = 0
    for row in table.split("\n\n")[0].strip().splitlines():
        m = re.match(r"\s*(.*?)\s+(\d+)$", row)
        name, count = sample_name(m.group(1)), int(m.group(2))
        if name.endswith(SAMPLE_IDLE) or re.search(r"<|\?\?\?|\(anonymous", m.group(1)):
            continue  # hidden as inferno hides them, or named by rules not repeated here
        exact = len(raw[name]) == 1
        if (exact and leaves[name] != count) or leaves[name] < count:
            golden.fail("%s: %s is the top of %d samples, ember's leaves have %d" %
                        (inp, name, count, leaves[name]))
        checked += exact
    if checked < 100:
        golden.fail("%s: only %d functions of the table could be checked" % (inp, checked))


def mode_xctrace(inp, expected):
    got, _ = collapse("xctrace", inp)
    golden.first_difference(got, merged(read(expected)), inp)


def mode_dtrace(inp, expected, *opts):
    got, _ = collapse("dtrace", inp, opts)
    golden.first_difference(got, merged(read(expected)), inp)


def mode_dtrace_offsets(inp, expected):
    """--include-offset where inferno has no result: the callers keep an
    offset, the leaf has none, and without them the stacks are the
    default ones (so names are finished the same way, offset or not)."""
    got, _ = collapse("dtrace", inp, ["--include-offset"])
    offset = re.compile(rb"\+0x[0-9a-f]+$")
    stripped = []
    for line in got.splitlines():
        stack, _, count = line.rpartition(b" ")
        frames = stack.split(b";")
        if offset.search(frames[-1]):
            golden.fail("%s: the leaf kept its offset: %r" % (inp, line))
        if not any(offset.search(f) for f in frames[:-1]):
            golden.fail("%s: no caller kept its offset: %r" % (inp, line))
        stripped.append(b";".join(offset.sub(b"", f) for f in frames) + b" " + count)
    golden.first_difference(merged(b"\n".join(stripped)), merged(read(expected)),
                            inp + " with --include-offset, offsets stripped")


# ---- Instruments: speedscope's snapshot

WEIGHT = re.compile(r" (?:[\d.]+(?:ms|s| B| KB| MB| GB)|\d+:\d\d)$")


def snapshot(path, name):
    """The stacks (without their formatted weights) and the frames (name,
    total weight) of exports[`NAME`] in a Jest snapshot."""
    text = read(path).decode()
    start = text.index("exports[`%s`] = `" % name)
    body = text[start:text.index("\n`;\n", start)]
    stacks = collections.defaultdict(Decimal)
    for s in re.findall(r'^    "(.*)",$', body.split('"stacks": [')[1], re.M):
        stacks[WEIGHT.sub("", s)] += speedscope_weight(WEIGHT.search(s).group(0)[1:])
    frames = {n: Decimal(t) for n, t in
              re.findall(r'"name": "(.*)",\n\s*"selfWeight": \d+,\n\s*"totalWeight": (\d+)',
                         body)}
    return stacks, frames


def speedscope_weight(w):
    """A weight as speedscope prints it (rounded: enough to choose a unit),
    in its numbers: milliseconds (cycles are printed as milliseconds too)
    or bytes."""
    m = re.match(r"^([\d.]+)(ms|s| B| KB| MB| GB)$", w)
    if m:
        scale = {"ms": 1, "s": 1000, " B": 1, " KB": 1 << 10, " MB": 1 << 20, " GB": 1 << 30}
        return Decimal(m.group(1)) * scale[m.group(2)]
    m = re.match(r"^(\d+):(\d\d)$", w)  # minutes:seconds
    return (Decimal(m.group(1)) * 60 + Decimal(m.group(2))) * 1000


def display_unit(total, kind):
    """The unit Instruments shows a total in, which speedscope truncates to."""
    steps = {"time": [1, 1000, 60000], "bytes": [1, 1 << 10, 1 << 20, 1 << 30],
             "cycles": [1, 10**3, 10**6, 10**9, 10**12]}[kind]
    return max([s for s in steps if total >= s] or [1])


def mode_instruments(inp, snap, name, kind, exact):
    """Same call tree as speedscope's; each frame's total weight (counted
    once per stack, as speedscope counts it) equal to speedscope's, or, where
    speedscope truncated, within one display unit per call-tree node of that
    frame."""
    got, _ = collapse("instruments", inp)
    ours = {}
    for line in got.decode().splitlines():
        stack, _, w = line.rpartition(" ")
        ours[stack] = Decimal(w)
    stacks, frames = snapshot(snap, name)
    prefixes = lambda ss: {";".join(s.split(";")[:i]) for s in ss
                           for i in range(1, len(s.split(";")) + 1)}
    mine, theirs = prefixes(ours), prefixes(stacks)
    if mine != theirs:
        golden.fail("%s: call tree differs from speedscope's\n  only ember: %s\n"
                    "  only speedscope: %s" % (inp, sorted(mine - theirs)[:5],
                                               sorted(theirs - mine)[:5]))
    node_total = collections.defaultdict(Decimal)
    frame_total = collections.defaultdict(Decimal)
    for stack, w in ours.items():
        fs = stack.split(";")
        for i in range(1, len(fs) + 1):
            node_total[";".join(fs[:i])] += w
        for f in set(fs):
            frame_total[f] += w
    # speedscope's totals of a node are its display truncated, so the unit
    # is that of the larger of the two
    their_node = collections.defaultdict(Decimal)
    for stack, w in stacks.items():
        fs = stack.split(";")
        for i in range(1, len(fs) + 1):
            their_node[";".join(fs[:i])] += w
    tolerance = collections.defaultdict(Decimal)
    for node, t in node_total.items():
        fs = node.split(";")
        if fs[-1] not in fs[:-1]:  # the outermost call of a recursion
            tolerance[fs[-1]] += display_unit(max(t, their_node[node]), kind)
    if set(frame_total) != set(frames):
        golden.fail("%s: frames differ from speedscope's" % inp)
    for f, t in frame_total.items():
        s = frames[f]
        if (s != t) if exact == "exact" else abs(s - t) > tolerance[f]:
            golden.fail("%s: %s weighs %s in ember, %s in speedscope (tolerance %s)" %
                        (inp, f, t, s, 0 if exact == "exact" else tolerance[f]))


def mode_pprof_raw(inp, expected, script_expected, *opts):
    got, _ = collapse("pprof-raw", inp, opts)
    golden.first_difference(got, read(expected), inp)
    # what stackcollapse-go.pl reads: the first function of each location
    lines, in_locations = [], False
    for line in read(inp).split(b"\n"):
        if line.startswith(b"Locations"):
            in_locations = True
        elif line.startswith(b"Mappings"):
            in_locations = False
        elif in_locations and not re.match(rb"^\s*\d+: ", line):
            continue
        lines.append(line)
    plain, _ = collapse("pprof-raw", None, opts, stdin=b"\n".join(lines))
    golden.first_difference(plain, read(script_expected),
                            inp + " without inlined frames, against stackcollapse-go.pl")
    if len(lines) < len(read(inp).split(b"\n")) and plain == got:
        golden.fail("%s: the inlined frames that the script misses should show" % inp)


def mode_detect(fmt, *files):
    for f in files:
        forced, _, rc = golden.run(["collapse", "--format", fmt, f], check=False)
        auto, _, rc2 = golden.run(["collapse", f], check=False)
        if rc != rc2 or forced != auto:
            golden.fail("%s: detected as another format than %s" % (f, fmt))


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    {"sample": mode_sample, "sample-top": mode_sample_top, "xctrace": mode_xctrace,
     "dtrace": mode_dtrace, "dtrace-offsets": mode_dtrace_offsets,
     "instruments": mode_instruments, "pprof-raw": mode_pprof_raw,
     "detect": mode_detect}[mode](*args)


if __name__ == "__main__":
    main()
