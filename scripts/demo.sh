#!/bin/sh
# The first command of the README: installs what is missing, builds ember,
# profiles the bundled example program and draws its flame graph.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)"
mkdir -p out
cc -O1 -g -fno-omit-frame-pointer -o build/busy examples/busy.c
# Profile it with perf when perf works here; otherwise use the recording
# that ships with the example.
input=examples/busy.perf.txt.gz
if command -v perf >/dev/null 2>&1 &&
    perf record -q -F 999 -g -o build/busy.perf.data -- build/busy >/dev/null 2>&1; then
    perf script -i build/busy.perf.data > build/busy.perf.txt 2>/dev/null && input=build/busy.perf.txt
fi
build/ember flamegraph --title "examples/busy.c" -o out/busy.svg "$input"
echo "Drew out/busy.svg from $input: open it in a browser (hover, click to zoom, Ctrl-F to search)."
