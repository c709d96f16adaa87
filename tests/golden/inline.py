"""Golden test: `ember collapse --inline [--context]` finds the inline
chains that stackcollapse-perf.pl gets by running `addr2line -i -f -s -C`
per address, with elfutils instead of a process per address.

usage: inline.py CC SOURCE WORKDIR

Builds SOURCE with -O2 -g, writes perf script samples at every address of
its outer function (as perf prints them: the file's address, and also a
runtime address with "symbol+0xoffset", which --inline resolves through the
symbol), and compares with the chains addr2line reports, joined root first
as the script does.

Then the same with -flto, where the inlined functions' abstract origins are
in another compilation unit (ember found no chain there before). Two of
addr2line's answers are its own mistakes there, undone before comparing:
binutils 2.40 names the file of LTO'd code "<artificial>" (file 0 of the
DWARF 5 line table, where the line program's files start at 1;
llvm-symbolizer and libdw read the source's name), and names a function
without a DWARF linkage name (any C function), when it is the innermost
frame, by its ELF symbol: the clone "outer_work.constprop.0" where DWARF
and ember say "outer_work".
"""
import os
import re
import subprocess
import sys

import golden


def addr2line(binary, addrs):
    out = subprocess.run(["addr2line", "-a", "-e", binary, "-i", "-f", "-s", "-C"],
                         input="\n".join("%x" % a for a in addrs), capture_output=True,
                         text=True, check=True).stdout.splitlines()
    chains, cur = {}, None
    for line in out:
        if line.startswith("0x"):
            cur = int(line, 16)
            chains[cur] = []
        else:
            chains[cur].append(re.sub(r" \(discriminator \S+\)", "", line))
    result = {}
    for a, lines in chains.items():
        pairs = list(zip(lines[0::2], lines[1::2]))
        result[a] = pairs[::-1]  # root first, as the script joins them
    return result


def lto_fixed(chains, source):
    """addr2line's LTO chains with its two mistakes undone (see above)."""
    base = os.path.basename(source)
    fixed = {}
    for a, pairs in chains.items():
        fixed[a] = [(re.sub(r"\.(constprop|isra|part|cold)\.\d+$", "", f),
                     loc.replace("<artificial>", base)) for f, loc in pairs]
    return fixed


def check(cc, source, work, flags, name):
    binary = os.path.join(work, name)
    subprocess.run([cc, "-O2", "-g"] + flags + ["-o", binary, source], check=True)
    start = size = symbol = None
    for line in subprocess.run(["nm", "-S", binary], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        f = line.split()
        if f[-1].split(".")[0] == "outer_work":
            start, size, symbol = int(f[0], 16), int(f[1], 16), f[-1]
    addrs = list(range(start, start + size))
    chains = addr2line(binary, addrs)
    if flags:
        chains = lto_fixed(chains, source)
    if not any(len(c) >= 3 for c in chains.values()):
        golden.fail("%s: the compiler did not inline two levels: nothing to test" % name)

    runtime = 0x555555554000
    text = []
    for i, a in enumerate(addrs):
        # half as the file's addresses, half as runtime ones with symbol+offset
        pc = a if i % 2 == 0 else runtime + a
        text.append("prog %d [000] %d.0: 1 cpu-clock:\n\t%x %s+0x%x (%s)\n\n" %
                    (100 + i, i, pc, symbol, a - start, binary))
    script = "".join(text).encode()
    for context in (False, True):
        want = {}
        for a in addrs:
            stack = ";".join(f + (":" + loc if context else "") for f, loc in chains[a])
            key = "prog;" + stack
            want[key] = want.get(key, 0) + 1
        expected = "".join("%s %d\n" % (k, v) for k, v in sorted(want.items())).encode()
        args = ["collapse", "--inline"] + (["--context"] if context else [])
        got, _, _ = golden.run(args, stdin=script)
        golden.first_difference(got, expected,
                                "%s --inline%s" % (name, " --context" if context else ""))


def main():
    cc, source, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    check(cc, source, work, [], "inline_prog")
    check(cc, source, work, ["-flto"], "inline_prog_lto")


if __name__ == "__main__":
    main()
