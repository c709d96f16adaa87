#!/bin/sh
# The tracing library's benchmarks: ns per event (enabled, disabled,
# compiled out) against the floor and an LTTng-UST tracepoint recorded by a
# real session (when lttng-tools and liblttng-ust-dev are installed: as
# root, `apt-get install lttng-tools liblttng-ust-dev`), then the reader's
# speed: events per second for `ember trace dump` to /dev/null.
#
# usage: bench/run_trace.sh [BUILD_DIR]   (default: build-rel, Release)
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-rel}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
cmake --build "$B" -j"$(nproc)" >/dev/null
PIN="taskset -c $(($(nproc) - 1))"
command -v taskset >/dev/null || PIN=

$PIN "$B/bench/trace_bench"
if command -v lttng >/dev/null && command -v lttng-sessiond >/dev/null &&
    nm "$B/bench/trace_bench" | grep -q lttng; then
    out=$(mktemp -d)
    lttng-sessiond --daemonize --no-kernel >/dev/null 2>&1 || true
    sleep 1
    lttng create ember-bench --output="$out" >/dev/null
    lttng enable-channel --userspace --discard --subbuf-size=1M --num-subbuf=8 ch >/dev/null
    lttng enable-event --userspace --channel ch 'ember_bench:*' >/dev/null
    lttng start >/dev/null
    EMBER_BENCH_LTTNG_SESSION=1 $PIN "$B/bench/trace_bench" 2000000 | tail -n 1
    lttng stop >/dev/null
    lttng destroy ember-bench >/dev/null
    rm -rf "$out"
fi

# the reader: a realistic trace (spans, counters, instants from 3 workers)
D=${BENCH_DIR:-/tmp/ember-bench}
mkdir -p "$D"
rm -f "$D/traced.trace"*
EMBER_TRACE="$D/traced.trace" EMBER_TRACE_RING=$((256 << 20)) "$B/traced" 400000 3 >/dev/null
events=$("$B/ember" trace dump "$D/traced.trace" | wc -l)
t0=$(date +%s.%N)
"$B/ember" trace dump "$D/traced.trace" >/dev/null
t1=$(date +%s.%N)
echo "$events $t0 $t1" | awk '{ printf "%-52s %8.1f M events/s (%d events, %.3f s)\n", \
    "ember trace dump to /dev/null", $1 / ($3 - $2) / 1e6, $1, $3 - $2 }'
rm -f "$D/traced.trace"*
