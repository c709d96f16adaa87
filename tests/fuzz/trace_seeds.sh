#!/bin/sh
# Seeds for fuzz_trace: small real traces of the example program, a ring
# file (flight recorder, 4 threads of 2 packets each) and a packet log
# written by `ember trace record`, compacted (no unused site table or rings);
# and each of them cut short (0.2% short, in its last packet, in half), as
# files copied while written or on a full disk are: the reader reads them
# up to the cut. With OCAML_DIR (the corpus's ocaml5/runtime-events), its
# OCaml runtime_events files too, compacted (the rings used and the names
# set: fuzz_trace zero-extends them to their layout, where they dump as the
# originals, checked here) and cut in half, at 99% and one byte short.
#
# usage: trace_seeds.sh EMBER TRACED TRACE_COMPACT DIR [OCAML_DIR]
set -eu
ember=$1 traced=$2 compact=$3 dir=$4 ocaml=${5:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$dir"
EMBER_TRACE="$tmp/ring.trace" EMBER_TRACE_RING=8192 EMBER_TRACE_PACKET=4096 \
    EMBER_TRACE_THREADS=4 "$traced" 200 2 >/dev/null
EMBER_TRACE_PACKET=4096 EMBER_TRACE_THREADS=4 \
    "$ember" trace record -o "$tmp/log.trace" --ring 8192 -- "$traced" 50 2 >/dev/null 2>&1
for f in ring log; do
    "$compact" "$tmp/$f.trace" "$dir/$f.trace"
    # the compact file reads as the original does
    "$ember" trace dump "$tmp/$f.trace" >"$tmp/$f.want" 2>/dev/null
    "$ember" trace dump "$dir/$f.trace" >"$tmp/$f.got" 2>/dev/null
    cmp "$tmp/$f.want" "$tmp/$f.got"
    size=$(wc -c <"$dir/$f.trace")
    for cut in $((size - size / 500)) $((size - 1000)) $((size / 2)); do
        head -c "$cut" "$dir/$f.trace" >"$dir/$f-cut-$cut.trace"
    done
    # a file cut short in its packets reads (with a warning), exit 0
    "$ember" trace dump "$dir/$f-cut-$((size - 1000)).trace" >/dev/null 2>&1
done
[ -n "$ocaml" ] && [ -d "$ocaml" ] || exit 0
for f in "$ocaml"/*.events; do
    name=ocaml-$(basename "$f")
    "$compact" "$f" "$dir/$name"
    # zero-extended to its layout (the names at word 7, 8192 x 128 bytes):
    # the original's events
    names=$(od -An -t u8 -j 56 -N 8 "$dir/$name" | tr -d ' ')
    cp "$dir/$name" "$tmp/x.events"
    truncate -s $((names + 8192 * 128)) "$tmp/x.events"
    "$ember" trace dump --format ocaml "$f" 2>/dev/null | grep -v '^# \(file_size\|header\)' >"$tmp/want"
    "$ember" trace dump --format ocaml "$tmp/x.events" 2>/dev/null |
        grep -v '^# \(file_size\|header\)' >"$tmp/got"
    cmp "$tmp/want" "$tmp/got"
    size=$(wc -c <"$dir/$name")
    for cut in $((size / 2)) $((size * 99 / 100)) $((size - 1)); do
        head -c "$cut" "$dir/$name" >"$dir/$name-cut-$cut"
    done
done
