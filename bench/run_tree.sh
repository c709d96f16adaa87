#!/bin/sh
# The tree against inferno, side by side in one run: `flamegraph`,
# `diff --folded` and the differential SVG on generated folded stacks with
# 43k, 301k, 1M and 3M distinct stacks (gen_perf --deep; AFTER is BEFORE
# with 5% of the stacks gone, 10% changed and 5% new). Each run is timed
# REPEAT times and its fastest kept (wall time; its CPU time and peak RSS
# are that run's). On a shared machine the CPU times compare better.
#
# usage: bench/run_tree.sh [BUILD_DIR]   (default: build-rel, built in Release)
#   INFERNO_DIR  directory with inferno-flamegraph and inferno-diff-folded
#                (../shared/tools/inferno-build/build.sh makes them); unset
#                or missing: ember's columns only
#   SIZES        distinct stacks (default "43000 301000 1000000 3000000")
#   REPEAT       runs of each command (default 3)
#   BENCH_DIR    where the inputs are written (default /tmp/ember-tree-bench)
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-rel}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
cmake --build "$B" -j"$(nproc)" >/dev/null
D=${BENCH_DIR:-/tmp/ember-tree-bench}
SIZES=${SIZES:-43000 301000 1000000 3000000}
REPEAT=${REPEAT:-3}
E=$(pwd)/$B/ember
M=$(pwd)/$B/bench/measure
G=$(pwd)/$B/bench/gen_perf
I=${INFERNO_DIR:-}
if [ -n "$I" ] && [ ! -x "$I/inferno-flamegraph" ]; then
    echo "no inferno-flamegraph in INFERNO_DIR=$I: ember only" >&2
    I=
fi
mkdir -p "$D"

# best LABEL CMD...: "seconds MB cpu-seconds" of the fastest of REPEAT runs
best() {
    label=$1
    shift
    for _ in $(seq "$REPEAT"); do
        "$M" "$label" 0 "$@" 2>/dev/null | awk '{print $(NF-10), $(NF-6), $(NF-2)}'
    done | sort -n | head -1
}

# row SIZE WHAT EMBER_RESULT INFERNO_RESULT
row() {
    echo "$3 $4" | awk -v n="$1" -v what="$2" '{
        line = sprintf("%-8s %-14s %7.3f s %7.3f s %7.0f ns %8.1f MB", n, what, $1, $3,
                       $1 * 1e9 / n, $2)
        if (NF == 6)
            line = line sprintf(" | %7.3f s %7.3f s %8.1f MB | %5.2fx %5.2fx %5.2fx",
                                $4, $6, $5, $4 / $1, $6 / $3, $2 / $5)
        print line
    }'
}

echo "ember $($E --version | cut -d' ' -f2), $(nproc) CPUs, $(uname -m); fastest of $REPEAT runs"
echo "ember: wall, CPU, wall per stack, peak RSS | inferno: wall, CPU, peak RSS |" \
    "inferno/ember: wall, CPU, ember/inferno: memory"
printf '%-8s %-14s %9s %9s %10s %11s' stacks run wall CPU "per stack" RSS
[ -n "$I" ] && printf ' | %9s %9s %11s | %5s %5s %5s' wall CPU RSS wall CPU mem
echo
for n in $SIZES; do
    b=$D/deep$n.folded a=$D/deep$n.after.folded
    [ -f "$b" ] || "$G" --deep "$n" > "$b"
    [ -f "$a" ] || "$G" --deep "$n" --after > "$a"
    e=$(best fg "$E" flamegraph "$b")
    i=$([ -n "$I" ] && best fg "$I/inferno-flamegraph" "$b" || true)
    row "$n" flamegraph "$e" "$i"
    e=$(best diff "$E" diff --folded "$b" "$a")
    i=$([ -n "$I" ] && best diff "$I/inferno-diff-folded" "$b" "$a" || true)
    row "$n" "diff --folded" "$e" "$i"
    e=$(best svg "$E" diff "$b" "$a")
    i=$([ -n "$I" ] && best svg sh -c "'$I/inferno-diff-folded' '$b' '$a' | '$I/inferno-flamegraph'" ||
        true)
    row "$n" "diff (SVG)" "$e" "$i"
done
