#!/bin/sh
# Recording overhead (issue 10): the workload's CPU time (user+sys of the
# recorded program alone, from /usr/bin/time run under the recorder) with
# no recorder, under `perf record` and under `ember record` at the same
# rate and call-graph mode (fp: -F 4000 -g; DWARF: --call-graph dwarf,
# 8192 bytes of stack both), side by side; and the time from the
# workload's end to the recorder's exit, its output written (ember: a
# perf.data file, and an SVG, which it makes by reading the recording
# back). The workload is tests/record/known.c (-O2
# -fno-omit-frame-pointer), its iterations scaled to BENCH_SECONDS of CPU.
# Each figure is the median of RUNS runs.
#
# usage: bench/run_record.sh [BUILD_DIR]     (default: build-rel)
#        BENCH_SECONDS=30 (5 for a quick run) RUNS=3
#
# Measured here (2 CPUs shared with other work, cpu-clock, 30 s, RUNS=3):
# CPU time none 30.90 s; fp perf 33.15, ember 33.43 (-o .data) and 33.04
# (-o .svg): equal within the noise of these runs (+-0.4 s); DWARF perf
# 34.09, ember 32.82. End to exit: fp perf 0.84 s, ember 0.10 s (.data) and
# 0.17 s (.svg, 132k samples read back); DWARF perf 0.46 s, ember 0.10 s.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-rel}
SECONDS_=${BENCH_SECONDS:-30}
RUNS=${RUNS:-3}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
cmake --build "$B" -j"$(nproc)" >/dev/null
EMBER=$(pwd)/$B/ember
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
HOME=$tmp # perf's build-id cache: the benchmark's own
export HOME
cc -O2 -g -fno-omit-frame-pointer -o "$tmp/known" tests/record/known.c

# The workload under /usr/bin/time, which writes the CPU time of known
# alone (not the recorder's) to $tmp/cpu; then the moment it ended, in
# nanoseconds, to $tmp/end. known exits 7 by design: time's last line is
# the figures.
cat >"$tmp/workload" <<EOF
#!/bin/sh
/usr/bin/time -f '%U %S' -o "$tmp/cpu" "$tmp/known" "\$1" || true
date +%s%N >"$tmp/end"
EOF
chmod +x "$tmp/workload"

cpu() { tail -n 1 "$tmp/cpu" | awk '{ printf "%.3f\n", $1 + $2 }'; }

# iterations for about BENCH_SECONDS of CPU, from a run of 300
"$tmp/workload" 300
ITER=$(awk -v c="$(cpu)" -v s="$SECONDS_" 'BEGIN { printf "%d", 300 * s / (c > 0 ? c : 0.01) }')

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# run LABEL COMMAND...: RUNS times the workload under COMMAND; prints the
# median CPU time, its overhead over the run without a recorder (the first),
# the median time from the workload's end to COMMAND's exit and the samples
# of the last run
run() {
    label=$1
    shift
    : >"$tmp/cpus"
    : >"$tmp/exits"
    i=0
    while [ "$i" -lt "$RUNS" ]; do
        rm -f "$tmp/out.data" "$tmp/out.svg" "$tmp/end"
        "$@" "$tmp/workload" "$ITER" >/dev/null 2>"$tmp/err" || {
            cat "$tmp/err" >&2
            exit 1
        }
        now=$(date +%s%N)
        cpu >>"$tmp/cpus"
        echo "$now $(cat "$tmp/end")" | awk '{ printf "%.3f\n", ($1 - $2) / 1e9 }' >>"$tmp/exits"
        i=$((i + 1))
    done
    samples=$(grep -o '[0-9]* samples' "$tmp/err" | tail -n 1 || true)
    c=$(median <"$tmp/cpus")
    if [ "$label" = none ]; then
        base=$c
        printf '%-40s %8s s %8s %12s   %s\n' "$label" "$c" - - -
        return
    fi
    over=$(awk -v c="$c" -v b="$base" 'BEGIN { printf "%+.1f%%", 100 * (c - b) / b }')
    printf '%-40s %8s s %8s %10s s   %s\n' "$label" "$c" "$over" "$(median <"$tmp/exits")" \
        "$samples"
}

echo "workload: known $ITER (about $SECONDS_ s of CPU), median of $RUNS runs, $(nproc) CPUs"
printf '%-40s %10s %8s %12s   %s\n' recorder "CPU time" overhead "end to exit" samples
run none env
run "perf record -F 4000 -g" perf record -F 4000 -g -o "$tmp/out.data" --
run "ember record -F 4000 -o x.data" "$EMBER" record -F 4000 -o "$tmp/out.data" --
run "ember record -F 4000 -o x.svg" "$EMBER" record -F 4000 -o "$tmp/out.svg" --
run "perf record -F 4000 --call-graph dwarf" perf record -F 4000 --call-graph dwarf \
    -o "$tmp/out.data" --
run "ember record -F 4000 --call-graph dwarf" "$EMBER" record -F 4000 --call-graph dwarf \
    -o "$tmp/out.data" --
