"""Golden test: which symbol names an address in a perf.data file, against
perf report and perf script (perfdata.py's helpers and setup):
symchoice.c and libsymver.so (a label of no size inside a sized function,
aliases by each rule of perf's choice, versioned names, PLT stubs, IBT's
.plt.sec), fp and DWARF; node's builtins, which hold such labels; a
stripped binary with its debug file, beside it then only in perf's
build-id cache; maps of memory with no file; and ember report against
perf report on perf record -a, -c N and period=N recordings.

usage: perf_symbols.py CC SOURCE_DIR WORKDIR (skips, exit 77, as perfdata.py)
"""
import os
import re
import shutil
import struct

import golden
import perfdata
import perfref
from perfdata import DWARF, build, compare, compare_all, record, records, sh

case, run_cases = golden.cases()


@case
def symbol_choice(work):
    """Which symbol names an address, on symchoice.c (see there) and its
    libsymver.so, fp and DWARF, and built for IBT (.plt.sec): a label of
    no size inside a sized function names none of its addresses; of
    aliases, perf 6.1's choice; versioned names as the linker wrote them;
    PLT stubs "X@plt". Documented differences (same): perf's search of
    overlapping ranges may find the label (it finds the function here);
    perfs after 6.1 prefer a typed function to a label at one address
    (func_typed), ember and perf 6.1 the longest name."""
    lib = os.path.join(work, "libsymver.so")
    src = perfdata.SRC
    sh([perfdata.CC, "-O2", "-g", "-shared", "-fPIC", "-o", lib, os.path.join(src, "symver.c"),
        "-Wl,--version-script=" + os.path.join(src, "symver.map")])
    same = {"label_inside": "label_outer", "func_typed": "notype_longer_name"}
    for name, flags, extra in (("symchoice", [], ["-g"]), ("symchoice", [], DWARF),
                               ("symchoice_ibt", ["-fcf-protection=full", "-Wl,-z,ibtplt"],
                                ["-g"])):
        prog = build("symchoice.c", os.path.join(work, name), "-fno-builtin", "-L" + work,
                     "-lsymver", "-Wl,-rpath," + work, *flags)
        data = record(work, name, [prog, "5000000"], extra)
        what = "%s %s" % (name, " ".join(extra))
        compare_all(data, what, [[], ["--addrs"]], same)
        report = perfref.ember_report(data, "cpu-clock")
        for want in ("label_outer", "alias_global", "strong", "_under", "len_the_longest",
                     "nosize_longer_name", "notype_longer_name", "vfunc@@VER_2", "labs@plt"):
            if report.get(want, 0) < 1:
                golden.fail("%s: %s should have its share: %s" % (what, want, report))
        if "label_inside" in report:
            golden.fail("%s: the label took its function's addresses: %s" % (what, report))


@case
def stripped_debug_file(work):
    """A stripped binary with its debug file, as perf finds it: the first
    file with a symbol table of the cache's copy of the binary, its debug
    file there (.build-id/xx/yyyy/debug), the binary, the debug file its
    .gnu_debuglink names beside it. The debug file beside the binary, then
    only in perf's cache; then the binary unstripped, the cache still
    holding the stripped copy of that build-id."""
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    sh(["objcopy", "--only-keep-debug", prog, prog + ".debug"])
    sh(["objcopy", "--strip-all", "--add-gnu-debuglink=" + prog + ".debug", prog])
    data = record(work, "stripped", [prog, "1"])
    compare_all(data, "stripped, debug file beside", [[], ["--tid"]])
    got, _, _ = golden.run(["collapse", data])
    if b";main;" not in got:
        golden.fail("the stripped binary should be named from its debug file: %r" % got[:300])
    bid = re.search(r"Build ID: ([0-9a-f]+)", sh(["readelf", "-n", prog]).stdout.decode()).group(1)
    cached = os.path.join(os.environ["HOME"], ".debug", ".build-id", bid[:2], bid[2:])
    shutil.copy(prog + ".debug", os.path.join(cached, "debug"))
    os.unlink(prog + ".debug")
    compare_all(data, "stripped, debug file in perf's cache", [[]])
    os.unlink(os.path.join(cached, "debug"))
    # built again, not stripped: the same build-id, and the cache keeps
    # the stripped copy; perf reads the first file with a symbol table
    build("perfdata_prog.c", prog)
    data = record(work, "unstripped", [prog, "1"])
    compare_all(data, "not stripped, perf's cache has the stripped copy", [[]])


@case
def system_wide(work):
    """perf record -a: every process of the machine, the kernel, idle."""
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    data = record(work, "all", [prog, "2"], ["-a", "-g"])
    perfref.report_check(data, "perf record -a")


@case
def fixed_period(work):
    """-c N and period=N: samples without a period field, weighed by the
    attribute's period (the same for every sample: shares as perf's)."""
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    for name, extra in (("c", ["-g", "-c", "100000"]),
                        ("period", ["-g", "-e", "cpu-clock/period=100000/"])):
        data = record(work, "fixed-" + name, [prog, "1"], extra)
        perfref.report_check(data, "perf record " + " ".join(extra))


@case
def node(work):
    """node: its builtins are functions with labels of no size inside
    (Builtins_JSConstructStubGeneric, 412 bytes, holds
    construct_stub_create_deopt_addr and construct_stub_invoke_deopt_addr):
    the function's name for all of its addresses, as perf report gives."""
    if not shutil.which("node"):
        print("skip: no node")
        return
    code = ("class P { constructor(x) { this.x = x; } }\n"
            "let s = 0;\n"
            "for (let i = 0; i < 3e6; i++) { s += Reflect.construct(P, [i]).x; }\n"
            "console.log(s);\n")
    data = record(work, "node", ["node", "-e", code])
    perfref.report_check(data, "node")
    report = perfref.ember_report(data, "cpu-clock")
    labels = [f for f in report if f.startswith("construct_stub_")]
    if labels or report.get("Builtins_JSConstructStubGeneric", 0) < 1:
        golden.fail("node: labels took their function's addresses: %s" %
                    sorted(report.items(), key=lambda kv: -kv[1])[:8])


MMAP2 = 10


@case
def memory_maps(work):
    """Maps of memory no file backs (//anon, [stack], [heap], [anon:x],
    /memfd:x, [vsyscall]): the program's text mapping renamed to each and
    made non-executable (MMAP2's prot) in a copy of a recording. perf
    loads nothing for them and says nothing; neither does ember: its
    frames there are [unknown] in that module, as perf script names them."""
    prog = build("perfdata_prog.c", os.path.join(work, "prog"))
    data = record(work, "prog", [prog, "1"])
    blob, recs = records(data)
    name = prog.encode() + b"\0"
    for fake in (b"//anon", b"[stack]", b"[heap]", b"[anon:ember]", b"/memfd:ember (deleted)",
                 b"[vsyscall]"):
        b = bytearray(blob)
        n = 0
        for at, typ, size in recs:
            if typ == MMAP2 and blob[at + 72:at + 72 + len(name)] == name and \
                    struct.unpack_from("<I", blob, at + 64)[0] & 4:
                struct.pack_into("<I", b, at + 64, 1)  # PROT_READ
                b[at + 72:at + 72 + len(name)] = fake.ljust(len(name), b"\0")
                n += 1
        if not n:
            golden.fail("no executable MMAP2 of %s in the recording" % prog)
        path = os.path.join(work, "memory.data")
        with open(path, "wb") as f:
            f.write(b)
        what = "text mapped as " + fake.decode()
        _, err = compare(path, [], what)
        compare(path, ["--addrs"], what)
        if "cannot read" in err or fake.decode() in err:
            golden.fail("%s: memory with no file is no warning: %s" % (what, err))
    print("ok: maps of memory with no file: frames as perf script's, no warning")


if __name__ == "__main__":
    perfdata.run_main(run_cases)
