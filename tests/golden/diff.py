"""`ember diff` against inferno's diff-folded cases (default, --normalize,
--strip-hex: the same lines; fractional counts: ember keeps them exact where
inferno truncates them), the differential SVG (sized by AFTER: red grew,
blue shrank), and the blind spot fixed: what vanished from AFTER is drawn by
--vanished, sized by BEFORE.

usage: diff.py
"""
import os
import tempfile

import golden
import svgframes

D = os.path.join(golden.CORPUS, "inferno", "tests", "data", "diff-folded")
BEFORE, AFTER = os.path.join(D, "before.txt"), os.path.join(D, "after.txt")


def lines(data):
    return sorted(l for l in data.decode().splitlines() if l)


def main():
    for name, opts in (("default", []), ("normalize", ["--normalize"]),
                       ("strip_hex", ["--strip-hex"])):
        got, _, _ = golden.run(["diff", "--folded"] + opts + [BEFORE, AFTER])
        want = open(os.path.join(D, "results", name + ".txt"), "rb").read()
        if lines(got) != lines(want):
            golden.fail("diff %s: got\n%s\nexpected\n%s" % (name, got.decode(), want.decode()))
        print("ok diff-folded", name)

    # fractions: exact (inferno's result truncates them to integers)
    got, _, _ = golden.run(["diff", "--folded", os.path.join(D, "before_fractionals.txt"), AFTER])
    got = {l.rsplit(" ", 2)[0]: l.rsplit(" ", 2)[1:] for l in lines(got)}
    if got["dd;[unknown];read;system_call_[k];__fdget_pos_[k]"] != ["11.98", "15"]:
        golden.fail("fractional counts should stay exact: %s" % got)
    print("ok fractional counts kept exact")

    # stacks compare as their views name them: --srcline's "leaf:file:line"
    with tempfile.TemporaryDirectory() as d:
        perf = os.path.join(d, "srcline.perf")
        with open(perf, "w") as f:
            f.write("prog 1 1.0: 1000 cpu-clock:\n\t 401000 leaf+0x10 (/bin/prog)\n"
                    "  prog.c:12\n\t 401100 main+0x10 (/bin/prog)\n  prog.c:30\n\n")
        got, _, _ = golden.run(["diff", "--srcline", "--folded", perf, perf])
        if got != b"prog;main:prog.c:30;leaf:prog.c:12 1000 1000\n":
            golden.fail("diff --srcline should keep the lines in the names: %r" % got)
    print("ok diff of names as the views show them")

    # the SVG: frames sized by AFTER, coloured by the change
    with tempfile.TemporaryDirectory() as out:
        check_svg(out)
    _, err, rc = golden.run(["diff", BEFORE], check=False)
    if rc != 2 or "expected two profiles" not in err:
        golden.fail("one input: expected exit 2, got %d: %s" % (rc, err))
    print("ok errors")


def check_svg(out):
    svg, van = os.path.join(out, "diff.svg"), os.path.join(out, "vanished.svg")
    _, err, _ = golden.run(["diff", BEFORE, AFTER, "-o", svg])
    if "1 stacks (1.5% of BEFORE) are gone from AFTER" not in err:
        golden.fail("expected a warning about the vanished stack, got: %r" % err)
    fr = svgframes.frames(open(svg).read())
    total = [f for f in fr if f[0] == "all"]
    if not total or total[0][1] != 80:
        golden.fail("the differential graph should be sized by AFTER (80 samples): %s" % total)
    names = {f[0]: f for f in fr}
    if "0xF1BDE348" in names:
        golden.fail("a stack gone from AFTER cannot have width in the AFTER-sized graph")
    grew = names["__fget_light"][5]  # 0 -> 12: red
    if not grew.startswith("rgb(255,"):
        golden.fail("a frame that grew should be red, is %s" % grew)

    # --vanished: sized by BEFORE, where the vanished stack shows, in blue
    _, err, _ = golden.run(["diff", BEFORE, AFTER, "-o", svg, "--vanished", van])
    if "gone from AFTER" in err:
        golden.fail("no warning expected with --vanished: %r" % err)
    vf = {f[0]: f for f in svgframes.frames(open(van).read())}
    if vf["all"][1] != 65 or "0xF1BDE348" not in vf:
        golden.fail("--vanished should be sized by BEFORE (65) and show 0xF1BDE348: %s" %
                    sorted(vf)[:10])
    fill = vf["0xF1BDE348"][5]
    if not fill.startswith("rgb(") or fill.split(",")[2].rstrip(")") != "255":
        golden.fail("the vanished frame should be blue, is %s" % fill)
    print("ok differential SVG, and --vanished shows what AFTER lost")

    # the FlameGraph way: the two-count lines into `flamegraph`, detected as folded
    lines2 = os.path.join(out, "diff.folded")
    data, _, _ = golden.run(["diff", "--folded", BEFORE, AFTER])
    with open(lines2, "wb") as f:
        f.write(data)
    piped = os.path.join(out, "piped.svg")
    golden.run(["flamegraph", "--title", "Differential Flame Graph", lines2, "-o", piped])
    if svgframes.frames(open(piped).read()) != fr:
        golden.fail("diff --folded | flamegraph should draw what diff -o draws")
    print("ok diff --folded | flamegraph (two counts detected as folded)")


if __name__ == "__main__":
    main()
