"""Golden test: ember draws the same frames as flamegraph.pl (same names,
sample counts, x, width and depth; optionally the same fill colours).

usage:
  flame_svg.py pipeline REF.svg INPUT [ember flamegraph options...]
      draw INPUT with ember and compare with flamegraph.pl's REF.svg
  flame_svg.py reconstruct REF.svg [ember flamegraph options...]
      rebuild the folded stacks REF.svg was drawn from (its frames, when
      none was too narrow to draw, determine them: a frame's self count is
      its samples less its children's), draw them with ember, and compare.
      This checks the drawing alone, for SVGs whose input is not in the
      corpus or was collapsed by an older stackcollapse.
Options --fills compares fill colours too.
"""
import collections
import re
import sys

import golden
import svgframes


def svg_params(text):
    width = int(re.search(r'<svg [^>]*width="(\d+)"', text).group(1))
    height = re.search(r'<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)" fill="rgb',
                       text)
    sizes = collections.Counter(re.findall(r'font-size(?:="|:)([\d.]+)', text))
    font = sizes.most_common(1)[0][0] if sizes else "12"
    return width, int(float(height.group(1))) + 1, float(font)


def reconstruct(frames):
    """Folded stacks from frames [(name, samples, x, width, depth, fill)]."""
    by_depth = collections.defaultdict(list)
    for f in frames:
        by_depth[f[4]].append(f)
    paths, lines = {}, []
    for depth in sorted(by_depth):
        for f in by_depth[depth]:
            x, w = float(f[2]), float(f[3])
            if depth == 0:
                paths[f] = []
                continue
            parent = [p for p in by_depth[depth - 1]
                      if float(p[2]) - 0.05 <= x and x + w <= float(p[2]) + float(p[3]) + 0.15]
            if len(parent) != 1:
                parent.sort(key=lambda p: abs(float(p[2]) - x))
            paths[f] = paths[parent[0]] + [f[0]]
    children = collections.Counter()
    for f, path in paths.items():
        if path:
            parent = tuple(path[:-1])
            children[parent] += f[1]
    for f, path in paths.items():
        self_count = f[1] - children[tuple(path)]
        if path and self_count > 0:
            lines.append("%s %d\n" % (";".join(path), self_count))
    return "".join(sorted(lines)).encode()


def compare(got, want, what, fills):
    key = (lambda f: f) if fills else (lambda f: f[:5])
    g = collections.Counter(map(key, got))
    w = collections.Counter(map(key, want))
    if g != w:
        extra, missing = sorted((g - w).elements()), sorted((w - g).elements())
        golden.fail("%s: %d frames differ\n  only ember:       %s\n  only flamegraph:  %s" %
                    (what, len(extra) + len(missing), extra[:5], missing[:5]))


def main():
    mode, ref = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    fills = "--fills" in args
    args = [a for a in args if a != "--fills"]
    text = open(ref, encoding="utf-8").read()
    width, frame_height, font_size = svg_params(text)
    inverted = "--inverted" in args
    want = svgframes.frames(text, frame_height, font_size, inverted)
    opts = ["--width=%d" % width, "--height=%d" % frame_height, "--fontsize=%g" % font_size]
    if mode == "pipeline":
        out, _, _ = golden.run(["flamegraph"] + opts + args[1:] + [args[0]])
    else:
        out, _, _ = golden.run(["flamegraph", "--format=folded"] + opts + args,
                               stdin=reconstruct(want))
    got = svgframes.frames(out.decode(), frame_height, font_size, inverted)
    compare(got, want, ref, fills)


if __name__ == "__main__":
    main()
