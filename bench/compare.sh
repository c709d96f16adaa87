#!/bin/sh
# Two builds of ember side by side on the same inputs, in one run: for a
# change that must not cost speed (a re-layout, a refactor), the CPU time
# of each job under the old and the new program, the fastest of REPEAT
# runs each, taken in turns so that the machine's load falls on both, and
# their ratio (new/old: above 1 is slower).
#
# Jobs: collapse of perf script text and flamegraph of folded stacks (one
# thread, as the scripts), diff --folded of 301k stacks, perf.data -> SVG
# of a frame-pointer and a DWARF recording, trace dump of a traced
# program's ring file, and dump of a generated OCaml 5 runtime_events file.
#
# usage: bench/compare.sh OLD_EMBER NEW_BUILD_DIR
#   OLD_EMBER: the old program (e.g. a Release build of the last release);
#   NEW_BUILD_DIR: a Release build of this tree (its bench tools are used).
set -eu
[ $# -eq 2 ] || {
    echo "usage: bench/compare.sh OLD_EMBER NEW_BUILD_DIR" >&2
    exit 2
}
OLD=$(readlink -f "$1")
B=$(readlink -f "$2")
NEW=$B/ember
for f in "$OLD" "$NEW" "$B/bench/gen_perf" "$B/bench/gen_ocaml_events" "$B/bench/measure" "$B/traced"; do
    [ -x "$f" ] || {
        echo "bench/compare.sh: $f: no such program (build $B with bench tools)" >&2
        exit 2
    }
done
cd "$(dirname "$0")/.."
REPEAT=${REPEAT:-3}
D=${BENCH_DIR:-/tmp/ember-bench}
mkdir -p "$D"
G=$B/bench/gen_perf

# the inputs, made once
[ -f "$D/perf200.txt" ] || "$G" 200 >"$D/perf200.txt"
[ -f "$D/folded200.txt" ] || "$G" --folded 200 >"$D/folded200.txt"
[ -f "$D/deep301k.txt" ] || "$G" --deep 301000 >"$D/deep301k.txt"
[ -f "$D/deep301k-after.txt" ] || "$G" --deep 301000 --after >"$D/deep301k-after.txt"
[ -f "$D/4242.events" ] || "$B/bench/gen_ocaml_events" "$D/4242.events" >/dev/null
if [ ! -f "$D/traced.trace" ]; then
    EMBER_TRACE="$D/traced.trace" EMBER_TRACE_RING=$((256 << 20)) "$B/traced" 400000 3 >/dev/null
fi
record() { # NAME PERIOD perf-record-options...
    name=$1 period=$2
    shift 2
    [ -f "$D/$name.data" ] && return
    [ -x "$D/prog" ] ||
        cc -O2 -g -fno-omit-frame-pointer -pthread -o "$D/prog" tests/golden/data/perfdata_prog.c
    perf record -q -e cpu-clock -c "$period" -o "$D/$name.data" "$@" -- "$D/prog" 30 \
        >/dev/null 2>&1
}
record fp 10000 -g
record dwarf 100000 --call-graph dwarf

# run_once PROGRAM ARGS...: its user+sys seconds (bench/measure, output to
# /dev/null)
run_once() {
    "$B/bench/measure" run 0 "$@" 2>/dev/null | awk '{ print $(NF-2) }'
}
job() { # LABEL ARGS... (run under both programs)
    label=$1
    shift
    o=999999 n=999999
    for _ in $(seq "$REPEAT"); do
        t=$(run_once "$OLD" "$@")
        o=$(echo "$o $t" | awk '{ print ($2 < $1) ? $2 : $1 }')
        t=$(run_once "$NEW" "$@")
        n=$(echo "$n $t" | awk '{ print ($2 < $1) ? $2 : $1 }')
    done
    echo "$label $o $n" | awk '{ printf "%-28s %8.3f s %8.3f s %6.3fx\n", $1, $2, $3, $3 / $2 }'
}

echo "old: $OLD"
echo "new: $NEW"
echo "$(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg); CPU seconds, fastest of $REPEAT"
for f in fp dwarf; do
    echo "$f.data: $(perf script -i "$D/$f.data" -F tid 2>/dev/null | grep -c .) samples," \
        "$(($(wc -c <"$D/$f.data") >> 20)) MiB"
done
printf '%-28s %10s %10s %7s\n' job old new new/old
job collapse-perf200-j1 collapse -j1 "$D/perf200.txt"
job flamegraph-folded200-j1 flamegraph -j1 "$D/folded200.txt"
job diff-folded-301k diff --folded "$D/deep301k.txt" "$D/deep301k-after.txt"
job perfdata-fp-svg flamegraph "$D/fp.data"
job perfdata-dwarf-svg flamegraph "$D/dwarf.data"
job trace-dump trace dump "$D/traced.trace"
job ocaml-events-dump trace dump "$D/4242.events"
