"""Golden test: names with control characters through every text writer.

A real program whose functions are named "multi;\\n;semi" (a ';' and a
newline) and "esc\\x1b[31mred\\tx\\r" (ESC, a tab, a CR), recorded by `perf
record -g` and by `ember record`. Each text format escapes what it cannot
carry, and its consumer reads it back:

- folded stacks (collapse, convert --to folded, diff --folded): one line
  per stack, ';' only between frames; a ';' in a name is ':' (FlameGraph's
  collapsers), each byte of a control character "\\xNN". ember reads its own
  folded output back to the same bytes, and each function's self weight is
  the period `perf report --no-children --sort sym` gives it;
- report (top, tree, callers; text, --csv, --tsv) and convert --to csv/tsv:
  the same names, no control byte but the line ends; CSV read back by
  Python's csv module;
- the SVG: well-formed XML (xmllint, and Python's parser);
- speedscope and Chrome JSON: valid JSON that carries the names as read;
- messages: a control character in what they quote is escaped.

usage: names_text.py CC WORKDIR

Skips (exit 77) when there is no compiler or perf cannot record here.
"""
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import golden

SKIP = 77
# the functions as the ELF names them, and each one's caller
NAMES = {b"multi;\n;semi": "call_multi", b"esc\x1b[31mred\tx\r": "call_esc"}
CONTROL = golden.CONTROL

MAIN = """void call_multi(void);
void call_esc(void);
int main(void) { call_multi(); call_esc(); call_multi(); return 0; }
"""


def spelled(name):
    """A name as ember's folded view spells it."""
    return golden.spell_controls(name.replace(b";", b":"))


def build(cc, d):
    """The program: each odd name assembled as a placeholder of the same
    length ('@' for '\\n' or '\\t', '#' for '\\r', as the assembler keeps
    escapes in quoted names literally), then patched in the ELF."""
    asm = [b".text"]
    patches = []
    for name, caller in NAMES.items():
        ph = name.replace(b"\n", b"@").replace(b"\t", b"@").replace(b"\r", b"#")
        patches.append((ph + b"\0", name + b"\0"))
        q, c = b'"' + ph + b'"', caller.encode()
        asm += [b".type " + q + b",@function", q + b":", b"  push %rbp", b"  mov %rsp,%rbp",
                b"  mov $150000000,%rcx", b"1: dec %rcx", b"  jnz 1b", b"  pop %rbp", b"  ret",
                b".size " + q + b",.-" + q, b".globl " + c, b".type " + c + b",@function",
                c + b":", b"  push %rbp", b"  mov %rsp,%rbp", b"  call " + q, b"  pop %rbp",
                b"  ret"]
    asm.append(b'.section .note.GNU-stack,"",@progbits')
    with open(os.path.join(d, "names.s"), "wb") as f:
        f.write(b"\n".join(asm) + b"\n")
    with open(os.path.join(d, "main.c"), "w") as f:
        f.write(MAIN)
    prog = os.path.join(d, "names")
    cc_run = subprocess.run([cc, "-O1", "-fno-omit-frame-pointer", "-o", prog,
                             os.path.join(d, "main.c"), os.path.join(d, "names.s")],
                            capture_output=True, text=True)
    if cc_run.returncode != 0:
        print("SKIP: cannot build the program: " + cc_run.stderr[:300])
        sys.exit(SKIP)
    with open(prog, "rb") as f:
        elf = f.read()
    for ph, name in patches:
        if ph not in elf:
            golden.fail("the placeholder %r is not in the ELF" % ph)
        elf = elf.replace(ph, name)
    with open(prog, "wb") as f:
        f.write(elf)
    return prog


def record(prog, d):
    perf_data, ember_data = os.path.join(d, "perf.data"), os.path.join(d, "ember.data")
    rec = subprocess.run(["perf", "record", "-q", "-g", "-e", "cpu-clock", "-F", "4000", "-o",
                          perf_data, prog], capture_output=True, text=True)
    if rec.returncode != 0:
        print("SKIP: perf record failed here: " + rec.stderr.strip()[:300])
        sys.exit(SKIP)
    golden.run(["record", "-o", ember_data, "--", prog])
    return [perf_data, ember_data]


def perf_periods(data):
    """{symbol: self period} from perf report; a row whose symbol holds a
    newline goes on on the next lines."""
    out = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort",
                          "sym", "-F", "period,sym", "-g", "none", "--percent-limit", "0"],
                         capture_output=True, check=True).stdout
    rows, last = {}, None
    for line in out.split(b"\n"):
        m = re.match(rb"\s+(\d+)\s+\[.\] (.*)$", line)
        if m:
            last = m.group(2)
            rows[last] = int(m.group(1))
        elif line and not line.startswith(b"#") and last is not None:
            period = rows.pop(last)
            last += b"\n" + line
            rows[last] = period
    return rows


def no_control(data, what, allowed=(b"\n",)):
    """Fails if data holds a control character other than its line ends
    and separators (allowed)."""
    body = data
    for sep in allowed:
        body = body.replace(sep, b"")
    m = CONTROL.search(body)
    if m:
        golden.fail("%s: a raw control byte %r near %r" %
                    (what, m.group(0), body[max(0, m.start() - 40):m.end() + 10]))


def check_folded(data, folded, what):
    no_control(folded, what)
    self_of = {}
    for line in folded.split(b"\n")[:-1]:
        m = re.match(rb"^(\S.*) (\d+)$", line)
        if not m:
            golden.fail("%s: not a folded line: %r" % (what, line))
        leaf = m.group(1).split(b";")[-1]
        self_of[leaf] = self_of.get(leaf, 0) + int(m.group(2))
    perf = perf_periods(data)
    for name, caller in NAMES.items():
        if name not in perf:
            golden.fail("%s: perf report has no %r: %r" % (what, name, sorted(perf)))
        got = self_of.get(spelled(name))
        if got != perf[name]:
            golden.fail("%s: %r weighs %s, perf report says %d" %
                        (what, spelled(name), got, perf[name]))
        if not re.search(rb"(^|;)%s;%s( |;)" % (re.escape(caller.encode()),
                                                 re.escape(spelled(name))), folded, re.M):
            golden.fail("%s: no stack %s;%r" % (what, caller, spelled(name)))
    back, _, _ = golden.run(["collapse", "--format", "folded", "-"], stdin=folded)
    golden.first_difference(back, folded, what + " read back")
    detected, _, _ = golden.run(["collapse", "-"], stdin=folded)
    golden.first_difference(detected, folded, what + " read back, detected")


def check_svg(svg, what):
    if shutil.which("xmllint"):
        lint = subprocess.run(["xmllint", "--noout", "-"], input=svg, capture_output=True)
        if lint.returncode != 0:
            golden.fail("%s: xmllint: %s" % (what, lint.stderr.decode(errors="replace")[:400]))
    root = ET.fromstring(svg)
    titles = "".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title"))
    for name in NAMES:
        if spelled(name).decode() not in titles:
            golden.fail("%s: no frame titled %r" % (what, spelled(name)))


def check_reports(data, what):
    for opts in ([], ["--tree"], ["--callers", spelled(b"multi;\n;semi").decode()],
                 ["--callees", "call_esc"]):
        out, _, _ = golden.run(["report"] + (opts or ["--top", "0"]) + [data])
        no_control(out, "%s: report %s" % (what, " ".join(opts)))
    for fmt, delim in (("--csv", ","), ("--tsv", "\t")):
        out, _, _ = golden.run(["report", fmt, data])
        no_control(out, "%s: report %s" % (what, fmt), (b"\n", delim.encode()))
        rows = list(csv.DictReader(io.StringIO(out.decode()), delimiter=delim))
        names = {r["function"] for r in rows}
        for name in NAMES:
            if spelled(name).decode() not in names:
                golden.fail("%s: report %s has no row %r" % (what, fmt, spelled(name)))
    for to, delim, eol in (("csv", ",", b"\r\n"), ("tsv", "\t", b"\n")):
        out, _, _ = golden.run(["convert", "--to", to, "-o", "-", data])
        no_control(out, "%s: convert --to %s" % (what, to), (eol, delim.encode()))
        rows = list(csv.reader(io.StringIO(out.decode(), newline=""), delimiter=delim))
        leaves = {r[0].split(";")[-1] for r in rows[1:]}
        for name in NAMES:
            if spelled(name).decode() not in leaves:
                golden.fail("%s: convert --to %s has no stack ending %r" % (what, to, name))


def check_json(data, what):
    for to in ("speedscope", "chrome"):
        out, _, _ = golden.run(["convert", "--to", to, "-o", "-", data])
        text = json.dumps(json.loads(out))
        for name in NAMES:
            if json.dumps(name.decode())[1:-1] not in text:
                golden.fail("%s: convert --to %s lost the name %r" % (what, to, name))


def check_diff(folded, d, what):
    """diff --folded of the folded output and of the same stacks with raw
    control bytes in the names, as other tools write them (all but the
    newline, which no line can hold): the same stacks, both ways."""
    esc = b"esc\x1b[31mred\tx\r"
    raw = folded.replace(spelled(esc), esc)
    a, b = os.path.join(d, "a.folded"), os.path.join(d, "b.folded")
    with open(a, "wb") as f:
        f.write(folded)
    with open(b, "wb") as f:
        f.write(raw)
    merged, _, _ = golden.run(["diff", "--folded", a, b])
    tree, _, _ = golden.run(["diff", "--folded", "--hide", "(?!)", a, b])
    golden.first_difference(tree, merged, what + ": diff --folded, the profiles' way")
    no_control(merged, what + ": diff --folded")
    lines = merged.split(b"\n")[:-1]
    if len(lines) != folded.count(b"\n"):
        golden.fail("%s: diff --folded has %d lines for %d stacks" %
                    (what, len(lines), folded.count(b"\n")))
    for line in lines:
        m = re.match(rb"^(\S.*) (\d+) (\d+)$", line)
        if not m or m.group(2) != m.group(3):
            golden.fail("%s: diff --folded of the same stacks: %r" % (what, line))


def check_messages(data, what):
    _, err, rc = golden.run(["report", "--callers", "no\x1b[2Jsuch", data], check=False)
    if rc == 0 or "\x1b" in err or "no\\x1b[2Jsuch" not in err:
        golden.fail("%s: the message quotes a raw ESC: %r" % (what, err))


def main():
    cc, d = sys.argv[1], sys.argv[2]
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    if not shutil.which("perf"):
        print("SKIP: no perf")
        sys.exit(SKIP)
    prog = build(cc, d)
    for data in record(prog, d):
        what = os.path.basename(data)
        folded, _, _ = golden.run(["collapse", data])
        check_folded(data, folded, what)
        converted, _, _ = golden.run(["convert", "--to", "folded", "-o", "-", data])
        golden.first_difference(converted, folded, what + ": convert --to folded")
        svg, _, _ = golden.run(["flamegraph", data])
        check_svg(svg, what + ": flamegraph")
        svg, _, _ = golden.run(["flamegraph", "-"], stdin=folded)
        check_svg(svg, what + ": flamegraph of its folded stacks")
        check_reports(data, what)
        check_json(data, what)
        check_diff(folded, d, what)
        check_messages(data, what)
        print("ok", what)


if __name__ == "__main__":
    main()
