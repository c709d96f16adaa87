"""Frames of a flame graph SVG as drawn by flamegraph.pl or ember: a list of
(name, samples, x, width, depth, fill), for comparing graphs frame by frame."""
import html
import re

FRAME = re.compile(
    r'<title>(?P<title>[^<]*)</title>\s*<rect x="(?P<x>[-\d.]+)" y="(?P<y>[-\d.]+)" '
    r'width="(?P<w>[-\d.]+)" height="(?P<h>[-\d.]+)" fill="(?P<fill>[^"]*)"')
TITLE = re.compile(r"^(?P<name>.*) \((?P<n>[\d,]+) [^,]*, [\d.]+%(?:; [-+\d.]+%)?\)$")


def frames(svg_text, frame_height=16, font_size=12, inverted=False):
    m = re.search(r'<svg [^>]*height="([\d.]+)"', svg_text)
    height = float(m.group(1))
    ypad2 = font_size * 2 + 10
    out = []
    for f in FRAME.finditer(svg_text):
        title = html.unescape(f.group("title"))
        t = TITLE.match(title)
        if not t:
            raise ValueError("unexpected frame title: %r" % title)
        y = float(f.group("y"))
        if inverted:
            depth = (y - font_size * 3) / frame_height
        else:
            depth = (height - ypad2 - y + 1) / frame_height - 1
        out.append((t.group("name"), int(t.group("n").replace(",", "")),
                    f.group("x"), f.group("w"), round(depth), f.group("fill")))
    return sorted(out)
