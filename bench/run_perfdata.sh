#!/bin/sh
# perf.data -> SVG flame graph (issue 20): ember reading perf.data directly
# against `perf script | ember flamegraph`, side by side in one run: wall
# time, CPU time (user+sys, the pipeline's processes together) and peak RSS
# from bench/measure, with the sample count and the CPU nanoseconds per
# sample (and per frame, for DWARF) of each figure; ember at -j 1 and -j 2;
# the ratios perf's CPU / ember's CPU at the end.
#
# - fp: `xz -9` and `gzip -9` of a generated text running together under
#   `perf record -F max -g`, the text sized for about FP_SAMPLES samples
#   (from a short pilot recording's rate);
# - DWARF: Debian's /usr/bin/python3 running bench/perfdata_loop.py (JSON
#   and regex work) under `perf record -F 20000 --call-graph dwarf`, about
#   DWARF_SAMPLES samples: ember flamegraph --inline against perf script
#   (which resolves inlines by default), and ember flamegraph (no inlines,
#   its default) against perf script --no-inline.
# Samples and frames are counted from `ember collapse --event samples`:
# the frames of every sample's stack below its process frame, with
# inlined calls for the --inline figures.
#
# usage: bench/run_perfdata.sh
#   BUILD_DIR=build-rel  FP_SAMPLES=4000000  DWARF_SAMPLES=60000 (scaled
#   from short pilot recordings: 3.94 M and 59.9 k samples here; a quick
#   run: FP_SAMPLES=200000 DWARF_SAMPLES=5000, which come out less close)
#   FP_DATA=file DWARF_DATA=file: time existing recordings instead of
#   recording (either, or both); SKIP_FP=1 or SKIP_DWARF=1 leaves one out.
#
# Measured here (2-core VM, quiet; CPU time is the figure to compare;
# Release build of main after issue 20's ninth session: each chunk's
# records framed on the thread that read it, the overlays merged with
# their table slots fetched ahead, perf's symbol tables built on the
# threads that read the files' symbols, /proc/kallsyms read from the
# data's start; the recordings of the eighth session,
# FP_DATA=/work/perfbench/fp.data DWARF_DATA=/work/perfbench/dwarf.data).
# Before the first session (main at 094ffc8): fp 1.319 s CPU (13.0x), DWARF
# --inline 1.181 s (3.4x), DWARF 1.090 s (2.7x); after the third: 0.762 s
# (21.3x), 0.349 s (10.7x), 0.240 s (12.2x); after the fourth: 0.799 s
# (19.3x, fp -j 2 0.697 s wall and 0.780 s CPU), 0.347 s (10.9x), 0.259 s
# (11.2x); after the sixth: 0.853 s (19.8x, fp -j 2 0.705 s wall and
# 1.002 s CPU), 0.361 s (10.8x), 0.267 s (11.3x); after the seventh:
# 0.932 s (17.9x), 0.382 s (10.7x), 0.276 s (11.1x), on a 6.66 M-sample fp
# and a 78,925-sample DWARF recording; after the eighth, on these
# recordings, the VM about half as fast as in the seventh (perf's side
# too: 4.3 us a DWARF frame for perf script --no-inline against 2.3 us):
# 1.529 s (30.4x, fp -j 2 0.989 s wall), 0.520 s (10.0x, -j 2 0.517 s
# wall), 0.313 s (13.6x, -j 2 0.309 s wall). The run before the one below
# gave 41.5x, 10.8x and 15.4x.
# fp: /work/perfbench/fp.data, 4349964 samples, 28440488 frames, 492906720 bytes
#   ember flamegraph -j 1                          1.394 s wall   1.384 s CPU    76.0 MB RSS      318 ns/sample
#   ember flamegraph -j 2                          0.956 s wall   1.572 s CPU    96.8 MB RSS      361 ns/sample
#   perf script | ember flamegraph                30.999 s wall  45.456 s CPU   495.3 MB RSS    10450 ns/sample
# DWARF, inlines resolved: /work/perfbench/dwarf.data, 55703 samples, 985949 frames, 470218796 bytes
#   ember flamegraph --inline -j 1                 0.486 s wall   0.486 s CPU    60.3 MB RSS     8725 ns/sample  492.9 ns/frame
#   ember flamegraph --inline -j 2                 0.383 s wall   0.522 s CPU    62.4 MB RSS     9371 ns/sample  529.4 ns/frame
#   perf script | ember flamegraph                 6.038 s wall   5.257 s CPU   474.4 MB RSS    94376 ns/sample 5331.9 ns/frame
# DWARF, no inlines: 55703 samples, 985711 frames
#   ember flamegraph -j 1                          0.247 s wall   0.246 s CPU    30.8 MB RSS     4416 ns/sample  249.6 ns/frame
#   ember flamegraph -j 2                          0.201 s wall   0.325 s CPU    35.0 MB RSS     5835 ns/sample  329.7 ns/frame
#   perf script --no-inline | ember flamegraph     3.426 s wall   4.091 s CPU   474.1 MB RSS    73443 ns/sample 4150.3 ns/frame
# perf's CPU / ember's CPU:
#   fp (perf script | ember flamegraph), ember -j 1              32.8x
#   fp, ember -j 2                                               28.9x
#   DWARF inlines (perf script), ember --inline -j 1             10.8x
#   DWARF inlines, ember --inline -j 2                           10.1x
#   DWARF no inlines (perf script --no-inline), ember -j 1       16.6x
#   DWARF no inlines, ember -j 2                                 12.6x
set -eu
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build-rel}
FP_SAMPLES=${FP_SAMPLES:-4000000}
DWARF_SAMPLES=${DWARF_SAMPLES:-60000}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
cmake --build "$B" -j"$(nproc)" >/dev/null
EMBER=$(pwd)/$B/ember
MEASURE=$(pwd)/$B/bench/measure
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM # through the EXIT trap
HOME=$tmp # perf's build-id cache: the benchmark's own
export HOME

# count DATA [OPTIONS]: "SAMPLES FRAMES" of the recording as ember reads it
# (split into $1 and $2 by the callers' unquoted set --)
count() {
    data=$1
    shift
    "$EMBER" collapse --event samples "$@" "$data" 2>/dev/null |
        awk '{ n = $NF; s += n; f += n * (split($0, a, ";") - 1) }
             END { printf "%d %d\n", s, f }'
}

# perf_samples DATA: the samples perf script sees (for the pilot runs)
perf_samples() {
    perf script -i "$1" -F tid 2>/dev/null | grep -c . || true
}

# The fp workload: xz and gzip of $tmp/text at once.
fp_workload() {
    cat >"$tmp/fp.sh" <<EOF
#!/bin/sh
xz -9 -c "$tmp/text" >/dev/null &
gzip -9 -c "$tmp/text" "$tmp/text" "$tmp/text" >/dev/null
wait
EOF
    chmod +x "$tmp/fp.sh"
}

# gen_text MB: a text of about MB megabytes of words and numbers, not too
# repetitive (xz -9 works hard on it) and the same on every run
gen_text() {
    awk -v mb="$1" 'BEGIN {
        split("the of profile stack frame sample thread record event kernel " \
              "return address module symbol inline flame graph reader writer " \
              "buffer chunk window offset perf data dwarf unwind register " \
              "cache table merge order serial parallel core", w, " ")
        srand(20); n = 0
        while (n < mb * 1000000) {
            line = ""
            for (k = 0; k < 12; k++)
                line = line w[int(rand() * 37) + 1] (rand() < 0.2 ? int(rand() * 100000) : "") " "
            print line; n += length(line) + 1
        }
    }' >"$tmp/text"
}

# scale X1 S1 X2 S2 TARGET MIN: the size for TARGET samples, on the line
# through two pilot runs (size X1 gave S1 samples, X2 gave S2): a start-up
# cost is left out of the slope, as one pilot's ratio would not
scale() {
    awk -v x1="$1" -v s1="$2" -v x2="$3" -v s2="$4" -v t="$5" -v min="$6" 'BEGIN {
        per = s2 > s1 ? (x2 - x1) / (s2 - s1) : x2 / (s2 > 0 ? s2 : 1)
        x = x2 + (t - s2) * per
        printf "%.1f\n", x < min ? min : x
    }'
}

record_fp() {
    fp_workload
    # one pilot, proportional: a second, larger one costs minutes here
    # (xz slows down many times under -F max -g on this VM)
    gen_text 2
    perf record -q -F max -g -o "$tmp/pilot.data" -- "$tmp/fp.sh" >/dev/null 2>&1
    gen_text "$(scale 0 0 2 "$(perf_samples "$tmp/pilot.data")" "$FP_SAMPLES" 0.1)"
    perf record -q -F max -g -o "$tmp/fp.data" -- "$tmp/fp.sh" >/dev/null 2>&1
    rm -f "$tmp/pilot.data" "$tmp/text"
    FP_DATA=$tmp/fp.data
}

record_dwarf() {
    py=$(pwd)/bench/perfdata_loop.py
    for n in 1000 4000; do
        perf record -q -F 20000 --call-graph dwarf -o "$tmp/pilot.data" -- /usr/bin/python3 "$py" \
            $n >/dev/null 2>&1
        echo "$n $(perf_samples "$tmp/pilot.data")"
    done >"$tmp/pilots"
    # shellcheck disable=SC2046
    n=$(scale $(cat "$tmp/pilots") "$DWARF_SAMPLES" 10 | cut -d. -f1)
    perf record -q -F 20000 --call-graph dwarf -o "$tmp/dwarf.data" -- /usr/bin/python3 "$py" "$n" \
        >/dev/null 2>&1
    rm -f "$tmp/pilot.data"
    DWARF_DATA=$tmp/dwarf.data
}

# fig KEY LABEL SAMPLES FRAMES COMMAND...: one line of the table; the
# CPU time goes to $tmp/cpu.KEY for the ratios
fig() {
    key=$1 label=$2 samples=$3 frames=$4
    shift 4
    if ! line=$("$MEASURE" "$label" "$size" "$@" 2>"$tmp/stderr"); then
        cat "$tmp/stderr" >&2
        exit 1
    fi
    echo "$line" | awk -v s="$samples" -v f="$frames" -v out="$tmp/cpu.$key" '{
        wall = $(NF - 10); rss = $(NF - 6); cpu = $(NF - 2)
        printf "  %-44s %7.3f s wall %7.3f s CPU %7.1f MB RSS %8.0f ns/sample", \
            substr($0, 1, 44), wall, cpu, rss, cpu * 1e9 / s
        if (f > 0) printf " %6.1f ns/frame", cpu * 1e9 / f
        printf "\n"; print cpu > out
    }'
}

ratio() { # TEXT PERF_LABEL EMBER_LABEL
    awk -v t="$1" -v p="$(cat "$tmp/cpu.$2")" -v e="$(cat "$tmp/cpu.$3")" \
        'BEGIN { printf "  %-58s %6.1fx\n", t, (e > 0 ? p / e : 0) }'
}

bench_fp() {
    size=$(wc -c <"$FP_DATA")
    # shellcheck disable=SC2046
    set -- $(count "$FP_DATA")
    echo "fp: $FP_DATA, $1 samples, $2 frames, $size bytes"
    fig fp-ember-j1 "ember flamegraph -j 1" "$1" 0 "$EMBER" flamegraph -j 1 "$FP_DATA"
    fig fp-ember-j2 "ember flamegraph -j 2" "$1" 0 "$EMBER" flamegraph -j 2 "$FP_DATA"
    fig fp-perf "perf script | ember flamegraph" "$1" 0 sh -c "perf script -i '$FP_DATA' 2>/dev/null | '$EMBER' flamegraph"
}

bench_dwarf() {
    size=$(wc -c <"$DWARF_DATA")
    # shellcheck disable=SC2046
    set -- $(count "$DWARF_DATA" --inline)
    echo "DWARF, inlines resolved: $DWARF_DATA, $1 samples, $2 frames, $size bytes"
    fig dw-inl-ember-j1 "ember flamegraph --inline -j 1" "$1" "$2" "$EMBER" flamegraph --inline -j 1 "$DWARF_DATA"
    fig dw-inl-ember-j2 "ember flamegraph --inline -j 2" "$1" "$2" "$EMBER" flamegraph --inline -j 2 "$DWARF_DATA"
    fig dw-inl-perf "perf script | ember flamegraph" "$1" "$2" sh -c "perf script -i '$DWARF_DATA' 2>/dev/null | '$EMBER' flamegraph"
    # shellcheck disable=SC2046
    set -- $(count "$DWARF_DATA")
    echo "DWARF, no inlines: $1 samples, $2 frames"
    fig dw-ember-j1 "ember flamegraph -j 1" "$1" "$2" "$EMBER" flamegraph -j 1 "$DWARF_DATA"
    fig dw-ember-j2 "ember flamegraph -j 2" "$1" "$2" "$EMBER" flamegraph -j 2 "$DWARF_DATA"
    fig dw-perf "perf script --no-inline | ember flamegraph" "$1" "$2" sh -c \
        "perf script --no-inline -i '$DWARF_DATA' 2>/dev/null | '$EMBER' flamegraph"
}

if [ -z "${SKIP_FP:-}" ]; then
    [ -n "${FP_DATA:-}" ] || record_fp
    bench_fp
fi
if [ -z "${SKIP_DWARF:-}" ]; then
    [ -n "${DWARF_DATA:-}" ] || record_dwarf
    bench_dwarf
fi
echo "perf's CPU / ember's CPU:"
if [ -z "${SKIP_FP:-}" ]; then
    ratio "fp (perf script | ember flamegraph), ember -j 1" fp-perf fp-ember-j1
    ratio "fp, ember -j 2" fp-perf fp-ember-j2
fi
if [ -z "${SKIP_DWARF:-}" ]; then
    ratio "DWARF inlines (perf script), ember --inline -j 1" dw-inl-perf dw-inl-ember-j1
    ratio "DWARF inlines, ember --inline -j 2" dw-inl-perf dw-inl-ember-j2
    ratio "DWARF no inlines (perf script --no-inline), ember -j 1" dw-perf dw-ember-j1
    ratio "DWARF no inlines, ember -j 2" dw-perf dw-ember-j2
fi
