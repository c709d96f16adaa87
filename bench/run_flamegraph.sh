#!/bin/sh
# ember against FlameGraph's own scripts on the same inputs, side by side in
# one run: the ratios the README's first paragraph states.
#
# - collapse: stackcollapse-perf.pl and `ember collapse -j1` (one thread, as
#   the script) of FlameGraph's example perf script repeated SCALE times;
# - flamegraph: flamegraph.pl and `ember flamegraph -j1` of generated folded
#   stacks (gen_perf --folded, FOLDED_MB MB);
# - both, from perf script to SVG: stackcollapse-perf.pl | flamegraph.pl and
#   `ember flamegraph -j1` of the example.
#
# Each command runs REPEAT times and its fastest is kept (its wall time, and
# the CPU time of that run: on a shared machine the CPU ratios are the ones
# that load does not stretch). The outputs are FlameGraph's: ember's
# collapse is byte-identical (tests/golden), so is not compared here.
#
# usage: FLAMEGRAPH=DIR bench/run_flamegraph.sh [BUILD_DIR]   (default: build-rel, Release)
#   FLAMEGRAPH  a FlameGraph checkout (stackcollapse-perf.pl, flamegraph.pl)
#   SCALE       copies of the example (3.1 MB each; default 8)
#   FOLDED_MB   size of the folded input (default 20)
#   REPEAT      runs of each command (default 3)
#   BENCH_DIR   where the inputs are written (default /tmp/ember-fg-bench)
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-rel}
F=${FLAMEGRAPH:-}
if [ -z "$F" ] || [ ! -f "$F/stackcollapse-perf.pl" ] || [ ! -f "$F/flamegraph.pl" ]; then
    echo "FLAMEGRAPH=DIR must name a FlameGraph checkout (stackcollapse-perf.pl," \
        "flamegraph.pl)" >&2
    exit 2
fi
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
cmake --build "$B" -j"$(nproc)" >/dev/null
D=${BENCH_DIR:-/tmp/ember-fg-bench}
SCALE=${SCALE:-8}
FOLDED_MB=${FOLDED_MB:-20}
REPEAT=${REPEAT:-3}
E=$(pwd)/$B/ember
M=$(pwd)/$B/bench/measure
G=$(pwd)/$B/bench/gen_perf
mkdir -p "$D"

X="$D/example$SCALE.txt"
if [ ! -f "$X" ]; then
    zcat ../shared/corpus/flamegraph/example-perf-stacks.txt.gz > "$D/example1.txt"
    for _ in $(seq "$SCALE"); do cat "$D/example1.txt"; echo; done > "$X"
fi
Y="$D/folded$FOLDED_MB.txt"
[ -f "$Y" ] || "$G" --folded "$FOLDED_MB" > "$Y"

# best CMD...: "wall-seconds cpu-seconds" of the fastest of REPEAT runs
best() {
    for _ in $(seq "$REPEAT"); do
        "$M" run 0 "$@" 2>/dev/null | awk '{print $(NF-10), $(NF-2)}'
    done | sort -n | head -1
}

# row WHAT BYTES EMBER_RESULT FLAMEGRAPH_RESULT
row() {
    echo "$3 $4" | awk -v what="$1" -v mb="$(($2 / 1000000))" '{
        printf "%-12s %5d MB | %7.3f s %7.3f s | %7.3f s %7.3f s | %6.1fx %6.1fx\n",
               what, mb, $1, $2, $3, $4, $3 / $1, $4 / $2
    }'
}

size() { stat -c %s "$1"; }

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "ember $($E --version | cut -d' ' -f2) against FlameGraph $(git -C "$F" log -1 --format=%h \
    2>/dev/null || echo "(not a git checkout)"), perl $(perl -e 'print $^V'); $(nproc) CPUs" \
    "(${cpu:-$(uname -m)}); fastest of $REPEAT runs"
printf '%-12s %8s | %9s %9s | %9s %9s | %7s %7s\n' run input "ember" CPU FlameGraph CPU \
    "wall" "CPU"
row collapse "$(size "$X")" "$(best "$E" collapse -j1 "$X")" \
    "$(best perl "$F/stackcollapse-perf.pl" "$X")"
row flamegraph "$(size "$Y")" "$(best "$E" flamegraph -j1 "$Y")" \
    "$(best perl "$F/flamegraph.pl" "$Y")"
row "perf -> SVG" "$(size "$X")" "$(best "$E" flamegraph -j1 "$X")" \
    "$(best sh -c "perl '$F/stackcollapse-perf.pl' '$X' | perl '$F/flamegraph.pl'")"
