#!/bin/sh
# ember's benchmarks: throughput and peak memory of collapse and flamegraph
# on generated perf script input (20 and 200 MB, skewed and uniform function
# choice), on FlameGraph's real example repeated to 200 MB, and on folded
# input. Prints one line per run; run it on an idle machine.
#
# usage: bench/run.sh [BUILD_DIR]   (default: build-rel, built in Release)
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-rel}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
cmake --build "$B" -j"$(nproc)" >/dev/null
D=${BENCH_DIR:-/tmp/ember-bench}
mkdir -p "$D"
E=$B/ember
M=$B/bench/measure
G=$B/bench/gen_perf
size() { stat -c %s "$1"; }

[ -f "$D/perf20.txt" ] || $G 20 > "$D/perf20.txt"
[ -f "$D/perf200.txt" ] || $G 200 > "$D/perf200.txt"
[ -f "$D/perf200u.txt" ] || $G --uniform 200 > "$D/perf200u.txt"
[ -f "$D/folded200.txt" ] || $G --folded 200 > "$D/folded200.txt"
if [ ! -f "$D/example64.txt" ]; then
    zcat ../shared/corpus/flamegraph/example-perf-stacks.txt.gz > "$D/example1.txt"
    for i in $(seq 64); do cat "$D/example1.txt"; echo; done > "$D/example64.txt"
fi
N=$(nproc)
echo "ember $($E --version | cut -d' ' -f2), $(nproc) CPUs, $(uname -m)"
for f in example64 perf20 perf200 perf200u; do
    $M "collapse $f -j1" "$(size $D/$f.txt)" $E collapse -j1 "$D/$f.txt"
    $M "collapse $f -j$N" "$(size $D/$f.txt)" $E collapse -j"$N" "$D/$f.txt"
done
$M "collapse folded200 (merge and sort)" "$(size $D/folded200.txt)" $E collapse "$D/folded200.txt"
$M "flamegraph folded200" "$(size $D/folded200.txt)" $E flamegraph "$D/folded200.txt"
$M "flamegraph example64 (perf script)" "$(size $D/example64.txt)" $E flamegraph "$D/example64.txt"
# convert: the reading above, then a writer that streams (memory grows with
# distinct stacks, not input size)
for to in pprof speedscope chrome csv; do
    $M "convert folded200 --to $to" "$(size $D/folded200.txt)" $E convert --to $to "$D/folded200.txt"
done
$M "convert perf200 --to pprof -j$N" "$(size $D/perf200.txt)" $E convert --to pprof -j"$N" "$D/perf200.txt"
$M "convert perf200 --to speedscope -j$N" "$(size $D/perf200.txt)" \
    $E convert --to speedscope -j"$N" "$D/perf200.txt"
$M "convert example64 --to pprof -j$N" "$(size $D/example64.txt)" \
    $E convert --to pprof -j"$N" "$D/example64.txt"
# report and the transforms: linear passes over the distinct stacks
$M "report --top perf200 -j$N" "$(size $D/perf200.txt)" $E report -j"$N" "$D/perf200.txt"
$M "report --tree folded200" "$(size $D/folded200.txt)" $E report --tree "$D/folded200.txt"
$M "collapse perf200 -j$N, 3 transforms" "$(size $D/perf200.txt)" \
    $E collapse -j"$N" --demangle --flatten-recursion --collapse-gc "$D/perf200.txt"
# DTrace: FlameGraph's example, its stacks repeated to ~200 MB under one header
if [ ! -f "$D/dtrace200.txt" ]; then
    X=../shared/corpus/flamegraph/example-dtrace-stacks.txt
    { head -n 3 "$X"; for i in $(seq 150); do tail -n +4 "$X"; done; } > "$D/dtrace200.txt"
fi
$M "collapse dtrace200" "$(size $D/dtrace200.txt)" $E collapse "$D/dtrace200.txt"
