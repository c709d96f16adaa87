#!/bin/sh
# A generated memtrace trace of format VERSION (bench/gen_memtrace.c: its
# own encoders, written from memtrace's format description, and the counts
# it wrote): every count the generator states is in the decoder's dump, and
# ember's totals of samples, words and their live_* equal its counts.
#
# usage: memtrace_gen.sh GEN_MEMTRACE MEMTRACE_DUMP EMBER VERSION DIR [DOMAINS]
#   DOMAINS 2 (v3): packets of two domains, interleaved, clocks apart
set -eu
gen=$1 dump=$2 ember=$3 v=$4 domains=${6:-1} d=$5/gen-v$4-$domains
mkdir -p "$d"
"$gen" "$d/t.ctf" 50000 "$v" "$v" "$domains" >"$d/truth"
"$dump" "$d/t.ctf" >"$d/dump"
if grep -Fxv -f "$d/dump" "$d/truth"; then
    echo "FAIL: v$v: the lines above, from the generator, are not in the dump" >&2
    exit 1
fi
field() { awk -F': ' -v k="$1" '$1 == k { print $2 }' "$d/truth"; }
for pair in samples:total_samples words:total_words live_samples:live_samples \
    live_words:live_words; do
    ev=${pair%%:*}
    want=$(field "${pair#*:}")
    got=$("$ember" collapse --event "$ev" "$d/t.ctf" | awk '{ s += $NF } END { printf "%.0f", s }')
    if [ "$got" != "$want" ]; then
        echo "FAIL: v$v --event $ev: ember $got, the generator wrote $want" >&2
        exit 1
    fi
done
echo "ok v$v"
