#!/bin/sh
# Reading OCaml 5 runtime_events files: events per second, ns per event and
# peak RSS of `ember trace dump` (to /dev/null, ember's format and OCaml's),
# `ember trace latency` and `ember trace gc-stats` on a large generated file
# (bench/gen_ocaml_events: 4 domains, every event kind, rings that wrapped),
# side by side with OCaml's own consumer library when an OCaml 5 source tree
# is given (OCAML_SRC; bench/ocaml_consumer.c drives its C API).
#
# Each run is the best of RUNS (default 3) by CPU time (user + sys): on a
# shared machine wall time measures the neighbours too. Rates are per CPU
# second; wall seconds are shown beside them.
#
# usage: bench/run_ocaml.sh [BUILD_DIR]   (default: build-rel, Release)
#   OCAML_SRC=DIR  an OCaml 5 source tree (e.g. `git clone -b 5.2.0
#                  https://github.com/ocaml/ocaml; ./configure`): its runtime
#                  is built here if needed (make runtime/libcamlrun.a)
#   BENCH_DIR=DIR  where the file goes (default /tmp/ember-bench, ~520 MB)
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-rel}
RUNS=${RUNS:-3}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
cmake --build "$B" -j"$(nproc)" --target ember gen_ocaml_events >/dev/null
command -v /usr/bin/time >/dev/null || {
    echo "run_ocaml.sh: needs GNU time (apt-get install time)" >&2
    exit 1
}
PIN="taskset -c $(($(nproc) - 1))"
command -v taskset >/dev/null || PIN=
D=${BENCH_DIR:-/tmp/ember-bench}
mkdir -p "$D"
F=$D/4242.events # <pid>.events: the name OCaml's consumer opens
"$B/bench/gen_ocaml_events" "$F" >/dev/null
E=$B/ember
events=$("$E" trace dump "$F" 2>/dev/null | wc -l)
lost=$("$E" trace dump --format ocaml "$F" 2>/dev/null | awk -F'\t' '$3 == "LOST_WORDS" { n += $6 } END { print n + 0 }')
echo "ember $("$E" --version | cut -d' ' -f2), $(nproc) CPUs, $(uname -m), load $(cut -d' ' -f1 /proc/loadavg)"
echo "$F: $(($(stat -c %s "$F") >> 20)) MiB, 4 domains, $events events read ($lost words lost: the rings wrapped)"
printf '%-44s %8s %8s %12s %9s %9s\n' run "wall s" "CPU s" "M events/s" ns/event "peak RSS"

# run LABEL COMMAND...: the best of RUNS by CPU time
run() {
    label=$1
    shift
    best=
    i=0
    while [ "$i" -lt "$RUNS" ]; do
        # shellcheck disable=SC2086 # PIN is a command and its arguments, or nothing
        /usr/bin/time -f '%e %U %S %M' -o "$D/time.txt" $PIN "$@" >/dev/null 2>"$D/stderr.txt" || {
            echo "$label: failed:" >&2
            cat "$D/stderr.txt" >&2
            return 1
        }
        line=$(tail -n 1 "$D/time.txt")
        best=$(printf '%s\n%s\n' "$best" "$line" | awk 'NF == 4 { cpu = $2 + $3;
            if (!seen || cpu < b) { b = cpu; l = $0; seen = 1 } } END { print l }')
        i=$((i + 1))
    done
    echo "$best" | awk -v label="$label" -v n="$events" '{ cpu = $2 + $3; if (cpu <= 0) cpu = 0.001;
        printf "%-44s %8.2f %8.2f %12.1f %9.1f %6.1f MB\n", label, $1, cpu, n / cpu / 1e6,
            cpu * 1e9 / n, $4 / 1024 }'
}

run "ember trace dump" "$E" trace dump "$F"
run "ember trace dump --format ocaml" "$E" trace dump --format ocaml "$F"
run "ember trace latency (GC pauses)" "$E" trace latency "$F"
run "ember trace gc-stats" "$E" trace gc-stats "$F"

if [ -z "${OCAML_SRC:-}" ]; then
    echo "OCaml's consumer: not built (set OCAML_SRC to an OCaml 5 source tree; Debian 12"
    echo "packages OCaml 4.13, which has no runtime_events; olly needs OCaml 5 and opam)"
    exit 0
fi
if [ ! -f "$OCAML_SRC/runtime/libcamlrun.a" ] || [ ! -f "$OCAML_SRC/runtime/prims.o" ]; then
    make -C "$OCAML_SRC" -j"$(nproc)" runtime/libcamlrun.a runtime/prims.o >/dev/null
fi
C=$D/ocaml_consumer
cc -O2 -fno-strict-aliasing -fwrapv -pthread -D_FILE_OFFSET_BITS=64 \
    -I"$OCAML_SRC/runtime" -I"$OCAML_SRC/otherlibs/runtime_events" \
    -c "$OCAML_SRC/otherlibs/runtime_events/runtime_events_consumer.c" -o "$C.o"
cc -O2 -pthread -D_FILE_OFFSET_BITS=64 -I"$OCAML_SRC/runtime" \
    -I"$OCAML_SRC/otherlibs/runtime_events" bench/ocaml_consumer.c "$C.o" \
    "$OCAML_SRC/runtime/prims.o" "$OCAML_SRC/runtime/libcamlrun.a" -lm -o "$C"
got=$("$C" count "$D" 4242 2>&1 >/dev/null | cut -d' ' -f1)
[ "$got" = "$events" ] || echo "OCaml's consumer read $got events, ember $events" >&2
echo "OCaml $(head -n 1 "$OCAML_SRC/VERSION")'s consumer (C API, ring by ring, mapping the file):"
run "  read_poll, callbacks that count" "$C" count "$D" 4242
run "  read_poll, callbacks that printf each" "$C" print "$D" 4242
