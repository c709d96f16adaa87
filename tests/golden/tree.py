"""The faster tree gives the same bytes as before.

- Flame graphs skip the subtrees narrower than --minwidth: the frames they
  draw, the count of frames not drawn and the width those leave empty are
  checked against flamegraph.pl's flow() written out here, on stacks whose
  narrow subtrees hold split frames ("a" and "a.b" under one parent: the
  line ending at "a" and the lines below it are drawn apart).
- Differential graphs: the largest change, which sets every colour, may be
  in a pruned subtree: the frames drawn with pruning (--minwidth 0.1) are
  the frames drawn without it (--minwidth 0), colours included.
- `diff --folded` on two folded files merges their lines without building
  profiles; standard input (whose format cannot be detected twice) takes
  the profiles' way: both must print the same bytes and say the same
  things, for counts with decimals, differential inputs, --normalize,
  --strip-hex, repeated stacks, empty stacks and bad input.
- A stack of no frames weighs on the root, whatever the line before it.

usage: tree.py WORKDIR
"""
import os
import random
import re

import golden
import svgframes

case, main = golden.cases()

NAMES = ["a", "a.b", "a0", "a b", "ab", "b", "b-1", "b", "c", "main", "m", "m.x", "x"]


def random_stacks(rng, n, big=True):
    """{stack: count}: a few heavy stacks, and many light ones in deep
    narrow subtrees, over names that extend one another by bytes below
    ';' (which split frames)."""
    stacks = {}
    if big:
        stacks["main;heavy"] = 200000
        stacks["main;heavy;work"] = 100000
        # narrow subtrees where "a" is drawn twice: its line, then a.b's,
        # then the lines below it
        for j in range(40):
            for s in ("a", "a;c", "a.b", "a0;d"):
                stacks["main;light%d;%s" % (j, s)] = 1 + j % 3
    for _ in range(n):
        depth = rng.randint(1, 7)
        s = ";".join(rng.choice(NAMES) for _ in range(depth))
        stacks[s] = stacks.get(s, 0) + rng.randint(1, 30)
    return stacks


def write_folded(path, stacks):
    with open(path, "w") as f:
        for s, n in stacks.items():
            f.write("%s %s\n" % (s, n))


def flow(stacks, min_time):
    """flamegraph.pl's flow() over the sorted lines: the frames drawn as
    (depth, name, width), the count of those narrower than min_time, and
    the width those leave empty under drawn frames."""
    lines = sorted((s.encode(), n) for s, n in stacks.items())
    drawn, hidden, empty = [], [0], [0]
    last, start, under, t = [], [], [], 0

    def close(k):
        w = t - start[k]
        if w < min_time:
            hidden[0] += 1
            if k > 0:
                under[k - 1] += w
            return
        drawn.append((k, last[k], w))
        empty[0] += under[k]

    for s, n in lines:
        this = [b""] + s.split(b";")
        same = 0
        while same < len(last) and same < len(this) and last[same] == this[same]:
            same += 1
        for k in range(len(last) - 1, same - 1, -1):
            close(k)
        del start[same:], under[same:]
        for k in range(same, len(this)):
            start.append(t)
            under.append(0)
        last = this
        t += n
    for k in range(len(last) - 1, -1, -1):
        close(k)
    return drawn, hidden[0], empty[0]


def svg_frames(svg):
    """(depth, name, exact width) of each frame drawn, from ember:w."""
    text = svg.decode()
    height = float(re.search(r'<svg [^>]*height="([\d.]+)"', text).group(1))
    out = []
    for m in re.finditer(r'ember:w="([\d.]+)">\n<title>(.*?)</title><rect x="[\d.]+" '
                         r'y="([\d.]+)"', text):
        w, title, y = int(m.group(1)), m.group(2), float(m.group(3))
        depth = round((height - 34 - y + 1) / 16 - 1)
        name = "" if depth == 0 else title.rsplit(" (", 1)[0]
        out.append((depth, name.encode(), w))
    return sorted(out)


@case
def threads_read_alike(d):
    """Folded inputs of many chunks read on a thread of their own (-j 2),
    with their stacks split ahead while the tree is behind, or in byte
    ranges by several threads (-j 4, -j 7), give the bytes one thread
    gives: a flame graph, folded stacks, a report, a diff, pprof and
    speedscope (which number frames), warnings (a line without a count)."""
    rng = random.Random(13)
    before, after = random_stacks(rng, 150000), random_stacks(rng, 150000)
    b, a = os.path.join(d, "before.folded"), os.path.join(d, "after.folded")
    write_folded(b, before)
    write_folded(a, after)
    with open(a, "ab") as f:
        f.write(b"a line without a count\n")
    for cmd in (["flamegraph", b], ["collapse", b], ["report", "--top", "50", a],
                ["diff", b, a], ["diff", "--folded", b, a], ["collapse", a],
                ["convert", "--to", "pprof", a, "-o", "-"],
                ["convert", "--to", "speedscope", b, "-o", "-"]):
        one = golden.run(cmd[:1] + ["-j", "1"] + cmd[1:])
        for j in ("2", "4", "7"):
            other = golden.run(cmd[:1] + ["-j", j] + cmd[1:])
            if one != other or not one[0]:
                golden.fail("%s: -j %s and -j 1 differ" % (" ".join(cmd), j))


@case
def flame_pruning(d):
    rng = random.Random(9)
    for i in range(6):
        stacks = random_stacks(rng, 3000)
        path = os.path.join(d, "s%d.folded" % i)
        write_folded(path, stacks)
        total = sum(stacks.values())
        min_time = 0.1 / ((1200 - 20) / total)
        want, hidden, empty = flow(stacks, min_time)
        svg, _, _ = golden.run(["flamegraph", path])
        got = svg_frames(svg)
        if got != sorted(want):
            golden.fail("%s: the frames drawn differ from flow()'s: %s" %
                        (path, sorted(set(got) ^ set(want))[:5]))
        m = re.search(rb'<text id="details"[^>]*>([^<]*)<', svg)
        text = "%d frames narrower than 0.1 px not drawn (%.2f%% of the total)" % (
            hidden, 100.0 * empty / total)
        if m.group(1).decode() != text:
            golden.fail("%s: expected %r, got %r" % (path, text, m.group(1)))


@case
def flame_pruning_other_values(d):
    """Stacks that weigh only in values not shown are not drawn, nor
    counted as frames not drawn, also where whole subtrees of them are
    pruned: a pprof profile's cpu beside folded stacks that have none."""
    prof = os.path.join(golden.CORPUS, "speedscope/sample/profiles/pprof/simple.prof")
    if not os.path.exists(prof):
        print("skipped flame_pruning_other_values: no %s" % prof)
        return
    path = os.path.join(d, "count.folded")
    write_folded(path, random_stacks(random.Random(13), 3000))
    cpu, _, _ = golden.run(["collapse", "--event", "cpu", prof])
    stacks = {}
    for line in cpu.decode().splitlines():
        s, n = line.rsplit(" ", 1)
        stacks[s] = int(n)
    total = sum(stacks.values())
    want, hidden, empty = flow(stacks, 0.1 / ((1200 - 20) / total))
    svg, _, _ = golden.run(["flamegraph", "--event", "cpu", prof, path])
    got = svg_frames(svg)
    if got != sorted(want):
        golden.fail("the frames drawn differ from flow()'s: %s" % sorted(set(got) ^ set(want))[:5])
    m = re.search(rb'<text id="details"[^>]*>([^<]*)<', svg)
    text = "%d frames narrower than 0.1 px not drawn (%.2f%% of the total)" % (
        hidden, 100.0 * empty / total) if hidden else " "
    if m.group(1).decode() != text:
        golden.fail("expected %r, got %r" % (text, m.group(1)))


@case
def flame_pruning_differential(d):
    rng = random.Random(11)
    for i in range(4):
        before, after = random_stacks(rng, 2000), random_stacks(rng, 2000)
        # the largest change of all, in a subtree too narrow to draw (the
        # graph is sized by AFTER)
        before["m;m.x;a;a.b;x"] = 90000 if i % 2 else 1
        before["m;m.x;a;a.b;x;c"] = 1 if i % 2 else 95000
        after["m;m.x;a;a.b;x"] = after["m;m.x;a;a.b;x;c"] = 1
        path = os.path.join(d, "d%d.folded" % i)
        with open(path, "w") as f:
            for s in set(before) | set(after):
                f.write("%s %d %d\n" % (s, before.get(s, 0), after.get(s, 0)))
        pruned, _, _ = golden.run(["flamegraph", path])
        full, _, _ = golden.run(["flamegraph", "--minwidth", "0", path])
        a, b = svgframes.frames(pruned.decode()), set(svgframes.frames(full.decode()))
        missing = [f for f in a if f not in b]
        if missing or len(a) >= len(b):
            golden.fail("%s: frames drawn with pruning differ from those without: %s" %
                        (path, missing[:5]))


def both_ways(d, name, before, after, opts=()):
    """diff --folded of two files (merged), and with a transform that
    changes nothing (the profiles' way), and of stdin and a file (detected
    once: the profiles' way too): the same output, messages and status."""
    b, a = os.path.join(d, name + ".before"), os.path.join(d, name + ".after")
    with open(b, "wb") as f:
        f.write(before)
    with open(a, "wb") as f:
        f.write(after)
    opts = ["diff", "--folded"] + list(opts)
    merged = golden.run(opts + [b, a], check=False)
    tree = golden.run(opts + ["--hide", "(?!)", b, a], check=False)
    if tree != merged:
        golden.fail("diff --folded %s %s: the merge and the profiles differ:\n%r\n%r" %
                    (name, " ".join(opts), merged, tree))
    if "--format" not in opts:
        piped = golden.run(opts + ["-", a], stdin=before, check=False)
        if (piped[0], piped[1].replace("<stdin>", b), piped[2]) != merged:
            golden.fail("diff --folded %s %s, BEFORE piped: the merge and the profiles differ:"
                        "\n%r\n%r" % (name, " ".join(opts), merged, piped))
    return merged


@case
def diff_folded_merge(d):
    rng = random.Random(5)
    for i in range(4):
        before = random_stacks(rng, 4000, big=i % 2 == 0)
        after = random_stacks(rng, 4000, big=i % 2 == 1)
        fb = "".join("%s %d\n" % kv for kv in before.items()).encode()
        fa = "".join("%s %d\n" % kv for kv in after.items()).encode()
        for opts in ((), ("--normalize",), ("--strip-hex",), ("-n", "-s")):
            out = both_ways(d, "r%d" % i, fb, fa, opts)
            if out[2] != 0 or not out[0]:
                golden.fail("diff of random stacks failed: %r" % (out,))
    # inputs of many chunks: AFTER is read while BEFORE is merged, and
    # stacks are split on the reading thread when the merge falls behind
    before = random_stacks(rng, 120000)
    after = random_stacks(rng, 120000)
    fb = "".join("%s %d\n" % kv for kv in before.items()).encode()
    # half of them with an address below (what --strip-hex merges)
    fa = "".join(("%s;0x%x %d\n" if v % 2 else "%s %d\n") % ((k, v, v) if v % 2 else (k, v))
                 for k, v in after.items()).encode()
    for opts in ((), ("--strip-hex",)):
        out = both_ways(d, "big", fb, fa, opts)
        if out[2] != 0 or len(out[0]) < 1000000:
            golden.fail("diff of inputs of many chunks failed: %r" % (out[1],))
    hexes = (b"f;0x1f;g 3\nf;0x2e;g 4\nf;0x1f;0xab 2\nf;x0x 1\nf;0x;a0x1 5\n"
             b"h;0x1 1\nh;0x2 1\nh;0x3 1\n")
    cases = {
        # decimals on one side only, rescaled as they come; --normalize truncates
        "decimals": (b"a;b 1\na;c 2.5\na 0.125\nz 3\n", b"a;b 4\na;c 1\nq 7.75\n"),
        # differential inputs: BEFORE's first count is its weight
        "differential": (b"a;b 1 2\na;c 3\na;c 4 5\n", b"a;b 4\na;c 1 9\n"),
        # repeated stacks add up; trailing ';' dropped; an empty stack
        # counts in the total only; CRLF
        "repeats": (b"a;b 1\na;b; 2\n;;; 5\na;b 3\r\n\nx;;y 2\n", b"a;b 4\n;; 6\na;b 1\nx;;y 1\n"),
        "hex": (hexes, hexes.replace(b" 3\n", b" 5\n")),
        "zeros": (b"a 0\nb 1\n", b"a 0\nc 2\n"),
        "order": (b"a;x 1\na.b;y 2\na 3\nB 4\na b 5\n", b"a;x 2\na 1\na-b 1\n"),
    }
    for name, (before, after) in cases.items():
        for opts in ((), ("--normalize",), ("--strip-hex",), ("-n", "-s")):
            out = both_ways(d, name, before, after, opts)
            if out[2] != 0:
                golden.fail("diff %s %s failed: %s" % (name, opts, out[1]))
    # lines without a count are skipped, as flamegraph.pl does, and
    # counted in one warning at the first of them (the file is folded all
    # the same: most of its lines are)
    out = both_ways(d, "warned", b"a;b 1\nno count here\nc 2\nnor here\n", b"a;b 2\n")
    if out[2] != 0 or "warned.before:2: ignored 2 lines with invalid format" not in out[1]:
        golden.fail("diff should warn about the lines without a count: %r" % (out,))
    # errors: the same message, nothing written
    bad = {
        "no_samples": (b"just text\n", b"a 1\n"),
        "weightless": (b"a 0\n", b"a 1\n"),
        "cut": (b"a 1\nb;c", b"a 1\n"),
        "overflow": (b"a 9223372036854775807\nb 1\n", b"a 1\n"),
        "overflow_rescale": (b"a 9223372036854775807\nb 0.5\n", b"a 1\n"),
        # BEFORE fits, and overflows once scaled to AFTER's decimals
        "overflow_scale": (b"a 922337203685477581\n", b"a 0.5\n"),
    }
    for name, (before, after) in bad.items():
        out = both_ways(d, name, before, after)
        if out[2] == 0 or out[0]:
            golden.fail("diff %s should fail without output: %r" % (name, out))


@case
def empty_stack_is_the_root(d):
    """A line whose stack has no frames (";; 5": Perl's split drops them
    all) weighs on the root, whatever the stack before it: after ";a",
    whose first frame is empty, it was put on that frame and written back
    as a line of one empty frame."""
    for text, want in ((b";a 1\n;; 5\n", b";a 1\n"), (b";; 5\n;a 1\n", b";a 1\n"),
                       (b";a 1\n;; 5\n;a;b 2\n", b";a 1\n;a;b 2\n")):
        path = os.path.join(d, "empty.folded")
        with open(path, "wb") as f:
            f.write(text)
        out, _, _ = golden.run(["collapse", path])
        golden.first_difference(out, want, "collapse of %r" % text)


@case
def diff_svg_one_tree(d):
    """The differential graph of two folded files is drawn from one profile
    built of their merged lines; with a transform, from BEFORE's profile
    made the differential one; with --vanished, from a third profile as
    before. The graph must be the same every way."""
    rng = random.Random(7)
    b, a = os.path.join(d, "b.folded"), os.path.join(d, "a.folded")
    stacks = random_stacks(rng, 3000)
    stacks["f;0x1f;g"] = stacks["f;0x2e;g"] = 3
    write_folded(b, stacks)
    with open(a, "w") as f:
        f.write("a;b 2.5\nf;0x3d;g 4\n")
        for s, n in random_stacks(rng, 3000).items():
            f.write("%s %d\n" % (s, n))
    for opts in ([], ["--normalize"], ["--strip-hex"], ["-n", "-s"]):
        graphs = []
        for way in ([], ["--hide", "(?!)"], ["--vanished", os.path.join(d, "gone.svg")]):
            out = os.path.join(d, "g%d.svg" % len(graphs))
            _, err, _ = golden.run(["diff"] + opts + way + [b, a, "-o", out])
            graphs.append((open(out, "rb").read(), err))
        if graphs[1][0] != graphs[0][0] or graphs[2][0] != graphs[0][0]:
            golden.fail("diff %s: the graphs from one, two and three profiles differ" %
                        " ".join(opts))
        if graphs[0][1] != graphs[1][1] or "gone from AFTER" not in graphs[0][1]:
            golden.fail("diff %s: what vanished is said differently: %r, %r" %
                        (" ".join(opts), graphs[0][1], graphs[1][1]))


if __name__ == "__main__":
    main()
