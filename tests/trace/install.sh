#!/bin/sh
# The tracing library as a user gets it: installed under a prefix, found by
# pkg-config (the .pc file is relocatable), linked into the example program
# shared and static, and the program's trace read back.
#
# usage: install.sh BUILD_DIR SOURCE_DIR CC WORKDIR [CFLAGS]
set -eu
build=$1 src=$2 cc=$3 work=$4 cflags=${5:-}
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
"$cc" $cflags "$src/examples/traced.c" -o "$work/shared" $(pkg-config --cflags --libs ember-trace) -lpthread
"$cc" $cflags "$src/examples/traced.c" -o "$work/static" $(pkg-config --cflags ember-trace) \
    "$work/prefix/lib/libember-trace.a" -lpthread
for kind in shared static; do
    LD_LIBRARY_PATH="$work/prefix/lib" EMBER_TRACE="$work/$kind.trace" "$work/$kind" 50 2 >/dev/null
    n=$("$EMBER" trace stats "$work/$kind.trace" | awk '$1 == "handle" { print $2 }')
    if [ "$n" != 50 ]; then
        echo "FAIL: the $kind build traced $n handle spans, not 50" >&2
        exit 1
    fi
    echo "ok $kind"
done
