#!/bin/sh
# The tracing library as a user gets it: installed under a prefix
# (`cmake --install BUILD --prefix P`), found by pkg-config there (the .pc
# file is relocatable: its prefix is P wherever P is), linked into the
# example program shared and static, and the program's trace read back.
# And before installing: the build directory's ember-trace.pc describes
# the build tree (the source's headers, the build's libraries), so that
# PKG_CONFIG_PATH=BUILD works too.
#
# usage: install.sh BUILD_DIR SOURCE_DIR CC WORKDIR [CFLAGS]
set -eu
build=$1 src=$2 cc=$3 work=$4 cflags=${5:-}
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null

check() { # kind program [env...]: the program traces 50 handle spans
    kind=$1 prog=$2
    shift 2
    env "$@" EMBER_TRACE="$work/$kind.trace" "$prog" 50 2 >/dev/null
    n=$("$EMBER" trace stats "$work/$kind.trace" | awk '$1 == "handle" { print $2 }')
    if [ "$n" != 50 ]; then
        echo "FAIL: the $kind build traced $n handle spans, not 50" >&2
        exit 1
    fi
    echo "ok $kind"
}

# from the prefix: every path pkg-config gives is in it
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
prefix=$(cd "$(pkg-config --variable=prefix ember-trace)" && pwd -P)
if [ "$prefix" != "$(cd "$work/prefix" && pwd -P)" ]; then
    echo "FAIL: the installed ember-trace.pc says prefix $prefix, not $work/prefix" >&2
    exit 1
fi
"$cc" $cflags "$src/examples/traced.c" -o "$work/shared" $(pkg-config --cflags --libs ember-trace) -lpthread
"$cc" $cflags "$src/examples/traced.c" -o "$work/static" $(pkg-config --cflags ember-trace) \
    "$work/prefix/lib/libember-trace.a" -lpthread
check shared "$work/shared" LD_LIBRARY_PATH="$work/prefix/lib"
check static "$work/static"

# from the build directory, not installed
export PKG_CONFIG_PATH="$build"
"$cc" $cflags "$src/examples/traced.c" -o "$work/uninstalled" \
    $(pkg-config --cflags --libs ember-trace) -lpthread
check uninstalled "$work/uninstalled"
