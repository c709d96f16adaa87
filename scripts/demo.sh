#!/bin/sh
# The first command of the README: installs what is missing, builds ember,
# records the bundled example program and draws its flame graph.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)"
mkdir -p out
cc -O1 -g -fno-omit-frame-pointer -o build/busy examples/busy.c
# Record it with ember record when this machine lets programs sample
# themselves (perf_event_open); otherwise draw the recording that ships with
# the example (what perf script printed of it).
input=examples/busy.perf.txt.gz
if build/ember record -F 999 -o build/busy.data -- build/busy >/dev/null 2>&1; then
    input=build/busy.data
fi
build/ember flamegraph --title "examples/busy.c" -o out/busy.svg "$input"
echo "Drew out/busy.svg from $input: open it in a browser (hover, click to zoom, Ctrl-F to search)."
