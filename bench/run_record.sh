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
# Each run tries every recorder in turn (interleaved: the machine's other
# load falls on all alike); each figure is the median of RUNS runs, with
# the spread of the CPU times. Wake-ups: the recorder's voluntary context
# switches (the outer rusage less the workload's; "none" is the wrappers').
#
# usage: bench/run_record.sh [BUILD_DIR]     (default: build-rel)
#        BENCH_SECONDS=30 (5 for a quick run) RUNS=3
#
# Measured here (issue 20; 2 CPUs shared with 3 other workers, load average
# 2 to 5, cpu-clock: no cycles counter; BENCH_SECONDS=10, RUNS=5; known
# 100000 ran 16.4 s):
#   recorder                 CPU time (spread)            wake-ups  end to exit
#   none                     16.40 s (16.27-16.43)              9  0.002 s
#   fp perf                  17.43 s (17.32-17.45) +6.3%       68  0.57 s
#   fp ember -o x.data       17.39 s (17.31-17.51) +6.0%       80  0.002 s
#   fp ember -o x.svg        17.44 s (17.35-17.52) +6.3%       83  0.12 s
#   DWARF perf               17.59 s (17.51-17.65) +7.3%     2319  0.74 s
#   DWARF ember              17.56 s (17.48-17.64) +7.1%      583  0.003 s
# The program pays for the kernel's sampling (a timer interrupt and the
# copy into the ring, 8 KiB of stack in DWARF mode), the same under both
# at the same attributes: ember's overhead is perf's within the spread.
# The recorder's own cost is lower than perf's (3 s of DWARF at 4 kHz: its
# CPU 0.05 s against perf's 0.28 s, 114 wake-ups against 430): it writes
# the rings out from the kernel's pages (before, it copied every byte
# first), the command's end wakes it (it woke every 100 ms before), its
# 4 MiB DWARF rings wake it a quarter as often as perf's 512 KiB, and its
# fp rings at perf's watermark. The +10.7% for DWARF measured before these
# changes came from runs that were not interleaved (each recorder's runs
# in a row on the shared machine): interleaved, that ember measured +7.5%
# against perf's +7.3% (RUNS=5 of 5 s).
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
/usr/bin/time -f '%U %S %w' -o "$tmp/cpu" "$tmp/known" "\$1" || true
date +%s%N >"$tmp/end"
EOF
chmod +x "$tmp/workload"

cpu() { tail -n 1 "$tmp/cpu" | awk '{ printf "%.3f\n", $1 + $2 }'; }

# iterations for about BENCH_SECONDS of CPU, from a run of 300
"$tmp/workload" 300
ITER=$(awk -v c="$(cpu)" -v s="$SECONDS_" 'BEGIN { printf "%d", 300 * s / (c > 0 ? c : 0.01) }')

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# once N LABEL COMMAND...: the workload under COMMAND, once (run N of
# RUNS); its CPU time to $tmp/cpus.N, the time from its end to COMMAND's
# exit to $tmp/exits.N, the recorder's wake-ups (its voluntary context
# switches: the outer rusage, children's included, less the workload's)
# to $tmp/wakes.N and the samples to $tmp/samples.N
once() {
    n=$1
    label=$2
    shift 2
    rm -f "$tmp/out.data" "$tmp/out.svg" "$tmp/end"
    /usr/bin/time -f '%w' -o "$tmp/outer" "$@" "$tmp/workload" "$ITER" >/dev/null 2>"$tmp/err" || {
        cat "$tmp/err" >&2
        exit 1
    }
    now=$(date +%s%N)
    cpu >>"$tmp/cpus.$n"
    echo "$now $(cat "$tmp/end")" | awk '{ printf "%.3f\n", ($1 - $2) / 1e9 }' >>"$tmp/exits.$n"
    echo "$(tail -n 1 "$tmp/outer") $(tail -n 1 "$tmp/cpu")" | awk '{ print $1 - $4 }' \
        >>"$tmp/wakes.$n"
    grep -o '[0-9]* samples' "$tmp/err" | tail -n 1 >"$tmp/samples.$n" || true
    echo "$label" >"$tmp/label.$n"
}

# The recorders, numbered: 0 is none, the baseline.
recorder() {
    case $1 in
    0) once 0 none env ;;
    1) once 1 "perf record -F 4000 -g" perf record -F 4000 -g -o "$tmp/out.data" -- ;;
    2) once 2 "ember record -F 4000 -o x.data" "$EMBER" record -F 4000 -o "$tmp/out.data" -- ;;
    3) once 3 "ember record -F 4000 -o x.svg" "$EMBER" record -F 4000 -o "$tmp/out.svg" -- ;;
    4) once 4 "perf record -F 4000 --call-graph dwarf" perf record -F 4000 --call-graph dwarf \
        -o "$tmp/out.data" -- ;;
    5) once 5 "ember record -F 4000 --call-graph dwarf" "$EMBER" record -F 4000 \
        --call-graph dwarf -o "$tmp/out.data" -- ;;
    esac
}
NREC=6

# A column's median, and its spread (lowest-highest).
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
spread() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "-" hi }'; }

echo "workload: known $ITER (about $SECONDS_ s of CPU), median of $RUNS runs, $(nproc) CPUs"
# Interleaved: each run tries every recorder in turn, so that a change in
# the machine's other load falls on all of them alike.
i=0
while [ "$i" -lt "$RUNS" ]; do
    n=0
    while [ "$n" -lt "$NREC" ]; do
        recorder "$n"
        n=$((n + 1))
    done
    i=$((i + 1))
done
printf '%-40s %8s %13s %8s %11s %7s   %s\n' recorder "CPU time" spread overhead "end to exit" \
    wakeups samples
base=$(median <"$tmp/cpus.0")
n=0
while [ "$n" -lt "$NREC" ]; do
    c=$(median <"$tmp/cpus.$n")
    over=$(awk -v c="$c" -v b="$base" 'BEGIN { printf "%+.1f%%", 100 * (c - b) / b }')
    [ "$n" -eq 0 ] && over=-
    printf '%-40s %8s s %11s %8s %9s s %7s   %s\n' "$(cat "$tmp/label.$n")" "$c" \
        "$(spread <"$tmp/cpus.$n")" "$over" "$(median <"$tmp/exits.$n")" \
        "$(median <"$tmp/wakes.$n")" "$(cat "$tmp/samples.$n")"
    n=$((n + 1))
done
