#!/bin/sh
# Seeds for the readers' fuzz targets: every file of the seed directories
# (and the content of the gzipped ones) cut short at 10%, 50% and 99% of its
# size and one byte before its end, as a crashed or interrupted producer
# leaves it. Made at test time from the corpus, so that no copy of
# third-party data is committed.
#
# usage: cut_seeds.sh OUT DIR...
set -eu
out=$1
shift
rm -rf "$out"
mkdir -p "$out"
# cut SRC NAME: writes the four cuts of SRC's bytes as OUT/NAME.BYTES
cut() {
    size=$(wc -c <"$1")
    [ "$size" -gt 1 ] || return 0
    for at in $((size / 10)) $((size / 2)) $((size * 99 / 100)) $((size - 1)); do
        head -c "$at" "$1" >"$out/$2.$at"
    done
}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
d=0
for dir in "$@"; do
    d=$((d + 1))
    [ -d "$dir" ] || continue
    n=0
    find "$dir" -type f | sort | while read -r f; do
        n=$((n + 1))
        name=$d.$n-$(basename "$f")
        cut "$f" "$name"
        case "$f" in
        *.gz) gzip -dc "$f" >"$tmp" 2>/dev/null && cut "$tmp" "${name%.gz}" ;;
        esac
    done
done
