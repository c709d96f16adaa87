#!/bin/sh
# The cost of recording every allocation (issue 19), side by side in one
# run: on a malloc-bound C loop (bench/heap_loop.c: LOOP_N malloc + free
# pairs of 16 to 1024 bytes, 64 live) and on CPython with
# PYTHONMALLOC=malloc (every object through malloc) running
# bench/heap_py.py (dicts, lists, strings: about 2 M allocations), each
# alone, under heaptrack, under `ember record --heap` (every allocation)
# and under `ember record --heap --sample-bytes 524288` (jemalloc's and Go's
# mean). For each: the CPU time (user+sys of the whole process tree, the
# recorder's own processes included: bench/measure's wait4), the fastest of
# REPEAT runs; its ratio to the workload alone; the allocations the
# recording counts (sampled: its estimate); and the recording's size per
# million of them (heaptrack's .zst, ember's .heap). The first rows, on
# /bin/true, are each recorder's fixed cost. The ember rows print n/a where
# this ember has no `record --heap`.
#
# usage: bench/run_heap.sh [BUILD_DIR]   (default build-rel, built Release;
#        EMBER=PROGRAM uses that ember and builds nothing)
#        REPEAT=3 LOOP_N=5000000 PY_ROUNDS=30 PYTHON=/usr/bin/python3
# PYTHON must be a dynamically linked python, not a wrapper script (pyenv's
# shims are bash scripts: a preloaded recorder sees bash, not Python).
#
# Measured here (2 CPUs shared with other work, load 5, REPEAT=5, heaptrack
# 1.4.0, Debian's Python 3.11.2), before ember record --heap was merged:
#   fixed cost (/bin/true): heaptrack 0.185 s;
#   C loop, 5,000,001 allocations: alone 0.054 s, heaptrack 2.358 s (43.7x),
#   4.03 MB per million allocations;
#   CPython, 2,058,576 allocations: alone 0.236 s, heaptrack 1.888 s (8.0x),
#   0.10 MB per million allocations.
set -eu
cd "$(dirname "$0")/.."
REPEAT=${REPEAT:-3}
LOOP_N=${LOOP_N:-5000000}
PY_ROUNDS=${PY_ROUNDS:-30}
PYTHON=${PYTHON:-/usr/bin/python3}
if [ -z "${EMBER:-}" ]; then
    B=${1:-build-rel}
    cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
    cmake --build "$B" -j"$(nproc)" >/dev/null
    EMBER=$(pwd)/$B/ember
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/measure" bench/measure.c
cc -O2 -g -fno-omit-frame-pointer -o "$tmp/heap_loop" bench/heap_loop.c

HEAPTRACK=no
command -v heaptrack >/dev/null && HEAPTRACK=yes
EMBER_HEAP=no
"$EMBER" record --help 2>&1 | grep -q -- '--heap' && EMBER_HEAP=yes

# cpu COMMAND...: the fastest user+sys seconds of REPEAT runs; the last
# run's stderr stays in $tmp/err
cpu() {
    best=
    for _ in $(seq "$REPEAT"); do
        line=$("$tmp/measure" run 0 "$@" 2>"$tmp/err") || {
            cat "$tmp/err" >&2
            exit 1
        }
        t=$(echo "$line" | awk '{ print $(NF-2) }')
        best=$(echo "${best:-$t} $t" | awk '{ print ($2 < $1) ? $2 : $1 }')
    done
    echo "$best"
}

# row WORKLOAD RECORDER SECONDS ALLOCATIONS FILE: one line of the table
row() {
    size=n/a
    [ "$4" = - ] && size=-
    if [ -f "$5" ] && [ "$4" != n/a ] && [ "$4" -gt 0 ]; then
        size=$(awk -v b="$(wc -c <"$5")" -v n="$4" 'BEGIN { printf "%.2f", b / 1e6 / (n / 1e6) }')
    fi
    ratio=n/a
    [ "$3" != n/a ] && ratio=$(awk -v c="$3" -v b="$base" \
        'BEGIN { if (b > 0) printf "%.1fx", c / b; else print "n/a" }')
    printf '%-8s %-42s %7s %7s %12s %12s\n' "$1" "$2" "$3" "$ratio" "$4" "$size"
}

# ember_allocations FILE: the allocations an ember heap recording counts
# (0 where it has none: collapse says "no samples")
ember_allocations() {
    "$EMBER" collapse --event alloc_objects "$1" 2>/dev/null |
        awk '{ s += $NF } END { printf "%.0f\n", s }'
}

# workload NAME COMMAND...: the four rows of one workload
workload() {
    name=$1
    shift
    base=$(cpu "$@")
    row "$name" alone "$base" - /nonexistent
    if [ "$HEAPTRACK" = yes ]; then
        # shellcheck disable=SC2016 # expanded by that sh: $0 the output, $@ the command
        t=$(cpu sh -c 'rm -f "$0".*; exec heaptrack -o "$0" "$@"' "$tmp/ht" "$@")
        n=$(awk '/^[ \t]*allocations:/ { print $2 }' "$tmp/err")
        row "$name" heaptrack "$t" "$n" "$(ls "$tmp"/ht.*)"
    else
        row "$name" "heaptrack (not installed)" n/a n/a /nonexistent
    fi
    for opts in "" "--sample-bytes 524288"; do
        label="ember record --heap${opts:+ $opts}"
        if [ "$EMBER_HEAP" = yes ]; then
            # shellcheck disable=SC2086 # opts: words
            t=$(cpu "$EMBER" record --heap $opts -o "$tmp/e.heap" -- "$@")
            row "$name" "$label" "$t" "$(ember_allocations "$tmp/e.heap")" "$tmp/e.heap"
        else
            row "$name" "$label" n/a n/a /nonexistent
        fi
    done
}

echo "$(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg); CPU seconds (user+sys, whole" \
    "process tree), fastest of $REPEAT"
[ "$EMBER_HEAP" = yes ] || echo "$EMBER has no record --heap: its rows are n/a"
printf '%-8s %-42s %7s %7s %12s %12s\n' workload recorder "CPU s" ratio allocations \
    "MB/M allocs"
workload true /bin/true # each recorder's fixed cost
workload loop "$tmp/heap_loop" "$LOOP_N"
PYTHONMALLOC=malloc
export PYTHONMALLOC
workload python "$PYTHON" bench/heap_py.py "$PY_ROUNDS"
