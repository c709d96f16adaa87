#!/bin/sh
# Seeds for fuzz_trace: small real traces of the example program, a ring
# file (flight recorder, 4 threads of 2 packets each) and a packet log
# written by `ember trace record`, compacted (no unused site table or rings);
# and each of them cut short (0.2% short, in its last packet, in half), as
# files copied while written or on a full disk are: the reader reads them
# up to the cut.
#
# usage: trace_seeds.sh EMBER TRACED TRACE_COMPACT DIR
set -eu
ember=$1 traced=$2 compact=$3 dir=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$dir"
EMBER_TRACE="$tmp/ring.trace" EMBER_TRACE_RING=8192 EMBER_TRACE_PACKET=4096 \
    EMBER_TRACE_THREADS=4 "$traced" 200 2 >/dev/null
EMBER_TRACE_PACKET=4096 EMBER_TRACE_THREADS=4 \
    "$ember" record -o "$tmp/log.trace" --ring 8192 -- "$traced" 50 2 >/dev/null 2>&1
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
