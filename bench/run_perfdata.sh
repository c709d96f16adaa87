#!/bin/sh
# perf.data -> SVG: ember reading perf.data directly against `perf script |
# ember flamegraph`, time and peak RSS side by side (bench/measure: the
# pipeline's figure is its largest process), on a frame-pointer recording
# of about FP_SAMPLES samples and a --call-graph dwarf one of about
# DWARF_SAMPLES (perf script with its default inline resolution there, as
# a user would run it). The program recorded is the perf.data test's
# (threads and a fork spinning in named functions), built with frame
# pointers, recorded at 10 kHz per CPU.
#
# usage: bench/run_perfdata.sh [BUILD_DIR] [FP_SAMPLES] [DWARF_SAMPLES]
#        (defaults: build-rel, 1000000, 20000)
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-rel}
FP=${2:-1000000}
DW=${3:-20000}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
cmake --build "$B" -j"$(nproc)" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
HOME=$tmp # perf's build-id cache: the benchmark's own
export HOME
cc -O2 -g -fno-omit-frame-pointer -pthread -o "$tmp/prog" tests/golden/data/perfdata_prog.c
# the program runs ~0.15 s of CPU per unit of scale on 4 threads: scale it
# to the samples asked for at 10 kHz (period 100 us of cpu-clock)
scale() { echo $(($1 / 1500 + 1)); }
record() { # NAME SAMPLES perf-record-options...
    name=$1 n=$2
    shift 2
    perf record -q -e cpu-clock -c 100000 -o "$tmp/$name.data" "$@" -- "$tmp/prog" "$(scale "$n")" \
        >/dev/null 2>&1
    samples=$(perf script -i "$tmp/$name.data" -F tid 2>/dev/null | grep -c . || true)
    echo "$name: $samples samples, $(wc -c <"$tmp/$name.data") bytes"
}
bench() { # NAME
    data=$tmp/$1.data
    size=$(wc -c <"$data")
    "$B/bench/measure" "ember flamegraph $1.data" "$size" "$B/ember" flamegraph "$data"
    "$B/bench/measure" "perf script | ember flamegraph" "$size" \
        sh -c "perf script -i '$data' 2>/dev/null | '$B/ember' flamegraph"
}
record fp "$FP" -g
bench fp
record dwarf "$DW" --call-graph dwarf
bench dwarf
