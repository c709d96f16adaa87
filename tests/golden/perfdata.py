"""Golden test: perf.data read directly equals `perf script -i perf.data |
ember collapse`, with the same options, on recordings made here with `perf
record -g` of a C program (threads, a forked child that execs a shell), a
JIT writing /tmp/perf-PID.map, the OCaml fixture of the corpus, python3 and
`xz -T2`; DWARF call graphs (`--call-graph dwarf`: equal on the C program
and xz, measured and documented where perf's unwinder guesses); then what
perf.data must give that text cannot (pprof mappings and addresses), and
bad input: truncated and corrupt files, a binary rebuilt after recording,
a stripped one, a deleted one. Every recording's `ember report` is also
perf report's, symbol by symbol (perfref.report_check); perf's text is
read modulo what differs between perf versions (perfref.py).
perf_symbols.py has the cases on which symbol names an address.

The text side runs `perf script --no-inline` (and `-F+pid` for --pid and
--tid: perf script prints no pid by default, and the script's rule then
names "comm-?"): ember's --inline resolves inlined calls itself, on both
sides, through the same symbolizer.

perf's build-id cache lives in $HOME/.debug: HOME is a directory of the test
so that what perf record puts there is this test's alone.

usage: perfdata.py CC SOURCE_DIR WORKDIR
       (UNWIND_COMPARE=path of unwind_compare: each DWARF recording's
       samples unwound both ways, which must agree)

Skips (exit 77) when perf cannot record here; cases whose program is
missing (the OCaml fixture, python3, xz) are skipped alone.
"""
import collections
import gzip
import os
import re
import shutil
import struct
import subprocess
import sys

import golden
import perfref

SKIP = 77
OPTIONS = [[], ["--pid"], ["--tid"], ["--kernel"], ["--jit"], ["--all"], ["--addrs"],
           ["--inline"], ["--inline", "--context"]]

case, run_cases = golden.cases()
CC = SRC = None


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, check=True, **kw)


def build(name, out, *flags):
    sh([CC, "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", out,
        os.path.join(SRC, name)] + list(flags))
    return out


def record(work, name, argv, extra=("-g",)):
    """perf record; again when perf itself fails (Debian's perf now and then
    aborts on "assertion failed at util/build-id.c:1010" at the end)."""
    data = os.path.join(work, name + ".data")
    for _ in range(3):
        p = subprocess.run(["perf", "record", "-q", "-o", data] + list(extra) + ["--"] + argv,
                           capture_output=True, cwd=work)
        if p.returncode == 0 and os.path.exists(data):
            if "dwarf" in extra:
                unwind_compare(data)
            return data
        print("perf record %s failed (%s): recording again" % (argv[0], p.stderr[-200:]))
    golden.fail("perf record %s failed: %s" % (" ".join(argv), p.stderr.decode()[-400:]))


def unwind_compare(data):
    """Every DWARF sample unwound by ember's compiled CFI rows equals
    libdwfl's own unwinding of it (tests/golden/unwind_compare.c, named by
    $UNWIND_COMPARE), frame for frame."""
    tool = os.environ.get("UNWIND_COMPARE")
    if not tool:
        return
    p = subprocess.run([tool, data], capture_output=True)
    out = p.stdout.decode()
    last = out.strip().splitlines()[-1] if out else ""
    print("%s: %s" % (os.path.basename(data), last))
    if p.returncode != 0:
        golden.fail("%s: the compiled CFI rows and libdwfl unwind differently:\n%s%s" %
                    (data, out[-3000:], p.stderr.decode()[-500:]))
    m = re.match(r"\d+ samples: (\d+) by the rows, (\d+) by libdwfl", last)
    UNWOUND[data] = (int(m.group(1)), int(m.group(2)))


UNWOUND = {}  # recording -> samples unwound (by the rows, by libdwfl), when compared


def perf_script(data, opts):
    """perf script's text, PLT stubs named as every perf version would
    (see perfref)."""
    fields = ["-F+pid"] if "--pid" in opts or "--tid" in opts else []
    return perfref.perf_script(["--no-inline", "-i", data] + fields)


def compare(data, opts, what):
    """ember collapse DATA equals perf script | ember collapse, with opts."""
    want, _, _ = golden.run(["collapse"] + opts, stdin=perf_script(data, opts))
    got, err, _ = golden.run(["collapse"] + opts + [data])
    golden.first_difference(got, want, "%s %s" % (what, " ".join(opts) or "(no options)"))
    if not got:
        golden.fail("%s: no stacks at all" % what)
    return got, err


def compare_all(data, what, options=OPTIONS, same=None):
    """compare() with each option set, and ember report against perf
    report (perfref.report_check; same: see there)."""
    for opts in options:
        compare(data, opts, what)
    print("ok: %s: %d option sets equal perf script | ember collapse" % (what, len(options)))
    perfref.report_check(data, what, same)


@case
def c_program(work):
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    data = record(work, "prog", [prog, "exec", "4"])
    compare_all(data, "C program")
    got, _ = compare(data, ["--tid"], "C program")
    roots = {line.split(b";")[0] for line in got.splitlines()}
    pids = {re.sub(rb"/\d+$", b"", r) for r in roots if r.startswith(b"prog-")}
    if (len(pids) < 2 or not any(r.startswith(b"sh-") for r in roots) or
            not any(r.startswith(b"gorp-") for r in roots)):
        golden.fail("threads, the forked child, renamed and its exec'd shell, should all show: %s"
                    % roots)
    # the same file through a pipe, gzip and standard input
    gz = data + ".gz"
    with open(gz, "wb") as f:
        f.write(sh(["gzip", "-c", data]).stdout)
    plain, _, _ = golden.run(["collapse", data])
    for args, stdin, what in (([gz], None, "gzip"), (["-"], open(data, "rb").read(), "stdin")):
        got, _, _ = golden.run(["collapse"] + args, stdin=stdin)
        golden.first_difference(got, plain, what)


@case
def pipe_mode(work):
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    data = os.path.join(work, "pipe.data")
    # perf script itself sometimes aborts on a pipe-mode file (Debian's perf:
    # "assertion failed at util/build-id.c:1010" after an EVENT_UPDATE
    # record, then a smashed stack): the reference is recorded again then
    for _ in range(3):
        with open(data, "wb") as f:
            subprocess.run(["perf", "record", "-q", "-g", "-o", "-", prog, "2"], stdout=f,
                           stderr=subprocess.DEVNULL, check=True)
        if subprocess.run(["perf", "script", "-i", data], capture_output=True).returncode == 0:
            break
        golden.run(["collapse", data])  # ember reads the file perf script cannot
        print("perf script failed on a pipe-mode recording: recording again")
    else:
        print("skip: perf script fails on every pipe-mode recording here")
        return
    compare_all(data, "pipe mode", [[], ["--tid"], ["--inline"]])


@case
def jit(work):
    prog = build("perfdata_jit.c", os.path.join(work, "jit"))
    data = record(work, "jit", [prog, "100000000"])
    try:
        compare_all(data, "JIT", [[], ["--jit"], ["--all"], ["--addrs"], ["--pid"]])
        got, _ = compare(data, ["--jit"], "JIT")
        if b"jit_sum_hot_[j]" not in got or b"Lcom/example/Foo:.bar _[j]" not in got:
            golden.fail("the JIT's functions should be named from its map file: %r" % got[:300])
    finally:
        for f in os.listdir("/tmp"):
            if re.match(r"perf-\d+\.map$", f) and open("/tmp/" + f).read().count("jit_sum_hot"):
                os.unlink("/tmp/" + f)


@case
def ocaml(work):
    fixture = os.path.join(golden.CORPUS, "ocaml5", "bin", "fixture")
    if not os.access(fixture, os.X_OK):
        print("skip: no OCaml fixture at " + fixture)
        return
    data = record(work, "ocaml", [fixture, "-iters", "200", "-domains", "1"])
    compare_all(data, "OCaml fixture")
    got, _ = compare(data, [], "OCaml fixture")
    if b"Fixture.descend" not in got:
        golden.fail("OCaml names should be demangled as perf does (Fixture.descend_NNN)")


@case
def python(work):
    if not os.access("/usr/bin/python3", os.X_OK):
        print("skip: no /usr/bin/python3")
        return
    code = "import json\ns=0\nfor i in range(150000): s+=len(json.dumps({'a':i,'b':[i]}))\n"
    data = record(work, "python", ["/usr/bin/python3", "-c", code])
    compare_all(data, "python3")


@case
def xz(work):
    if not shutil.which("xz"):
        print("skip: no xz")
        return
    text = os.path.join(work, "input.txt")
    with open(text, "w") as f:
        x = 1
        for i in range(400000):
            x = (x * 1103515245 + 12345) % 2 ** 31
            f.write("%d %x %s\n" % (i, x, "abcdefgh"[x % 8] * (x % 13)))
    data = record(work, "xz", ["xz", "-T2", "-k", "-f", "-6", text])
    compare_all(data, "xz -T2")


@case
def events(work):
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    data = record(work, "events", [prog, "2"],
                  ["-g", "-e", "cpu-clock", "-e", "page-faults", "-e", "task-clock"])
    compare_all(data, "three events", [[], ["--event-filter=page-faults"],
                                      ["--event-filter=task-clock", "--tid"]])
    # which event is first depends on the run (page faults often come first):
    # the warning must be the text side's, word for word but for the file
    _, err = compare(data, [], "three events")
    _, want, _ = golden.run(["collapse"], stdin=perf_script(data, []))
    if "kept the" not in err or err.replace(data, "<stdin>") != want:
        golden.fail("ember should say which event it kept and what it skipped, as for the "
                    "text: %s, not %s" % (err, want))
    _, err, code = golden.run(["collapse", "--event-filter=nope", data], check=False)
    if code == 0 or "no samples of event 'nope'" not in err:
        golden.fail("an event the file does not have: %d %s" % (code, err))


@case
def fixed_periods(work):
    """perf record -c N, a period= term, several events with their own
    periods: samples without a period field weigh the event's fixed period
    (perf's evsel__parse_sample), in the event's unit (a clock's
    nanoseconds, whatever its name), as perf report counts them and as perf
    script prints them; the pprof export carries cpu time."""
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    cases = (("c", ["-g", "-c", "100000"], "cpu"),
             ("term", ["-g", "-e", "cpu-clock/period=100000/"], "cpu"),
             ("named", ["-g", "-e", "cpu-clock/period=100000,name=ticks/"], "cpu"),
             ("several", ["-g", "-e", "cpu-clock/period=100000/", "-e", "page-faults", "-e",
                          "task-clock/period=300000/"], None))
    for name, extra, unit in cases:
        data = record(work, name, [prog, "1"], extra)
        compare_all(data, "perf record " + " ".join(extra), [[], ["--tid"]])
        perfref.report_check(data, "perf record " + " ".join(extra), totals=True)
        head, _, _ = golden.run(["report", data], check=False)
        if unit and not re.search(rb"total [\d.]+ m?s of cpu", head):
            golden.fail("perf record %s: the profile should be cpu time: %r" %
                        (" ".join(extra), head[:200]))
    if not shutil.which("go"):
        print("skip: no go")
        return
    out = os.path.join(work, "term.pb.gz")
    golden.run(["convert", "--to", "pprof", os.path.join(work, "term.data"), "-o", out])
    top = sh(["go", "tool", "pprof", "-top", "-unit=ns", out],
             env=dict(os.environ, GOTOOLCHAIN="local"), cwd=work).stdout.decode()
    count = perfref.perf_report(os.path.join(work, "term.data"))[1]["cpu-clock/period=100000/"]
    m = re.search(r"of (\d+)ns total", top)
    if "Type: cpu" not in top or not m or int(m.group(1)) != count:
        golden.fail("go tool pprof -top of a fixed-period recording: %d ns of cpu expected: %s" %
                    (count, top[:400]))
    print("ok: go tool pprof: %s ns of cpu" % m.group(1))
    # a clock given another name is still cpu time, and so is its period
    out = os.path.join(work, "named.pb.gz")
    golden.run(["convert", "--to", "pprof", os.path.join(work, "named.data"), "-o", out])
    raw = sh(["go", "tool", "pprof", "-raw", out], env=dict(os.environ, GOTOOLCHAIN="local"),
             cwd=work).stdout.decode()
    if "PeriodType: cpu nanoseconds" not in raw or "Period: 100000\n" not in raw:
        golden.fail("the pprof of cpu-clock named ticks: %s" % raw[:300])


@case
def event_names(work):
    """--event-filter NAME keeps the event perf names NAME with terms that
    set its sampling or with modifiers (task-clock/freq=1000/, cpu-clock:u),
    in both readers alike; a filter's own terms and modifiers must be the
    event's (cpu-clock:k is not cpu-clock:u, task-clock/freq=99/ is not
    task-clock/freq=1000/). perf script and
    stackcollapse-perf.pl compare names as printed: the filter given in full
    is the test's reference, the short one must keep the same samples."""
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    data = record(work, "terms", [prog, "2"],
                  ["-g", "-e", "task-clock/freq=1000/", "-e", "cpu-clock:u"])
    script = perf_script(data, [])
    events = collections.Counter(re.findall(rb"^\S.*? \d+\.\d+: +\d+ +(\S+):", script, re.M))
    for short, full in (("task-clock", b"task-clock/freq=1000/"), ("cpu-clock", b"cpu-clock:u")):
        want, _ = compare(data, ["--event-filter=" + full.decode()], "named in full")
        for filt in (full.decode(), short):
            got, err = compare(data, ["--event-filter=" + filt], "event names")
            kept = re.search(r"kept the (\d+) samples", err)
            if got != want or not kept or int(kept.group(1)) != events[full]:
                golden.fail("--event-filter=%s: not the %d samples of %s: %s" %
                            (filt, events[full], full.decode(), err))
    for filt in ("cpu-clock:k", "task-clock/freq=99/"):
        for args, stdin in (([data], None), ([], script)):
            _, err, code = golden.run(["collapse", "--event-filter=" + filt] + args, stdin=stdin,
                                      check=False)
            if code == 0 or "no samples of event '%s'" % filt not in err:
                golden.fail("--event-filter=%s kept another event: %d %s" % (filt, code, err))
    print("ok: task-clock and cpu-clock keep %s, as named in full, in both readers" % dict(events))


DWARF = ["--call-graph", "dwarf"]


def weights(folded):
    """stack -> weight, without perf's outermost "[unknown]" (see dwarf_far)."""
    out = {}
    for line in folded.splitlines():
        stack, _, n = line.rpartition(b" ")
        frames = stack.split(b";")
        if len(frames) > 2 and frames[1] == b"[unknown]":
            del frames[1]
        key = b";".join(frames)
        out[key] = out.get(key, 0) + int(n)
    return out


def compare_near(data, what, most):
    """ember against perf script where their unwinders differ: the share of
    the weight on other stacks, at most `most` percent."""
    want, _, _ = golden.run(["collapse"], stdin=perf_script(data, []))
    got, _, _ = golden.run(["collapse", data])
    w, g = weights(want), weights(got)
    total = sum(w.values())
    off = sum(abs(w.get(k, 0) - g.get(k, 0)) for k in set(w) | set(g)) / 2
    share = 100.0 * off / total if total else 100.0
    print("%s: %.2f%% of the weight on other stacks than perf script's" % (what, share))
    if share > most:
        golden.fail("%s: %.2f%% of the weight differs from perf script (at most %g%%)" %
                    (what, share, most))
    perfref.report_check(data, what)  # the unwinders part, the leaves do not


@case
def dwarf(work):
    """--call-graph dwarf: the copied user stacks unwound by libdwfl equal
    perf script's (libunwind) on a C program (threads, a fork), one in the
    vDSO (clock_gettime) and on xz -T2, for each option."""
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    data = record(work, "prog", [prog, "1"], DWARF)
    compare_all(data, "DWARF C program", [[], ["--tid"], ["--kernel"], ["--addrs"], ["--inline"]])
    got, _ = compare(data, [], "DWARF C program")
    if b";main;worker;" not in got or b"start_thread;worker;" not in got:
        golden.fail("the DWARF stacks should reach main and the threads' start: %r" % got[:300])
    # every third sample's stack copy emptied (its dynamic size set to 0), as
    # the kernel leaves it when it cannot copy the stack (a fault in a fresh
    # fork): perf prints no user frame at all for those, not even the address
    blob, recs = records(data)
    b = bytearray(blob)
    for i, (at, typ, size) in enumerate(r for r in recs if r[1] == 9):
        if i % 3 == 0:
            struct.pack_into("<Q", b, dyn_size_at(blob, at), 0)
    empty = os.path.join(work, "empty-stacks.data")
    with open(empty, "wb") as f:
        f.write(b)
    compare_all(empty, "DWARF, empty stack copies", [[]])
    # a signal handler's samples unwind through glibc's __restore_rt (a
    # signal frame whose registers DWARF expressions restore: libdwfl's
    # part of the unwinding) to main
    sig = build("perfdata_signal.c", os.path.join(work, "signal"))
    data = record(work, "signal", [sig, "300"], DWARF)
    got, _, _ = golden.run(["collapse", data])
    if b";main_loop;__restore_rt;in_handler " not in got:
        golden.fail("the handler's stacks should unwind through __restore_rt to main: %r" %
                    got[-600:])
    if data in UNWOUND and UNWOUND[data][1] == 0:
        golden.fail("no sample of the signal handler was unwound by libdwfl: %s" % UNWOUND[data])
    vdso = build("perfdata_vdso.c", os.path.join(work, "vdso"))
    data = record(work, "vdso", [vdso, "3000000"], DWARF)
    compare_all(data, "DWARF through the vDSO", [[], ["--addrs"]])
    # a corrupt file whose program path names a FIFO: never opened for
    # reading (that would block forever)
    fifo = vdso[:-1] + "X"
    os.mkfifo(fifo)
    blob = open(data, "rb").read()
    bad = os.path.join(work, "fifo.data")
    with open(bad, "wb") as f:
        f.write(blob.replace(vdso.encode() + b"\0", fifo.encode() + b"\0"))
    try:
        p = subprocess.run([golden.EMBER, "collapse", bad], capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        golden.fail("a mapping naming a FIFO blocked the reader")
    if p.returncode != 0 or b"main" not in p.stdout:  # named from perf's cached copy
        golden.fail("a mapping naming a FIFO: exit %d, %r" % (p.returncode, p.stderr))
    if not shutil.which("xz"):
        print("skip: no xz")
        return
    text = os.path.join(work, "input.txt")
    with open(text, "w") as f:
        f.write("".join("%d %x\n" % (i, i * 2654435761 % 2 ** 32) for i in range(200000)))
    data = record(work, "xz", ["xz", "-T2", "-k", "-f", "-6", text], DWARF)
    compare_all(data, "DWARF xz -T2", [[], ["--tid"]])


@case
def dwarf_far(work):
    """Where the unwinders part: perf script's libunwind, when the CFI cannot
    go on (a deep Python stack cut at the 8 KB copy, OCaml 5's switch from
    its fiber stacks to the C stack), falls back to frame pointers and ends
    in a made-up frame (address 0 - 1, "[unknown]", or one in an anonymous
    map); libdwfl stops at the last frame the CFI proves, and follows
    OCaml's CFI through caml_start_program. ember is right there: its
    stacks are perf's without the guess (perf's outermost "[unknown]" is
    left out of the comparison), and deeper for OCaml. perf also never
    reads the copy's last 8 bytes (its access_mem tests addr + 8 >= end):
    where a return address is there, ember's stack has one frame more. In Debian's stripped
    dash (exec'd by the C program: .eh_frame, no symbols), libunwind mostly
    stops after the first frame or guesses "[[stack]]" frames; ember's
    stacks reach __libc_start_main."""
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    data = record(work, "prog", [prog, "exec", "1"], DWARF)
    got, _, _ = golden.run(["collapse", data])
    sh_all = sh_main = 0
    for line in got.splitlines():
        if line.startswith(b"sh;"):
            n = int(line.rpartition(b" ")[2])
            sh_all += n
            sh_main += n if b";__libc_start_call_main;" in line else 0
    print("DWARF exec'd dash: %.1f%% of its weight unwound to __libc_start_main" %
          (100.0 * sh_main / max(sh_all, 1)))
    if sh_all and sh_main < 0.8 * sh_all:
        golden.fail("the shell's stacks should unwind to __libc_start_main: %d of %d" %
                    (sh_main, sh_all))
    if os.access("/usr/bin/python3", os.X_OK):
        code = "import json\ns=0\nfor i in range(60000): s+=len(json.dumps({'a':i,'b':[i]}))\n"
        data = record(work, "python", ["/usr/bin/python3", "-c", code], DWARF)
        compare_near(data, "DWARF python3", 3)
    fixture = os.path.join(golden.CORPUS, "ocaml5", "bin", "fixture")
    if os.access(fixture, os.X_OK):
        data = record(work, "ocaml", [fixture, "-iters", "200", "-domains", "1"], DWARF)
        compare_near(data, "DWARF OCaml fixture", 5)
        got, err, _ = golden.run(["collapse", data])
        if b"caml_start_program;Stdlib.Domain.body" not in got:
            golden.fail("OCaml's stacks should unwind to caml_start_program")
        if "cannot read" in err:  # frames in //anon and [stack]: memory, no file
            golden.fail("DWARF OCaml fixture: a warning about memory with no file: %s" % err)


@case
def pprof(work):
    """What perf.data gives that perf script's text cannot: the pprof
    export's mappings (path, range, offset, build-id) and addresses, as go
    tool pprof -raw reads them."""
    if not shutil.which("go"):
        print("skip: no go")
        return
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    data = record(work, "prog", [prog, "1"])
    out = os.path.join(work, "prog.pb.gz")
    golden.run(["convert", "--to", "pprof", data, "-o", out])
    raw = sh(["go", "tool", "pprof", "-raw", out], env=dict(os.environ, GOTOOLCHAIN="local"),
             cwd=work).stdout.decode()
    bid = sh(["perf", "buildid-list", "-i", data]).stdout.decode()
    prog_bid = next(line.split()[0] for line in bid.splitlines() if line.endswith(prog))
    maps = raw[raw.index("Mappings"):].splitlines()[1:]
    mine = [m for m in maps if prog in m]
    if not mine or prog_bid not in mine[0] or "[FN]" not in mine[0]:
        golden.fail("the program's mapping, with its build-id, should be in the pprof: %s" % maps)
    mid = mine[0].split(":")[0]
    locs = [line for line in raw.splitlines() if re.match(r"\s+\d+: 0x[0-9a-f]+ M=%s " % mid, line)]
    if not locs or any(" 0x0 " in line for line in locs) or not any("worker" in l for l in locs):
        golden.fail("the program's locations should carry their addresses: %s" % locs[:5])
    print("ok: pprof mappings and addresses (%d locations in the program)" % len(locs))


def records(data):
    """(offset, type, size) of each record of a perf.data file's data section."""
    blob = open(data, "rb").read()
    start, size = struct.unpack_from("<QQ", blob, 40)
    at, out = start, []
    while at < start + size:
        typ, _, rsize = struct.unpack_from("<IHH", blob, at)
        out.append((at, typ, rsize))
        at += rsize
    return blob, out


def dyn_size_at(blob, at):
    """The offset of the dynamic size of the user stack copy in the SAMPLE
    record at `at` (one event, perf record --call-graph dwarf's fields)."""
    attrs = struct.unpack_from("<Q", blob, 24)[0]
    sample_type, = struct.unpack_from("<Q", blob, attrs + 24)
    regs_mask, = struct.unpack_from("<Q", blob, attrs + 80)
    known = {0x1: 8, 0x2: 8, 0x4: 8, 0x8: 8, 0x40: 8, 0x80: 8, 0x100: 8, 0x10000: 8}
    p = at + 8
    for bit in (0x10000, 0x1, 0x2, 0x4, 0x8, 0x40, 0x80, 0x100):  # IDENTIFIER..PERIOD
        p += known[bit] if sample_type & bit else 0
    if sample_type & ~(0x10000 | 0x1ef | 0x1000 | 0x2000 | 0x4000 | 0x8000):  # + WEIGHT, DATA_SRC
        golden.fail("unexpected sample fields %#x" % sample_type)
    nr, = struct.unpack_from("<Q", blob, p)  # CALLCHAIN (0x20)
    p += 8 + 8 * nr
    abi, = struct.unpack_from("<Q", blob, p)  # REGS_USER (0x1000)
    p += 8 + (8 * bin(regs_mask).count("1") if abi else 0)
    size, = struct.unpack_from("<Q", blob, p)  # STACK_USER (0x2000)
    return p + 8 + size


def must_fail(path, what, *needles):
    """ember collapse PATH fails, prints nothing, and says each needle."""
    out, err, code = golden.run(["collapse", path], check=False)
    if code == 0 or out or not all(n in err for n in (path,) + needles):
        golden.fail("%s: expected a clear error naming the file and %s; got exit %d, %d bytes "
                    "out, %r" % (what, needles, code, len(out), err))
    return err


@case
def bad_input(work):
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    data = record(work, "prog", [prog, "1"])
    blob, recs = records(data)
    cut = os.path.join(work, "cut.data")
    sample = next(r for r in recs if r[1] == 9)  # PERF_RECORD_SAMPLE
    # cut in the header, the attributes, a record, the feature sections, the last byte
    for at, inside in ((50, "the perf.data header"), (110, "the attributes"),
                       (sample[0] + 20, "the SAMPLE record"),
                       (len(blob) - 200, "feature section"), (len(blob) - 1, "feature section")):
        with open(cut, "wb") as f:
            f.write(blob[:at])
        must_fail(cut, "cut at %d" % at, "truncated input", "(the input ends at offset %d)" % at,
                  inside)
    # a record whose size is less than its header, one running past the data
    bad = os.path.join(work, "corrupt.data")
    for size, why in ((4, "its size is less than its 8-byte header"),
                      (65535, "it runs past the data section's end")):
        b = bytearray(blob)
        struct.pack_into("<H", b, sample[0] + 6, size)
        if size == 65535 and sample[0] + 65535 < 40 + sum(struct.unpack_from("<QQ", blob, 40)):
            continue  # the data section is too long for this record to run past it
        with open(bad, "wb") as f:
            f.write(b)
        must_fail(bad, "size %d" % size,
                  "corrupt perf.data: the SAMPLE record (type 9, %d bytes) at offset %d" %
                  (size, sample[0]), why)
    # a data section that runs past the file, and not a perf.data at all
    b = bytearray(blob)
    struct.pack_into("<Q", b, 48, len(blob) * 2)
    with open(bad, "wb") as f:
        f.write(b)
    out, err, code = golden.run(["collapse", bad], check=False)
    if code == 0 or out or bad not in err:
        golden.fail("a data section longer than the file: exit %d, %r" % (code, err))
    with open(bad, "wb") as f:
        f.write(b"PERFFILE" + blob[8:])
    out, err, code = golden.run(["collapse", "--format", "perf.data", bad], check=False)
    if code == 0 or out or "not a perf.data file" not in err:
        golden.fail("a bad magic: exit %d, %r" % (code, err))
    print("ok: cut and corrupt perf.data files are clear errors")


def feature_section(blob, bit):
    """(offset, size) of feature section BIT of a perf.data file: the
    table after the data section has one entry per bit set, in bit order."""
    bits = int.from_bytes(blob[72:104], "little")
    if not bits >> bit & 1:
        golden.fail("the file has no feature section %d" % bit)
    start, size = struct.unpack_from("<QQ", blob, 40)
    index = bin(bits & ((1 << bit) - 1)).count("1")
    return struct.unpack_from("<QQ", blob, start + size + 16 * index)


@case
def not_supported(work):
    """What ember cannot read is said by name: DWARF call graphs recorded on
    another architecture (HEADER_ARCH: perf says "target platform=arm64 is
    not supported"; ember's unwinder knows x86-64's registers only), and a
    big-endian file; an fp recording from another architecture reads as
    any (its call chains are addresses)."""
    HEADER_ARCH = 6
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    for name, extra in (("dwarf", DWARF), ("fp", ["-g"])):
        data = record(work, name, [prog, "1"], extra)
        blob = bytearray(open(data, "rb").read())
        at, size = feature_section(blob, HEADER_ARCH)
        if blob[at + 4:at + 11] != b"x86_64\0":
            print("skip: recorded on %r, not x86_64" % bytes(blob[at + 4:at + 12]))
            return
        blob[at + 4:at + 12] = b"aarch64\0"  # within its 64-byte padding
        arm = os.path.join(work, name + "-arm64.data")
        with open(arm, "wb") as f:
            f.write(blob)
        if name == "dwarf":
            must_fail(arm, "DWARF recorded on arm64",
                      "DWARF call graphs recorded on aarch64 (the file's HEADER_ARCH): ember "
                      "unwinds those of x86_64 only")
        else:
            golden.first_difference(golden.run(["collapse", arm])[0],
                                    golden.run(["collapse", data])[0], "fp recorded on arm64")
    big = os.path.join(work, "big-endian.data")
    with open(big, "wb") as f:
        f.write(b"2ELIFREP" + bytes(blob[8:]))
    must_fail(big, "a big-endian perf.data", "a big-endian perf.data (recorded on another "
              "architecture): ember reads little-endian ones")
    print("ok: DWARF from arm64 and big-endian files are refused by name")


def with_idle(data, every=5):
    """DATA itself when some sample is the idle task's (pid 0), else a copy
    in which every EVERY-th sample's pid and tid are 0: on a busy machine a
    CPU may never idle while recording."""
    blob = bytearray(open(data, "rb").read())
    attrs = struct.unpack_from("<Q", blob, 24)[0]
    sample_type, = struct.unpack_from("<Q", blob, attrs + 24)
    tid_at = 8 + 8 * bool(sample_type & 0x10000) + 8 * bool(sample_type & 0x1)  # IDENTIFIER, IP
    _, recs = records(data)
    samples = [at for at, typ, _ in recs if typ == 9]
    if any(struct.unpack_from("<I", blob, at + tid_at)[0] == 0 for at in samples):
        return data
    for at in samples[::every]:
        struct.pack_into("<II", blob, at + tid_at, 0, 0)
    idle = data.replace(".data", "-idle.data")
    with open(idle, "wb") as f:
        f.write(blob)
    return idle


def roots(folded):
    """{root frame: weight} of folded stacks, but for the samples of a task
    the kernel could not name (pid or tid -1, of a thread exiting): perf
    script prints ":-1  PID/-1", which stackcollapse-perf.pl's rule reads
    as a command of the whole line; ember names them ":-1" as perf does."""
    out = {}
    for line in folded.splitlines():
        stack, _, n = line.rpartition(b" ")
        root = stack.split(b";")[0]
        if not root.startswith(b":-1"):
            out[root] = out.get(root, 0) + int(n)
    return out


@case
def idle_task(work):
    """pid 0, the idle task, is perf's "swapper" (perf script, perf report
    --sort comm,pid) in every view: collapse, --pid, --tid, report, the
    pprof and Chrome exports; of perf record -a and of ember record -a
    --off-cpu (its cpu-clock samples: perf script text has no off-CPU
    time). Only the processes are compared here (the roots of the stacks
    and their weights): the other processes of the machine are whatever
    runs beside the test."""
    perf_data = os.path.join(work, "all.data")
    p = subprocess.run(["perf", "record", "-q", "-a", "-g", "-o", perf_data, "--", "sleep",
                        "0.5"], capture_output=True)
    if p.returncode != 0:
        print("skip: perf record -a: %r" % p.stderr[-300:])
        return
    mine = os.path.join(work, "mine.data")
    golden.run(["record", "-a", "--off-cpu", "--duration", "0.5", "-o", mine])
    for data, event in ((perf_data, []), (mine, ["--event-filter=cpu-clock"])):
        data = with_idle(data)
        for opts in ([], ["--pid"], ["--tid"]):
            text = perf_script(data, opts)
            want, _, _ = golden.run(["collapse"] + event + opts, stdin=text)
            got, _, _ = golden.run(["collapse"] + event + opts + (["--event", "cpu"] if event
                                                                   else []) + [data])
            idle = {b"swapper", b"swapper-0", b"swapper-0/0"} & set(roots(want))
            if roots(got) != roots(want) or not idle:
                golden.fail("%s %s: processes %r, perf script's %r" %
                            (data, " ".join(opts), sorted(roots(got).items())[:20],
                             sorted(roots(want).items())[:20]))
        # the tree shows the roots (the top table ranks functions only)
        out, _, _ = golden.run(["report", "--tree", "--percent-limit", "0", "--tid", data])
        if b"swapper-0/0" not in out or re.search(rb"(^|\s):0(-0)?\b", out, re.M):
            golden.fail("%s: report should name pid 0 swapper: %r" % (data, out[:600]))
        for fmt in ("pprof", "chrome"):
            exported = os.path.join(work, "idle." + fmt)
            golden.run(["convert", "--to", fmt, "--pid", data, "-o", exported])
            body = open(exported, "rb").read()
            body = gzip.decompress(body) if fmt == "pprof" else body
            if b"swapper-0" not in body or b":0-0" in body:
                golden.fail("%s: the %s export should name pid 0 swapper-0" % (data, fmt))
        print("ok: %s: pid 0 is swapper in every view" % data)


@case
def rebuilt_binary(work):
    """A binary rebuilt after recording (perf record -N: no build-id cache)
    is not the one recorded: ember says so once and names its frames
    [unknown] in its module, as perf script does; a stripped binary has
    its .dynsym only, a deleted one nothing: the same as perf script."""
    home = os.environ["HOME"]
    os.environ["HOME"] = os.path.join(work, "home")  # no cached copy from other cases
    try:
        rebuilt(work)
    finally:
        os.environ["HOME"] = home


def rebuilt(work):
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    data = record(work, "prog", [prog, "1"], ["-g", "-N"])
    build("perfdata_prog.c", prog, "-O1")
    got, err = compare(data, [], "rebuilt binary")
    if err.count("build-id mismatch") != 1 or prog not in err:
        golden.fail("the rebuilt binary should be said once, by name: %r" % err)
    if b"prog;[unknown]" not in got:
        golden.fail("the rebuilt binary's frames should be [unknown]: %r" % got[:300])
    compare(data, ["--addrs"], "rebuilt binary")
    sh(["strip", prog])
    compare(data, [], "stripped binary")
    os.unlink(prog)
    _, err = compare(data, [], "deleted binary")
    if prog not in err:
        golden.fail("the missing binary should be said: %r" % err)
    print("ok: rebuilt, stripped and deleted binaries as perf script names them")


def run_main(run=run_cases):
    """Runs the cases (run: another module's, with these helpers) after
    perf's setup: a HOME of the test's own, a skip where perf cannot
    record."""
    global CC, SRC
    CC, SRC, work = sys.argv[1:4]
    if not shutil.which("perf"):
        print("SKIP: no perf")
        sys.exit(SKIP)
    home = os.path.join(work + ".home")
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    os.environ["HOME"] = home
    os.environ.pop("PERF_BUILDID_DIR", None)
    probe = subprocess.run(["perf", "record", "-q", "-o", os.path.join(home, "probe.data"),
                            "true"], capture_output=True)
    if probe.returncode != 0:
        print("SKIP: perf cannot record here: " + probe.stderr.decode().strip()[:300])
        sys.exit(SKIP)
    sys.argv = [sys.argv[0], work]
    run()


if __name__ == "__main__":
    run_main()
