#!/bin/sh
# Reading memtrace .ctf traces: events per second, ns per event and peak RSS
# of `ember collapse` (the whole profile: every value, the live table, the
# heap counter) on the corpus's long.ctf and on a generated v2 trace of
# EVENTS events (bench/gen_memtrace.c, default 10 M), side by side with
# memtrace's own reader (Trace.Reader.iter with backtraces, counting
# events, samples and words: bench/memtrace_iter.ml) when OCaml
# (ocamlfind) and a memtrace checkout (MEMTRACE_SRC) are there.
#
# Each run is the best of RUNS (default 3) by CPU time (user + sys); rates
# are per CPU second, wall seconds beside them.
#
# usage: bench/run_memtrace.sh [BUILD_DIR]   (default: build-rel, Release)
#   EVENTS=N          events of the generated trace (default 10000000)
#   MEMTRACE_SRC=DIR  a memtrace git checkout (HEAD's reader builds on 4.13)
#   BENCH_DIR=DIR     where the files go (default /tmp/ember-bench, ~120 MB)
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-rel}
RUNS=${RUNS:-3}
EVENTS=${EVENTS:-10000000}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
cmake --build "$B" -j"$(nproc)" --target ember >/dev/null
D=${BENCH_DIR:-/tmp/ember-bench}
mkdir -p "$D"
E=$B/ember
LONG=${EMBER_CORPUS:-../shared/corpus}/memtrace/long.ctf
GEN=$D/gen_memtrace
cc -O2 -o "$GEN" bench/gen_memtrace.c
cc -O2 -o "$D/measure" bench/measure.c
G=$D/gen$EVENTS.ctf
[ -f "$G" ] || "$GEN" "$G" "$EVENTS" 2 >"$G.truth"
echo "ember $("$E" --version | cut -d' ' -f2), $(nproc) CPUs, $(uname -m), load $(cut -d' ' -f1 /proc/loadavg)"
printf '%-52s %8s %8s %12s %9s %9s\n' run "wall s" "CPU s" "M events/s" ns/event "peak RSS"

# run LABEL EVENTS COMMAND...: the best of RUNS by CPU time
run() {
    label=$1
    n=$2
    shift 2
    best=
    i=0
    while [ "$i" -lt "$RUNS" ]; do
        # measure: LABEL WALL s MB/s MB/s RSS MB peak RSS CPU s CPU (wait4: the
        # whole process tree, microseconds)
        line=$("$D/measure" run 0 "$@" 2>"$D/stderr.txt") || {
            echo "$label: failed:" >&2
            cat "$D/stderr.txt" >&2
            return 1
        }
        best=$(printf '%s\n%s\n' "$best" "$line" | awk 'NF >= 10 { cpu = $(NF-2);
            if (!seen || cpu < b) { b = cpu; l = $0; seen = 1 } } END { print l }')
        i=$((i + 1))
    done
    echo "$best" | awk -v label="$label" -v n="$n" '{ cpu = $(NF-2); if (cpu <= 0) cpu = 0.001;
        printf "%-52s %8.3f %8.3f %12.2f %9.1f %6.1f MB\n", label, $2, cpu, n / cpu / 1e6,
            cpu * 1e9 / n, $(NF-6) }'
}

# events = alloc + promote + collect, as memtrace counts them
long_events=$(awk -F': ' '$1 == "events" { print $2 }' "${LONG%.ctf}.expected.txt")
echo "$LONG: $(($(stat -c %s "$LONG") >> 10)) KiB, $long_events events"
echo "$G: $(($(stat -c %s "$G") >> 20)) MiB, $EVENTS events"
run "ember collapse long.ctf" "$long_events" "$E" collapse "$LONG"
run "ember collapse --event live_bytes long.ctf" "$long_events" "$E" collapse --event live_bytes "$LONG"
run "ember collapse gen (v2)" "$EVENTS" "$E" collapse "$G"
run "ember flamegraph gen (v2)" "$EVENTS" "$E" flamegraph "$G" -o "$D/gen.svg"

if [ -z "${MEMTRACE_SRC:-}" ] || ! command -v ocamlfind >/dev/null; then
    echo "memtrace's own reader: not built (needs ocamlfind, apt-get install ocaml-nox"
    echo "ocaml-findlib, and MEMTRACE_SRC, a memtrace git checkout)"
    exit 0
fi
O=$D/memtrace_iter
mkdir -p "$O.src"
for m in stdlib_shim buf location_codec backtrace_codec trace; do
    for x in mli ml; do
        git -C "$MEMTRACE_SRC" show "HEAD:src/$m.$x" >"$O.src/$m.$x" 2>/dev/null || rm -f "$O.src/$m.$x"
    done
done
cp bench/memtrace_iter.ml "$O.src/"
(
    cd "$O.src"
    files=
    for m in stdlib_shim buf location_codec backtrace_codec trace; do
        [ -f "$m.mli" ] && files="$files $m.mli"
        files="$files $m.ml"
    done
    # shellcheck disable=SC2086 # the list of files
    ocamlfind ocamlopt -package unix,threads.posix -thread -linkpkg $files memtrace_iter.ml -o "$O"
)
got=$("$O" "$G" | cut -d' ' -f1)
[ "$got" = "$EVENTS" ] || echo "memtrace's reader read $got events of $EVENTS" >&2
echo "memtrace's own reader (HEAD, OCaml $(ocamlfind ocamlopt -version)), Trace.Reader.iter:"
run "  memtrace iter long.ctf" "$long_events" "$O" "$LONG"
run "  memtrace iter gen (v2)" "$EVENTS" "$O" "$G"
