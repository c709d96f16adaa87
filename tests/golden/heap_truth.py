"""Golden test: heap profiles against programs with built-in truth
(tests/record/heap_known.c, its --threads mode, heap_known.cpp), whose
`--truth` prints per allocation site: allocations, bytes, peak (held at the
global peak), leaked (bytes and blocks) and temporary, by construction.

usage: heap_truth.py CC CXX SOURCE_DIR WORKDIR   (CXX may be "", SOURCE_DIR
       is tests/record)

1. heaptrack (Debian's 1.4) is the reference: every number heaptrack_print
   gives per site equals the truth. Its flame-graph output (-F, one line per
   stack, exact integers) gives allocations, temporary, leaked and peak;
   heaptrack 1.4 prints bytes allocated nowhere per stack, so they come from
   its size histogram (-H): every site has sizes of its own, and each size's
   count must be the truth's. heaptrack does not count leaked blocks.
2. ember (`ember record --heap`), every allocation: each value of the
   profile equals the truth exactly for every site; `--sample-bytes 1`
   gives exactly the same; sampled (--sample-bytes SAMPLE_BYTES, seed
   EMBER_HEAP_SEED, 1 unless set): each site above 5% of the bytes within
   10% of the truth in bytes and objects, the total bytes within 5% (seeds
   1 to 5 gave at most 5% and 0.5%).

Allocations that belong to no site are named, checked and set aside:
libstdc++'s emergency exception pool (72,704 B, allocated as it loads from
_dl_init; in a C program only heaptrack has it, its preload library being
C++; heaptrack frees it at exit, calling __gnu_cxx::__freeres from its
atexit handler, so it is not leaked there as it is under ember), and
glibc's dtv of each new thread stack (allocate_dtv, under pthread_create,
kept with the stack cache: leaked). Anything else fails.

HEAP_TRUTH_EDIT='{"SITE": {"KEY": N}}' replaces numbers of the truth, to
see each comparison fail.
Skips (exit 77) when neither heaptrack nor `ember record --heap` is here.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import golden

SAMPLE_BYTES = 512  # sites above 5% of bytes get ~2,000 samples: 10% is > 4 sigma
# heaptrack_print's --flamegraph-cost-type, each named as the truth's key
HEAPTRACK_COSTS = ("allocations", "temporary", "leaked", "peak")
# ember's values -> the truth's keys; inuse_* are taken at exit: the leak
EMBER_VALUES = {"alloc_objects": "allocations", "alloc_space": "bytes", "peak": "peak",
                "leaked": "leaked", "inuse_space": "leaked", "inuse_objects": "leaked_count",
                "temporary": "temporary"}
# name -> (a frame every stack of it has, the programs where it may appear)
ARTEFACTS = {
    "libstdc++ emergency exception pool": ("_dl_init", ("heaptrack", "cxx")),
    "glibc dtv of a new thread stack": ("allocate_dtv", ("threads",)),
}
FRAME_FILE = re.compile(r" \([^()]*\)$")  # heaptrack's " (file.c)" after a name


def base_name(frame):
    """A frame's function without heaptrack's (file) or C++'s (args)."""
    return FRAME_FILE.sub("", frame).split("(")[0].strip()


def site_of(stack, sites):
    """The innermost frame of a folded stack that is a truth site, or None."""
    for frame in reversed(stack.split(";")):
        if base_name(frame) in sites:
            return base_name(frame)
    return None


def artefact_of(stack, where):
    """The known artefact a stack of no site is, where it may appear; fails
    on any other."""
    for name, (frame, programs) in ARTEFACTS.items():
        if any(base_name(f) == frame for f in stack.split(";")) and where & set(programs):
            return name
    golden.fail("an allocation of no site and no known artefact: %r" % stack)


def split_sites(folded, truth, where):
    """{site: value} and {artefact: value} of a {stack: value} dict."""
    sites, artefacts = {s: 0 for s in truth["sites"]}, {}
    for stack, value in folded.items():
        site = site_of(stack, truth["sites"])
        if site:
            sites[site] += value
        elif value:
            name = artefact_of(stack, where)
            artefacts[name] = artefacts.get(name, 0) + value
    return sites, artefacts


def load_truth(prog, args):
    out = subprocess.run([prog, "--truth"] + args, capture_output=True, text=True,
                         check=True).stdout
    truth = json.loads(out)
    for site, edits in json.loads(os.environ.get("HEAP_TRUTH_EDIT", "{}")).items():
        if site in truth["sites"]:
            truth["sites"][site].update(edits)
    owner = {}
    for site, t in truth["sites"].items():
        for size in t["sizes"]:
            if owner.setdefault(size, site) != site:
                golden.fail("the truth gives size %s to %s and %s" % (size, owner[size], site))
    return truth


def compare(label, key, got, truth):
    """Fails unless got[site] == the truth's KEY for every site."""
    for site in truth["sites"]:
        want = truth["sites"][site][key]
        if got.get(site, 0) != want:
            golden.fail("%s: %s of %s is %s, the truth %s" % (label, key, site, got.get(site, 0),
                                                              want))


# ---- heaptrack


def heaptrack_record(prog, args, out):
    """heaptrack -o OUT: the file it wrote (OUT.zst, or OUT.gz where built
    without zstd)."""
    def written():
        return [f for f in os.listdir(os.path.dirname(out))
                if f.startswith(os.path.basename(out) + ".")]
    for old in written():
        os.remove(os.path.join(os.path.dirname(out), old))
    subprocess.run(["heaptrack", "-o", out, prog] + args, capture_output=True, check=True)
    if len(written()) != 1:
        golden.fail("heaptrack -o %s wrote %s" % (out, written()))
    return os.path.join(os.path.dirname(out), written()[0])


def heaptrack_print(data, cost, work):
    """{stack: value} of heaptrack_print's flame graph by COST, and its
    size histogram {size: count}."""
    fg, hist = os.path.join(work, "fg.txt"), os.path.join(work, "hist.txt")
    subprocess.run(["heaptrack_print", "-f", data, "-F", fg, "--flamegraph-cost-type", cost,
                    "-H", hist, "-p", "0", "-a", "0", "-T", "0", "-l", "0"],
                   capture_output=True, check=True)
    folded = {}
    for line in open(fg):
        stack, _, value = line.rstrip("\n").rpartition(" ")
        folded[stack.rstrip(";")] = folded.get(stack.rstrip(";"), 0) + int(value)
    sizes = dict(tuple(map(int, line.split("\t"))) for line in open(hist))
    return folded, sizes


def check_heaptrack_sizes(sizes, truth, artefact_sizes, label):
    """Each site's sizes counted as the truth says (its bytes, then), and
    no size that is neither a site's nor an artefact's."""
    for site, t in truth["sites"].items():
        for size, count in t["sizes"].items():
            got = sizes.pop(int(size), 0)
            if got != count:
                golden.fail("%s: heaptrack's histogram has %d allocations of %s B, %s's truth %d"
                            % (label, got, size, site, count))
    for size, count in artefact_sizes.items():
        if sizes.pop(size, 0) != count:
            golden.fail("%s: the artefacts' %d blocks of %d B are not in heaptrack's histogram"
                        % (label, count, size))
    if sizes:
        golden.fail("%s: heaptrack's histogram has sizes of no site: %s" % (label, sizes))


def check_heaptrack(prog, args, where, work):
    label = "heaptrack " + " ".join([os.path.basename(prog)] + args)
    truth = load_truth(prog, args)
    data = heaptrack_record(prog, args, os.path.join(work, "heaptrack"))
    values, artefacts = {}, {}
    for cost in HEAPTRACK_COSTS:
        folded, sizes = heaptrack_print(data, cost, work)
        values[cost], artefacts[cost] = split_sites(folded, truth, where | {"heaptrack"})
        compare(label, cost, values[cost], truth)
    # an artefact is held at the peak whole: its block size is peak / count
    pool = artefacts["allocations"].get("libstdc++ emergency exception pool")
    if pool != 1:
        golden.fail("%s: libstdc++'s emergency pool is %s blocks, not one" % (label, pool))
    artefact_sizes = {artefacts["peak"].get(a, 0) // n: n
                      for a, n in artefacts["allocations"].items()}
    check_heaptrack_sizes(sizes, truth, artefact_sizes, label)
    print("%s: every site as the truth; set aside: %s" % (label, artefacts))


# ---- ember


def ember_record(prog, args, out, extra, env=None):
    p = subprocess.run([golden.EMBER, "record", "--heap"] + extra + ["-o", out, "--", prog] + args,
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        golden.fail("ember record --heap %s: exit %d\n%s" % (" ".join(extra), p.returncode,
                                                              p.stderr))


def ember_values(heap, truth, where):
    """{value: ({site: n}, {artefact: n})} of a heap recording."""
    out = {}
    for value in EMBER_VALUES:
        folded, _, _ = golden.run(["collapse", "--event", value, heap])
        out[value] = split_sites(golden.folded_dict(folded), truth, where)
    return out


def check_ember_exact(prog, args, where, work):
    label = "ember " + " ".join([os.path.basename(prog)] + args)
    truth = load_truth(prog, args)
    heap = os.path.join(work, "every.heap")
    ember_record(prog, args, heap, [])
    every = ember_values(heap, truth, where)
    for value, (sites, _) in every.items():
        compare("%s --event %s" % (label, value), EMBER_VALUES[value], sites, truth)
    ember_record(prog, args, heap, ["--sample-bytes", "1"])
    for value, got in ember_values(heap, truth, where).items():
        if got != every[value]:
            golden.fail("%s --sample-bytes 1 --event %s: %s, the default %s" %
                        (label, value, got, every[value]))
    print("%s: every site as the truth, --sample-bytes 1 the same; set aside: %s" %
          (label, {v: a for v, (_, a) in every.items() if a}))


def check_ember_sampled(prog, work):
    label = "ember %s --sample-bytes %d" % (os.path.basename(prog), SAMPLE_BYTES)
    truth = load_truth(prog, [])
    heap = os.path.join(work, "sampled.heap")
    ember_record(prog, [], heap, ["--sample-bytes", str(SAMPLE_BYTES)],
                 dict(os.environ, EMBER_HEAP_SEED=os.environ.get("EMBER_HEAP_SEED", "1")))
    got = ember_values(heap, truth, set())
    total = truth["total"]["bytes"]
    big = [s for s, t in truth["sites"].items() if t["bytes"] > 0.05 * total]
    errors = []
    for value in ("alloc_space", "alloc_objects"):
        for site in big:
            want = truth["sites"][site][EMBER_VALUES[value]]
            error = got[value][0][site] / want - 1
            if abs(error) > 0.10:
                golden.fail("%s: %s of %s is %s, %+.1f%% from the truth %d" %
                            (label, value, site, got[value][0][site], 100 * error, want))
            errors.append("%s %s %+.1f%%" % (site, value, 100 * error))
    error = sum(got["alloc_space"][0].values()) / total - 1
    if abs(error) > 0.05:
        golden.fail("%s: the bytes in all %+.1f%% from the truth %d" % (label, 100 * error, total))
    print("%s: the sites above 5%% of the bytes within 10%% (%s), the total bytes %+.2f%%" %
          (label, ", ".join(errors), 100 * error))


def build(cc, cxx, src, work):
    """{name: (program, args, where)} of the programs this machine builds."""
    flags = ["-O1", "-g", "-fno-omit-frame-pointer"]
    c = os.path.join(work, "heap_known")
    subprocess.run([cc] + flags + ["-pthread", "-o", c, os.path.join(src, "heap_known.c")],
                   check=True)
    progs = {"c": (c, [], set()), "threads": (c, ["--threads"], {"threads"})}
    if cxx and not cxx.endswith("NOTFOUND"):
        x = os.path.join(work, "heap_known_cxx")
        subprocess.run([cxx] + flags + ["-o", x, os.path.join(src, "heap_known.cpp")], check=True)
        progs["cxx"] = (x, [], {"cxx"})
    return progs


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    cc, cxx, src, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    has_heaptrack = bool(shutil.which("heaptrack") and shutil.which("heaptrack_print"))
    progs = build(cc, cxx, src, work)
    for prog, args, where in progs.values():
        if has_heaptrack:
            check_heaptrack(prog, args, where, work)
        else:
            print("SKIPPED (heaptrack part): heaptrack is not installed")
        check_ember_exact(prog, args, where, work)
    check_ember_sampled(progs["c"][0], work)

if __name__ == "__main__":
    main()
