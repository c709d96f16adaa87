#!/bin/sh
# The symbolizer's benchmark: addresses per second on large real binaries,
# the ELF symbol lookups by bisection against the scans they replaced, and
# whole resolutions (DWARF frames and inline chains) cold and memoized.
# Binaries: python3 (.dynsym only), libc (DWARF from its debug file when
# libc6-dbg is installed), libLLVM when present (45k symbols), and ember
# itself built with its debug info (RelWithDebInfo: LTO, DWARF).
#
# usage: bench/run_symbol.sh [BUILD_DIR]   (default: build-relwdi)
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-relwdi}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_TESTS=OFF >/dev/null
cmake --build "$B" -j"$(nproc)" >/dev/null
LIBC=$(ldd "$B/bench/symbol_bench" | awk '/libc.so.6/ {print $3}')
for bin in $(readlink -f /usr/bin/python3 "$LIBC" /usr/lib/llvm-*/lib/libLLVM-*.so.1 | sort -u) \
    "$B/ember"; do
    if [ -f "$bin" ]; then "$B/bench/symbol_bench" "$bin"; fi
done
