"""perf as a reference, modulo what differs between its versions (Debian
12's perf 6.1.187 on a new machine, 6.1.192 today, and later): the tests
compare ember with what every one of them says, never one build's quirk.

PLT stubs. ember names each stub by the GOT slot it jumps through, as
objdump does (an IFUNC's, whose slot has no symbol, "*ABS*+0xADDR@plt").
perf before 6.3 has symbols for .plt's stubs only, the i-th entry after
the header named after the i-th relocation of .rela.plt, which is not the
PLT's order where IFUNC relocations come last (libc: the stub of
__tunable_get_val is "@plt"); none for IBT's .plt.sec nor for .plt.got.
And _init, a symbol of no size before the PLT, is stretched to the next
symbol, over the whole PLT: its search of a tree of overlapping ranges
then finds `_init` or the stub's "X@plt" for a .plt address depending on
the tree's shape (which any symbol of the binary changes: the same
program and perf say one or the other on two machines), and `_init` or
nothing for .plt.sec and .plt.got. So perf_script() gives perf script's
text with `_init`, `[unknown]` and any "...@plt" at a stub's address
renamed to objdump's name of that stub, and report_check() counts perf's
`_init`, "X@plt" and unresolved rows as one group: nothing else is
accepted.

report_check(): `ember report` self shares and names equal `perf report
--no-children --sort sym` for every symbol above 0.1% of each event of a
file, modulo what is documented here:
  - ember names frames as stackcollapse-perf.pl tidies perf's names (";"
    as ":", no parameter list: "Lcom/Foo;.bar (compiled)" is
    "Lcom/Foo:.bar "; FlameGraph's rules, tested against its own test
    data): perf report's names are tidied so, by ember collapse of a perf
    script text that has them;
  - perf report names an address without a symbol by the address, one row
    each, where ember (as stackcollapse-perf.pl) says "[unknown]" or
    "[module]": compared as a group, with the PLT's (above);
  - rows of one name (two symbols, in two modules) are one name in
    ember's report: summed;
  - a sample whose call chain is empty (perf record -a catches some of
    gcc's) perf report charges to its address's symbol, while perf script
    prints no frame for it and stackcollapse-perf.pl (and so ember) gives
    the process alone, as a function of its own: where the shares differ,
    such samples, paired from perf script's text with and without call
    chains, are moved so.
"""
import csv
import functools
import io
import re
import subprocess

import golden

LIMIT = 0.1  # percent: every symbol above it is compared
PLT_GROUP = "_init, X@plt and unresolved addresses"


@functools.lru_cache(maxsize=None)
def plt_stubs(path):
    """[(lo, hi, name)] of the PLT stubs objdump names "X@plt" in the ELF
    file at path, each range twice: file offsets and addresses (perf
    script prints either, as the file is a PIE or not)."""
    p = subprocess.run(["objdump", "-d", "--section=.plt", "--section=.plt.sec",
                        "--section=.plt.got", path], capture_output=True, text=True)
    h = subprocess.run(["objdump", "-h", path], capture_output=True, text=True)
    if p.returncode != 0 or h.returncode != 0:
        return []
    sections = []  # (vma, size, offset)
    for m in re.finditer(r"^\s*\d+\s+(\.plt\S*)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+"
                         r"([0-9a-f]+)", h.stdout, re.M):
        sections.append((int(m.group(3), 16), int(m.group(2), 16), int(m.group(4), 16)))
    labels = [(int(a, 16), n) for a, n in re.findall(r"^([0-9a-f]+) <([^>]+)>:", p.stdout, re.M)]
    stubs = []
    for i, (at, name) in enumerate(labels):
        sec = next((s for s in sections if s[0] <= at < s[0] + s[1]), None)
        if not name.endswith("@plt") or not sec:
            continue
        end = labels[i + 1][0] if i + 1 < len(labels) else sec[0] + sec[1]
        end = min(end, sec[0] + sec[1])
        shift = sec[2] - sec[0]
        stubs += [(at, end, name), (at + shift, end + shift, name)]
    return stubs


FRAME = re.compile(r"^(\s+)([0-9a-f]+) (.*) \((/[^)]+)\)$")
PERF_PLT = re.compile(r"_init\+0x[0-9a-f]+|\[unknown\]|.*@plt\+0x[0-9a-f]+")


@functools.lru_cache(maxsize=None)
def demangled(name):
    """A C++ stub's name as perf demangles it (no parameters)."""
    if not name.startswith("_Z"):
        return name
    base = name[:-len("@plt")]
    out = subprocess.run(["c++filt", "-p", base], capture_output=True, text=True).stdout.strip()
    return (out or base) + "@plt"


def rename_plt(text):
    """perf script's text, its `_init`, `[unknown]` and "...@plt" frames at
    a PLT stub's address named as objdump names the stub (see above)."""
    out = []
    for line in text.splitlines(keepends=True):
        m = FRAME.match(line.rstrip("\n"))
        if m and PERF_PLT.fullmatch(m.group(3)):
            pc = int(m.group(2), 16)
            name = next((n for lo, hi, n in plt_stubs(m.group(4)) if lo <= pc < hi), None)
            if name:
                line = "%s%s %s+0x0 (%s)\n" % (m.group(1), m.group(2), demangled(name),
                                               m.group(4))
        out.append(line)
    return "".join(out)


def perf_script(args):
    """perf script ARGS (bytes of its text), its PLT stubs renamed."""
    text = subprocess.run(["perf", "script"] + list(args), capture_output=True,
                          check=True).stdout.decode(errors="surrogateescape")
    return rename_plt(text).encode(errors="surrogateescape")


def perf_report(data):
    """{event: [(symbol, self percent)]} of perf report --no-children
    --sort sym, every row, per event (perf's modifiers left out of its
    name)."""
    out = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "sym",
                          "--stdio", "-g", "none", "--percent-limit", "0"],
                         capture_output=True, text=True, check=True).stdout
    events, rows, counts = {}, None, {}
    for line in out.splitlines():
        m = re.match(r"# Samples: .* of event '([^']*)'", line)
        if m:
            event = m.group(1).split(":")[0]
            rows = events.setdefault(event, [])
            continue
        m = re.match(r"# Event count \(approx.\): (\d+)$", line)
        if m and rows is not None:
            counts[event] = counts.get(event, 0) + int(m.group(1))
        m = re.match(r"\s+([\d.]+)%\s+\[.\]\s+(.*\S)\s*$", line)
        if m and rows is not None:
            rows.append((m.group(2), float(m.group(1))))
    return events, counts


def ember_total(data, event):
    """The sum of ember collapse's weights of one event."""
    folded, _, _ = golden.run(["collapse", "--event-filter=" + event, data])
    return sum(int(line.rpartition(b" ")[2]) for line in folded.splitlines())


def ember_report(data, event, extra=()):
    """{function: self percent} of ember report --csv for one event."""
    out, _, _ = golden.run(["report", "--top", "0", "--csv", "--event-filter", event] +
                           list(extra) + [data])
    rows = {}
    for r in csv.DictReader(io.StringIO(out.decode(errors="replace"))):
        rows[r["function"]] = rows.get(r["function"], 0.0) + float(r["self_pct"])
    return rows


def tidied(names):
    """{perf's name: as stackcollapse-perf.pl names the frame}."""
    names = sorted(names)
    if not names:
        return {}
    text = "".join("n%d 1 1 1.0: 1 cpu-clock:\n\t1 %s (/x)\n\n" % (i, n)
                   for i, n in enumerate(names))
    out, _, _ = golden.run(["collapse", "--format", "perf"],
                           stdin=text.encode(errors="surrogateescape"))
    tidy = {}
    for line in out.decode(errors="surrogateescape").splitlines():
        stack = line.rpartition(" ")[0]
        comm, _, frame = stack.partition(";")
        tidy[names[int(comm[1:].split("-")[0])]] = frame
    return tidy


def unresolved(name, perf):
    """An address without a symbol: perf names it by the address, ember
    "[unknown]" or "[module]"."""
    return re.fullmatch(r"0x[0-9a-f]+", name) is not None if perf else name.startswith("[")


def plt_like(name):
    return name == "_init" or name.endswith("@plt")


def grouped(rows, perf, same):
    """{name or documented group: (share, rows summed)} of [(name, pct)]."""
    out = {}
    for name, pct in rows:
        name = same.get(name, name) if perf else name
        if plt_like(name) or unresolved(name, perf):
            name = PLT_GROUP
        share, n = out.get(name, (0.0, 0))
        out[name] = (share + pct, n + 1)
    return out


def compare(want, got, same):
    """Each symbol above LIMIT%, within perf's rounding (two decimals, so a
    sum of n rows is within n halves of its last digit): the differences,
    and how many symbols were compared."""
    w, g = grouped(want, True, same), grouped(got.items(), False, same)
    bad, n = [], 0
    for name in sorted(set(w) | set(g)):
        (a, rows), (b, _) = w.get(name, (0.0, 0)), g.get(name, (0.0, 0))
        if max(a, b) <= LIMIT:
            continue
        n += 1
        if abs(a - b) > 0.005 * max(rows, 1) + 0.0001:
            bad.append("%s: perf %.2f%% (%d rows), ember %.4f%%" % (name, a, rows, b))
    return bad, n


SAMPLE = re.compile(r"\s*(.*?)\s+\d+\s+\d+\.\d+:\s+(\d+)\s+(\S+?):\s+[0-9a-f]+\s+(.*) \(")


def empty_chains(data):
    """({event: total period}, [(event, process, symbol, period)] of the
    samples whose call chain perf script prints empty)."""
    fields = ["-i", data, "-F", "comm,tid,time,period,event,ip,sym,dso"]
    run = lambda extra: subprocess.run(["perf", "script"] + extra + fields, capture_output=True,
                                       text=True, errors="replace").stdout
    chains = [b for b in run([]).split("\n\n") if b.strip()]
    flat = [line for line in run(["-G"]).splitlines() if line.strip()]
    totals, empty = {}, []
    for block, line in zip(chains, flat if len(flat) == len(chains) else []):
        m = SAMPLE.match(line)
        if not m:
            continue
        event, period = m.group(3).split(":")[0], int(m.group(2))
        totals[event] = totals.get(event, 0) + period
        if "\n" not in block.strip("\n"):
            empty.append((event, m.group(1).replace(" ", "_"), m.group(4), period))
    return totals, empty


def moved(want, event, totals, empty, tidy):
    """perf report's rows with the samples of empty call chains given to
    their process, as ember gives them (rows of their own)."""
    want = list(want)
    for ev, comm, sym, period in empty:
        if ev != event or not totals.get(ev):
            continue
        pct = 100.0 * period / totals[ev]
        want += [("0x0" if sym == "[unknown]" else tidy.get(sym, sym), -pct), (comm, pct)]
    return want


def report_check(data, what, same=None, extra=(), totals=False):
    """ember report's self shares of DATA equal perf report's, for every
    symbol above LIMIT% of each event; same: {name perf gives: ember's},
    where the caller documents why ember's is right. totals: each event's
    weight is also perf report's event count (its periods' sum) exactly."""
    events, counts = perf_report(data)
    if not events:
        golden.fail("%s: perf report printed no event" % what)
    tidy = tidied(set(name for rows in events.values() for name, _ in rows))
    chains, n = None, 0
    for event, rows in events.items():
        want = [(tidy.get(name, name), pct) for name, pct in rows]
        got = ember_report(data, event, extra)
        bad, k = compare(want, got, same or {})
        if bad:
            chains = chains or empty_chains(data)
            tidy.update(tidied(set(e[2] for e in chains[1])))
            bad, k = compare(moved(want, event, *chains, tidy), got, same or {})
        if bad:
            golden.fail("%s, %s: ember report differs from perf report --no-children --sort "
                        "sym:\n  %s" % (what, event, "\n  ".join(bad[:20])))
        n += k
        if totals and ember_total(data, event) != counts.get(event):
            golden.fail("%s, %s: ember's total %d, perf report's event count %s" %
                        (what, event, ember_total(data, event), counts.get(event)))
    print("ok: %s: %d symbols above %g%% of %d event(s) as perf report gives them" %
          (what, n, LIMIT, len(events)))
